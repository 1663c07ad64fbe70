// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Time from emission to the start of the slot in another thread, for a message carrying a
// std::vector<uint8_t> payload of 1 KiB to 64 MiB, and latency of isolated emissions of a
// steady_clock time point. Qt::QueuedConnection is measured in the same run as the reference.
//
//   tst_bench_payload                 everything (a few seconds); tables printed at the end
//   tst_bench_payload -csv            one line per data tag, results in ns (WalltimeNanoseconds)
//
// Data tags are stable, for scripts: payload(): <path>/<size> with path one of qt-queued,
// funnel-const-ref, funnel-move (MoveArguments connection, by-value signal emitted as an
// rvalue), invoke (QtFastConnect::invoke with std::move) and size 1KiB ... 64MiB;
// latencyMedian() and latencyP99(): qt-queued, funnel, invoke.

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;

struct Msg
{
    std::vector<uint8_t> payload;
};

class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void byRef(const Msg &m);
    void byValue(Msg m);
    void stamp(Clock::time_point sent);
};

// Lives in the receiving thread; records when the slot started, then wakes the test's thread.
class Receiver : public QObject
{
    Q_OBJECT
public:
    std::atomic<qint64> arrivedNs { 0 };
    std::atomic<qint64> checksum { 0 };
    QSemaphore arrived;
    std::vector<qint64> delaysNs; // receiver's thread only, read once the emissions are done

    static qint64 now()
    {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                .count();
    }
    void onRef(const Msg &m)
    {
        arrivedNs = now();
        checksum += qint64(m.payload.size());
        arrived.release();
    }
    void onValue(Msg m)
    {
        arrivedNs = now();
        checksum += qint64(m.payload.size());
        arrived.release();
        // m (and its payload) is freed here, after the time was taken
    }
    void onStamp(Clock::time_point sent)
    {
        delaysNs.push_back(
                std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - sent).count());
        arrived.release();
    }
};

enum class Path { QtQueued, FunnelConstRef, FunnelMove, Invoke };
Q_DECLARE_METATYPE(Path)

static const char *pathTag(Path p)
{
    switch (p) {
    case Path::QtQueued:
        return "qt-queued";
    case Path::FunnelConstRef:
        return "funnel-const-ref";
    case Path::FunnelMove:
        return "funnel-move";
    case Path::Invoke:
        return "invoke";
    }
    return "?";
}

static QByteArray sizeTag(qint64 bytes)
{
    return bytes >= (1 << 20) ? QByteArray::number(bytes >> 20) + "MiB"
                              : QByteArray::number(bytes >> 10) + "KiB";
}

class tst_BenchPayload : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void payload_data();
    void payload();
    void latencyMedian_data();
    void latencyMedian();
    void latencyP99_data();
    void latencyP99();
    void cleanupTestCase();

private:
    struct Latency
    {
        qint64 median;
        qint64 p99;
    };
    Latency latency(Path path);

    QThread m_thread;
    Receiver *m_receiver = nullptr;
    std::map<QByteArray, qint64> m_payloadNs; // tag → median ns per message
    std::map<Path, Latency> m_latency;
};

void tst_BenchPayload::initTestCase()
{
    m_thread.start();
    m_receiver = new Receiver;
    m_receiver->moveToThread(&m_thread);
}

void tst_BenchPayload::cleanupTestCase()
{
    std::printf("\nEmission to slot, median ns per message (ratio to qt-queued):\n%10s", "size");
    const Path paths[] = { Path::QtQueued, Path::FunnelConstRef, Path::FunnelMove, Path::Invoke };
    for (Path p : paths)
        std::printf(" %24s", pathTag(p));
    std::printf("\n");
    for (qint64 size = 1024; size <= (qint64(64) << 20); size *= 4) {
        std::printf("%10s", sizeTag(size).constData());
        const qint64 qt = m_payloadNs[QByteArray("qt-queued/") + sizeTag(size)];
        for (Path p : paths) {
            const qint64 ns = m_payloadNs[QByteArray(pathTag(p)) + '/' + sizeTag(size)];
            std::printf(" %14lld (%6.3fx)", static_cast<long long>(ns), qt ? double(ns) / qt : 0.0);
        }
        std::printf("\n");
    }
    if (!m_latency.empty()) {
        std::printf("\nLatency of isolated emissions, ns (ratio to qt-queued):\n");
        const Latency qt = m_latency[Path::QtQueued];
        for (const auto &[path, l] : m_latency) {
            std::printf("%18s  median %8lld (%5.3fx)  p99 %8lld (%5.3fx)\n", pathTag(path),
                        static_cast<long long>(l.median),
                        qt.median ? double(l.median) / qt.median : 0.0,
                        static_cast<long long>(l.p99), qt.p99 ? double(l.p99) / qt.p99 : 0.0);
        }
    }
    std::fflush(stdout);
    QMetaObject::invokeMethod(m_receiver, &QObject::deleteLater);
    m_thread.quit();
    m_thread.wait();
}

void tst_BenchPayload::payload_data()
{
    QTest::addColumn<Path>("path");
    QTest::addColumn<qint64>("size");
    for (Path p : { Path::QtQueued, Path::FunnelConstRef, Path::FunnelMove, Path::Invoke }) {
        for (qint64 size = 1024; size <= (qint64(64) << 20); size *= 4)
            QTest::newRow(QByteArray(pathTag(p) + QByteArray("/") + sizeTag(size)).constData())
                    << p << size;
    }
}

// Median over several messages, each sent alone (the receiver is idle when it is emitted), so
// the figure is the time one message of that size needs, not a throughput. Building the
// message is not timed.
void tst_BenchPayload::payload()
{
    QFETCH(Path, path);
    QFETCH(qint64, size);
    Sender sender;
    switch (path) {
    case Path::QtQueued:
        QVERIFY(QObject::connect(&sender, &Sender::byRef, m_receiver, &Receiver::onRef,
                                 Qt::QueuedConnection));
        break;
    case Path::FunnelConstRef:
        QVERIFY(QtFastConnect::connect(&sender, &Sender::byRef, m_receiver, &Receiver::onRef));
        break;
    case Path::FunnelMove:
        QVERIFY(QtFastConnect::connect(&sender, &Sender::byValue, m_receiver, &Receiver::onValue,
                                       QtFastConnect::MoveArguments));
        break;
    case Path::Invoke:
        break;
    }
    const int messages = size <= (qint64(1) << 20) ? 201 : 21;
    std::vector<qint64> ns;
    ns.reserve(messages);
    // Sends m the way the row says and returns when the slot has run to its end.
    auto send = [&](Msg &&m) -> qint64 {
        const qint64 start = Receiver::now();
        switch (path) {
        case Path::QtQueued:
        case Path::FunnelConstRef:
            Q_EMIT sender.byRef(m);
            break;
        case Path::FunnelMove:
            Q_EMIT sender.byValue(std::move(m));
            break;
        case Path::Invoke:
            if (!QtFastConnect::invoke(m_receiver, &Receiver::onValue, std::move(m)))
                return -1;
            break;
        }
        if (!m_receiver->arrived.tryAcquire(1, 60000))
            return -1;
        const qint64 elapsed = m_receiver->arrivedNs - start;
        // Let the receiver's thread finish the call (and free what it holds) first, so that no
        // message finds it busy.
        QMetaObject::invokeMethod(
                m_receiver, [] {}, Qt::BlockingQueuedConnection);
        return elapsed;
    };
    for (int i = 0; i < messages; ++i) {
        Msg msg;
        msg.payload.assign(size_t(size), uint8_t(i));
        // Building a large message evicts the path's code and data from the CPU caches; an
        // empty message first brings them back, as in a program that sends steadily, so that
        // what is timed is what the payload itself costs.
        QVERIFY(send(Msg()) >= 0);
        const qint64 elapsed = send(std::move(msg));
        QVERIFY(elapsed >= 0);
        ns.push_back(elapsed);
    }
    std::nth_element(ns.begin(), ns.begin() + messages / 2, ns.end());
    const qint64 median = ns[messages / 2];
    m_payloadNs[QTest::currentDataTag()] = median;
    QTest::setBenchmarkResult(qreal(median), QTest::WalltimeNanoseconds);
}

tst_BenchPayload::Latency tst_BenchPayload::latency(Path path)
{
    auto it = m_latency.find(path);
    if (it != m_latency.end())
        return it->second;

    // Spaced emissions: each one finds the receiver idle, as isolated events in an application.
    constexpr int Emissions = 1000;
    Sender sender;
    if (path == Path::QtQueued)
        QObject::connect(&sender, &Sender::stamp, m_receiver, &Receiver::onStamp,
                         Qt::QueuedConnection);
    else if (path == Path::FunnelConstRef)
        QtFastConnect::connect(&sender, &Sender::stamp, m_receiver, &Receiver::onStamp);
    QMetaObject::invokeMethod(
            m_receiver, [r = m_receiver] { r->delaysNs.clear(); }, Qt::BlockingQueuedConnection);
    for (int i = 0; i < Emissions; ++i) {
        if (path == Path::Invoke)
            QtFastConnect::invoke(m_receiver, &Receiver::onStamp, Clock::now());
        else
            Q_EMIT sender.stamp(Clock::now());
        m_receiver->arrived.acquire();
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::vector<qint64> d;
    QMetaObject::invokeMethod(
            m_receiver, [&d, r = m_receiver] { d = std::move(r->delaysNs); },
            Qt::BlockingQueuedConnection);
    std::sort(d.begin(), d.end());
    const Latency l { d[d.size() / 2], d[(d.size() * 99) / 100] };
    m_latency[path] = l;
    return l;
}

void tst_BenchPayload::latencyMedian_data()
{
    QTest::addColumn<Path>("path");
    QTest::newRow("qt-queued") << Path::QtQueued;
    QTest::newRow("funnel") << Path::FunnelConstRef;
    QTest::newRow("invoke") << Path::Invoke;
}

void tst_BenchPayload::latencyMedian()
{
    QFETCH(Path, path);
    QTest::setBenchmarkResult(qreal(latency(path).median), QTest::WalltimeNanoseconds);
}

void tst_BenchPayload::latencyP99_data()
{
    latencyMedian_data();
}

void tst_BenchPayload::latencyP99()
{
    QFETCH(Path, path);
    QTest::setBenchmarkResult(qreal(latency(path).p99), QTest::WalltimeNanoseconds);
}

QTEST_MAIN(tst_BenchPayload)
#include "tst_bench_payload.moc"
