// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Stress and soak: many producers, receivers in two threads that are destroyed, re-created and
// moved, connections cut and re-made, all while traffic flows; then every emission must be
// accounted for, by the funnel's statistics and by the test's own counters.

#include "eventloopthread.h"
#include "movableobject.h"
#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qbytearray.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qrandom.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#if defined(Q_OS_WIN)
#include <qt_windows.h>
#include <psapi.h>
#else
#include <sys/resource.h>
#endif

#include <array>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace {

constexpr int Producers = 32;
constexpr int ChurnSlots = 4;

class Producer : public QObject
{
    Q_OBJECT
public:
    int id = 0;
Q_SIGNALS:
    void value(int producer, quint64 sequence);
    void payload(const QByteArray &data);
};

std::atomic<quint64> g_slotCalls { 0 }; // every slot run, whatever the receiver

// Permanent receiver: gets every emission of every producer, and checks each producer's order.
class OrderedReceiver : public QObject
{
    Q_OBJECT
public:
    std::array<std::atomic<quint64>, Producers> next {};
    std::atomic<quint64> received { 0 };
    std::atomic<quint64> outOfOrder { 0 };
    void onValue(int producer, quint64 sequence)
    {
        ++g_slotCalls;
        if (sequence != next[producer].load(std::memory_order_relaxed))
            ++outOfOrder;
        next[producer].store(sequence + 1, std::memory_order_relaxed);
        ++received;
    }
};

// Coalescing receiver: keeps the latest sequence number of each producer.
class LatestReceiver : public QObject
{
    Q_OBJECT
public:
    std::array<std::atomic<quint64>, Producers> latest {};
    std::atomic<quint64> regressions { 0 };
    void onValue(int producer, quint64 sequence)
    {
        ++g_slotCalls;
        if (sequence < latest[producer].load(std::memory_order_relaxed))
            ++regressions;
        latest[producer].store(sequence, std::memory_order_relaxed);
    }
};

// Churned receiver: only counts.
class ChurnReceiver : public MovableObject
{
    Q_OBJECT
public:
    void onValue(int, quint64) { ++g_slotCalls; }
};

quint64 envNumber(const char *name, quint64 fallback)
{
    bool ok = false;
    const quint64 v = qEnvironmentVariable(name).toULongLong(&ok);
    return ok && v > 0 ? v : fallback;
}

long peakRssKiB()
{
#if defined(Q_OS_WIN)
    PROCESS_MEMORY_COUNTERS c {};
    if (!GetProcessMemoryInfo(GetCurrentProcess(), &c, sizeof c))
        return 0;
    return long(c.PeakWorkingSetSize / 1024);
#else
    rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss; // KiB on Linux, bytes on macOS
#endif
}

} // namespace

class tst_Soak : public QObject
{
    Q_OBJECT
public:
    tst_Soak()
    {
        // The long mode outlasts QtTest's default watchdog (300 s per test function).
        const quint64 soakSeconds = envNumber("QFC_SOAK_SECONDS", 0);
        if (soakSeconds && !qEnvironmentVariableIsSet("QTEST_FUNCTION_TIMEOUT"))
            qputenv("QTEST_FUNCTION_TIMEOUT", QByteArray::number((soakSeconds + 300) * 1000));
    }

private Q_SLOTS:
    // First: the peak RSS it checks is the process's peak so far.
    void slowReceiverPeakRssBoundedByCapacity();
    void churnWhileFlooding();
};

void tst_Soak::slowReceiverPeakRssBoundedByCapacity()
{
#ifdef QFC_SANITIZED
    QSKIP("AddressSanitizer's quarantine and shadow memory make RSS meaningless");
#endif
    // 4 producers send 40,000 payloads of 8 KiB (320 MiB in all) to a receiver that sleeps
    // between calls. Unbounded (Qt::QueuedConnection), nearly all of it would be resident at
    // once; a funnel of capacity 1,024 holds at most 8 MiB of payloads.
    constexpr int Capacity = 1024;
    constexpr int PayloadBytes = 8192;
    constexpr int PerProducer = 10000;
    const long before = peakRssKiB();

    QFunnel funnel;
    funnel.setCapacity(Capacity);
    EventLoopThread thread;
    thread.start();
    QObject receiver;
    receiver.moveToThread(&thread);
    std::atomic<quint64> bytes { 0 };
    std::atomic<int> calls { 0 };
    std::vector<std::unique_ptr<Producer>> producers;
    std::vector<std::thread> threads;
    for (int p = 0; p < 4; ++p) {
        producers.push_back(std::make_unique<Producer>());
        QVERIFY(QtFastConnect::connect(&funnel, producers.back().get(), &Producer::payload,
                                       &receiver, [&](const QByteArray &data) {
                                           bytes += data.size();
                                           if (++calls % 16 == 0)
                                               QThread::usleep(200);
                                       }));
        Producer *emitter = producers.back().get();
        threads.emplace_back([emitter] {
            for (int i = 0; i < PerProducer; ++i) {
                // A fresh, fully written allocation each time: resident until destroyed.
                Q_EMIT emitter->payload(QByteArray(PayloadBytes, char('a' + i % 26)));
            }
        });
    }
    for (auto &t : threads)
        t.join();
    QTRY_COMPARE_WITH_TIMEOUT(calls.load(), 4 * PerProducer, 120000);
    QCOMPARE(bytes.load(), quint64(4) * PerProducer * PayloadBytes);
    const QFunnel::Statistics s = funnel.statistics();
    QVERIFY(s.highWaterMark <= Capacity);

    const long grownKiB = peakRssKiB() - before;
    qInfo("peak RSS grew by %ld KiB (payloads pending at most %d KiB; unbounded: %d KiB)", grownKiB,
          Capacity * PayloadBytes / 1024, 4 * PerProducer * PayloadBytes / 1024);
    // Generous: capacity's worth of payloads plus allocator and thread overheads, far below
    // the 320 MiB an unbounded queue would accumulate.
    QVERIFY2(grownKiB < 64 * 1024, qPrintable(QString::number(grownKiB)));
    thread.quit();
    thread.wait();
}

void tst_Soak::churnWhileFlooding()
{
    const quint64 soakSeconds = envNumber("QFC_SOAK_SECONDS", 0);
#ifdef QFC_SANITIZED
    const quint64 perProducer = envNumber("QFC_SOAK_EMISSIONS", 5000);
#else
    const quint64 perProducer = envNumber("QFC_SOAK_EMISSIONS", 100000);
#endif

    g_slotCalls = 0;
    QFunnel funnel;
    funnel.setCapacity(8192); // small enough that backpressure is part of the test
    EventLoopThread threadA, threadB;
    threadA.start();
    threadB.start();
    QThread *receiverThreads[2] = { &threadA, &threadB };

    // Receivers live in their threads and are destroyed there (deleteLaterInItsThread()).
    auto *orderedReceiver = new OrderedReceiver;
    OrderedReceiver &ordered = *orderedReceiver;
    ordered.moveToThread(&threadA);
    auto *latestReceiver = new LatestReceiver;
    LatestReceiver &latest = *latestReceiver;
    latest.moveToThread(&threadB);

    std::vector<std::unique_ptr<Producer>> producers;
    for (int p = 0; p < Producers; ++p) {
        producers.push_back(std::make_unique<Producer>());
        producers.back()->id = p;
        QVERIFY(QtFastConnect::connect(&funnel, producers.back().get(), &Producer::value, &ordered,
                                       &OrderedReceiver::onValue));
        QVERIFY(QtFastConnect::connect(&funnel, producers.back().get(), &Producer::value, &latest,
                                       &LatestReceiver::onValue,
                                       QtFastConnect::FunnelConnection
                                               | QtFastConnect::CoalesceCalls));
    }

    // Churned receivers: slot i listens to the producers p with p % ChurnSlots == i.
    struct Slot
    {
        ChurnReceiver *receiver = nullptr;
        int thread = 0;
        std::vector<QMetaObject::Connection> connections;
    };
    std::array<Slot, ChurnSlots> slots;
    auto connectSlot = [&](int i) {
        for (int p = i; p < Producers; p += ChurnSlots) {
            slots[i].connections.push_back(
                    QtFastConnect::connect(&funnel, producers[p].get(), &Producer::value,
                                           slots[i].receiver, &ChurnReceiver::onValue));
        }
    };
    auto disconnectSlot = [&](int i) {
        for (const QMetaObject::Connection &c : slots[i].connections)
            QObject::disconnect(c);
        slots[i].connections.clear();
    };
    auto createSlot = [&](int i, int thread) {
        slots[i].receiver = new ChurnReceiver;
        slots[i].thread = thread;
        slots[i].receiver->moveToThread(receiverThreads[thread]);
        connectSlot(i);
    };
    for (int i = 0; i < ChurnSlots; ++i)
        createSlot(i, i % 2);

    // std::thread: its join is visible to ThreadSanitizer (QThread::wait() is not).
    std::atomic<bool> stop { false };
    std::atomic<int> finished { 0 };
    std::array<quint64, Producers> emitted {};
    std::vector<std::thread> threads;
    for (int p = 0; p < Producers; ++p) {
        Producer *emitter = producers[p].get();
        quint64 *count = &emitted[p];
        threads.emplace_back([=, &stop, &finished] {
            quint64 i = 0;
            for (; soakSeconds ? !stop.load(std::memory_order_relaxed) : i < perProducer; ++i)
                Q_EMIT emitter->value(emitter->id, i);
            *count = i;
            ++finished;
        });
    }

    // Churn from this thread while the producers run.
    QElapsedTimer clock;
    clock.start();
    QRandomGenerator rng(20260521);
    quint64 churns = 0, recreated = 0, moved = 0, reconnected = 0;
    auto producersRunning = [&] { return finished.load() < Producers; };
    while (soakSeconds ? quint64(clock.elapsed()) < soakSeconds * 1000 : producersRunning()) {
        const int i = rng.bounded(ChurnSlots);
        switch (rng.bounded(3)) {
        case 0: // destroy the receiver in its thread, re-create it in the other one
            disconnectSlot(i);
            deleteLaterInItsThread(slots[i].receiver);
            createSlot(i, 1 - slots[i].thread);
            ++recreated;
            break;
        case 1: { // move the receiver to the other thread, its calls in flight
            ChurnReceiver *r = slots[i].receiver;
            QThread *to = receiverThreads[1 - slots[i].thread];
            r->moveFromItsThread(to);
            slots[i].thread = 1 - slots[i].thread;
            ++moved;
            break;
        }
        default: // cut the connections and make them again
            disconnectSlot(i);
            connectSlot(i);
            ++reconnected;
            break;
        }
        ++churns;
        QThread::msleep(1);
    }
    stop = true;
    for (auto &t : threads)
        t.join();

    quint64 totalEmitted = 0;
    for (int p = 0; p < Producers; ++p) {
        totalEmitted += emitted[p];
        if (!soakSeconds)
            QCOMPARE(emitted[p], perProducer);
    }

    // Everything emitted is settled: run, dropped, discarded or coalesced.
    QTRY_COMPARE_WITH_TIMEOUT(funnel.pendingCalls(), 0, 120000);
    const QFunnel::Statistics s = funnel.statistics();
    qInfo("%llu s, %llu emissions by %d producers, %llu churns (%llu re-created, %llu moved, "
          "%llu re-connected); funnel: emitted %llu delivered %llu dropped %llu discarded %llu "
          "coalesced %llu, high-water %lld, %llu relay rounds, mean batch %.1f",
          quint64(clock.elapsed() / 1000), totalEmitted, Producers, churns, recreated, moved,
          reconnected, s.emitted, s.delivered, s.dropped, s.discarded, s.coalesced,
          static_cast<long long>(s.highWaterMark), s.relayRounds, s.meanBatchSize);

    // The funnel's accounting, exact.
    QCOMPARE(s.emitted, s.delivered + s.dropped + s.discarded + s.coalesced);
    QCOMPARE(s.dropped, 0u); // Block policy, funnel alive: nothing may be dropped
    QVERIFY(s.highWaterMark <= funnel.capacity());
    // The test's own count of slot runs agrees with the funnel's.
    QCOMPARE(g_slotCalls.load(), s.delivered);
    // The permanent receiver got each emission exactly once, in each producer's order.
    QCOMPARE(ordered.received.load(), totalEmitted);
    QCOMPARE(ordered.outOfOrder.load(), 0u);
    for (int p = 0; p < Producers; ++p)
        QCOMPARE(ordered.next[p].load(), emitted[p]);
    // The coalescing receiver never went back in time and saw each producer's last emission.
    QCOMPARE(latest.regressions.load(), 0u);
    for (int p = 0; p < Producers; ++p)
        QCOMPARE(latest.latest[p].load(), emitted[p] - 1);
    // Emissions are at least the two permanent connections' share.
    QVERIFY(s.emitted >= 2 * totalEmitted);

    for (int i = 0; i < ChurnSlots; ++i) {
        disconnectSlot(i);
        deleteLaterInItsThread(slots[i].receiver);
    }
    deleteLaterInItsThread(orderedReceiver);
    deleteLaterInItsThread(latestReceiver);
    threadA.quit();
    threadB.quit();
    threadA.wait();
    threadB.wait();
}

QTEST_MAIN(tst_Soak)
#include "tst_soak.moc"
