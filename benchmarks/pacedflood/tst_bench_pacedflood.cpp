// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Experiment 6 of the benchmark report: timer lateness under a *paced* flood. The main thread
// runs a 10 ms QTimer (standing in for painting and input) while 8 producer threads flood a slot
// in the same thread with quint64 calls; the timer's lateness (interval between two timeouts
// minus 10 ms) shows whether the event loop still gets round to anything else.
// Qt::QueuedConnection against FunnelConnection.
//
// Paced: each producer keeps at most MaxInFlightPerProducer calls undelivered (it yields while
// it is that far ahead), the way a careful application throttles its workers. That removes Qt's
// failure mode (its queue growing without bound), so the rows compare what each connection
// delivers at equal lateness. The unpaced flood, where Qt's queue runs away and the window
// freezes, is experiment 7 (benchmarks/responsiveness).
//
//   tst_bench_pacedflood                       both rows; timer lateness median/p99/worst in ms
//   QFC_BENCH_QUICK=1                a 1 s flood per row instead of 3 s
//   QFC_BENCH_CSV=<file>             also appends the results to <file> as CSV

#include "benchcsv.h"
#include "percentiles.h"
#include "valuesender.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <thread>

static constexpr int Producers = 8;
static constexpr int TimerIntervalMs = 10;
static constexpr quint64 MaxInFlightPerProducer = 8192;
static constexpr int ProducerShift = 56;
static constexpr int DrainTimeoutMs = 60000;

// The main thread's receiver: tallies every call and counts it for its producer.
class Receiver : public QObject
{
    Q_OBJECT
public:
    void onValue(quint64 v)
    {
        sum += v;
        // Only the main thread writes; producers read it to pace themselves.
        auto &n = received[size_t(v >> ProducerShift)];
        n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    quint64 sum = 0;
    std::array<std::atomic<quint64>, Producers> received {};
};

class tst_BenchPacedFlood : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void pacedTimerLateness_data();
    void pacedTimerLateness();
};

void tst_BenchPacedFlood::pacedTimerLateness_data()
{
    QTest::addColumn<bool>("funnel");
    QTest::newRow("qt-queued") << false;
    QTest::newRow("funnel") << true;
}

void tst_BenchPacedFlood::pacedTimerLateness()
{
    QFETCH(bool, funnel);
    const int floodMs = qEnvironmentVariableIntValue("QFC_BENCH_QUICK") ? 1000 : 3000;

    Receiver receiver;
    std::array<Sender, Producers> senders;
    for (Sender &s : senders) {
        if (funnel) {
            QVERIFY(QtFastConnect::connect(&s, &Sender::value, &receiver, &Receiver::onValue));
        } else {
            QVERIFY(QObject::connect(&s, &Sender::value, &receiver, &Receiver::onValue,
                                     Qt::QueuedConnection));
        }
    }

    std::atomic<bool> stop { false };
    std::atomic<int> finished { 0 };
    std::array<quint64, Producers> emitted {}; // each written by its producer only
    std::array<quint64, Producers> emittedSum {};
    std::vector<std::unique_ptr<QThread>> threads;
    for (int p = 0; p < Producers; ++p) {
        threads.emplace_back(QThread::create([&, p] {
            const quint64 tag = quint64(p) << ProducerShift;
            quint64 n = 0;
            quint64 sum = 0;
            while (!stop.load(std::memory_order_relaxed)) {
                if (n - receiver.received[size_t(p)].load(std::memory_order_acquire)
                    >= MaxInFlightPerProducer) {
                    std::this_thread::yield();
                    continue;
                }
                const quint64 v = tag | n++;
                sum += v;
                Q_EMIT senders[size_t(p)].value(v);
            }
            emitted[size_t(p)] = n;
            emittedSum[size_t(p)] = sum;
            finished.fetch_add(1, std::memory_order_release); // publishes emitted[p]
        }));
    }

    QEventLoop loop;
    std::vector<double> latenessMs;
    QElapsedTimer sinceLastTick;
    QTimer ticker; // the GUI stand-in
    ticker.setTimerType(Qt::PreciseTimer);
    ticker.setInterval(TimerIntervalMs);
    QObject::connect(&ticker, &QTimer::timeout, [&] {
        if (stop.load(std::memory_order_relaxed))
            return;
        const double intervalMs = double(sinceLastTick.nsecsElapsed()) / 1e6;
        sinceLastTick.start();
        latenessMs.push_back(std::max(0.0, intervalMs - TimerIntervalMs));
    });
    QElapsedTimer floodClock;
    quint64 deliveredInFlood = 0;
    QTimer::singleShot(floodMs, [&] {
        stop.store(true, std::memory_order_relaxed);
        for (const auto &r : receiver.received)
            deliveredInFlood += r.load(std::memory_order_relaxed);
    });
    // After the flood: quit once every producer finished and every call arrived.
    QTimer drain;
    drain.setInterval(1);
    QObject::connect(&drain, &QTimer::timeout, [&] {
        if (finished.load(std::memory_order_acquire) != Producers)
            return;
        for (int p = 0; p < Producers; ++p) {
            if (receiver.received[size_t(p)].load(std::memory_order_relaxed) != emitted[size_t(p)])
                return;
        }
        loop.quit();
    });
    QTimer watchdog;
    watchdog.setSingleShot(true);
    QObject::connect(&watchdog, &QTimer::timeout, &loop, &QEventLoop::quit);

    floodClock.start();
    sinceLastTick.start();
    ticker.start();
    drain.start();
    watchdog.start(floodMs + DrainTimeoutMs);
    for (auto &t : threads)
        t->start();
    loop.exec();
    const bool drained = watchdog.isActive();
    stop.store(true, std::memory_order_relaxed);
    for (auto &t : threads)
        t->wait();
    QVERIFY2(drained, "calls were still missing a minute after the flood");

    quint64 total = 0;
    quint64 sum = 0;
    for (int p = 0; p < Producers; ++p) {
        QCOMPARE(receiver.received[size_t(p)].load(), emitted[size_t(p)]);
        total += emitted[size_t(p)];
        sum += emittedSum[size_t(p)];
    }
    QCOMPARE(receiver.sum, sum);
    QVERIFY2(latenessMs.size() > 2, "the timer hardly fired during the flood");

    const Percentiles l = Percentiles::of(latenessMs);
    const double callsPerSecond = double(deliveredInFlood) * 1e3 / floodMs;
    const char *series = funnel ? "funnel" : "qt-queued";
    qInfo("%s: %d producers, %d ms paced flood, %.3f M calls/s delivered during it (%llu in all); "
          "%zu timer ticks (%d expected), lateness median %.2f ms, p99 %.2f ms, worst %.2f ms",
          series, Producers, floodMs, callsPerSecond / 1e6, static_cast<unsigned long long>(total),
          latenessMs.size(), floodMs / TimerIntervalMs, l.median, l.p99, l.max);
    BenchCsv::write("paced-flood", series, Producers, 8, "median_ms", l.median);
    BenchCsv::write("paced-flood", series, Producers, 8, "p99_ms", l.p99);
    BenchCsv::write("paced-flood", series, Producers, 8, "max_ms", l.max);
    BenchCsv::write("paced-flood", series, Producers, 8, "ticks", double(latenessMs.size()));
    BenchCsv::write("paced-flood", series, Producers, 8, "calls_per_s", callsPerSecond);
}

QTEST_GUILESS_MAIN(tst_BenchPacedFlood)

#include "tst_bench_pacedflood.moc"
