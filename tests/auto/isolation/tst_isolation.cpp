// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Isolation (issue 38): a slow receiver slows only the producers that emit to it. A receiver's
// calls hold at most the room its funnel has left (QFunnel's capacity documentation), so its
// producers wait while those of other receivers find room, and the funnel stays within its
// capacity. The slow receivers here are parked inside a slot (a thread busy in a long task, not
// a stalled one: its delivery pass runs), so that nothing they hold makes room until the test
// opens their gate: whatever the unrelated producer gets through, it got beside them. Each
// scenario also runs with Qt::QueuedConnection (the "qt-queued" rows, the reference, whose
// queue is unbounded: if one fails, the test is wrong); every call is counted.

#include "gatedreceiver.h"
#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qscopeguard.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace {

enum Path { QtQueued, Funnel };

// Counts its calls, in its own thread.
class Counter : public QObject
{
    Q_OBJECT
public:
    std::atomic<int> seen { 0 };
    void onValue(quint64) { seen.fetch_add(1, std::memory_order_relaxed); }
};

template<typename Receiver>
bool connectVia(Path path, QFunnel *funnel, Producer *p, Receiver *r,
                void (Receiver::*slot)(quint64))
{
    if (path == QtQueued)
        return bool(QObject::connect(p, &Producer::value, r, slot, Qt::QueuedConnection));
    return bool(QtFastConnect::connect(funnel, p, &Producer::value, r, slot));
}

// A thread that emits calls values 1..n and counts the emissions that returned.
struct Emitting
{
    std::atomic<int> returned { 0 };
    std::atomic<bool> ranToEnd { false };
    std::unique_ptr<QThread> thread;
    Emitting(Producer *p, int n)
        : thread(QThread::create([this, p, n] {
              for (int i = 1; i <= n; ++i) {
                  Q_EMIT p->value(quint64(i));
                  returned.fetch_add(1, std::memory_order_relaxed);
              }
              QtFastConnect::flush(); // no-op for Qt's queued calls
              ranToEnd.store(true, std::memory_order_release);
          }))
    {
        thread->start();
    }
    ~Emitting()
    {
        thread->wait();
        // What the thread did happens before this object goes, for ThreadSanitizer too, which
        // does not see that QThread::wait() orders it (Qt is not instrumented).
        (void)ranToEnd.load(std::memory_order_acquire);
    }
};

// The receivers' threads, stopped however a test ends.
struct Threads
{
    std::vector<std::unique_ptr<QThread>> all;
    QThread *add()
    {
        all.push_back(std::make_unique<QThread>());
        all.back()->start();
        return all.back().get();
    }
    ~Threads()
    {
        for (auto &t : all) {
            t->quit();
            t->wait();
        }
    }
};

// A receiver thread that does not run its events until unblock is released (blocked in a long
// task before its event loop): a stalled receiver's thread.
class BlockedThread : public QThread
{
public:
    QSemaphore running;
    QSemaphore unblock;
    ~BlockedThread() override
    {
        quit();
        wait();
    }

protected:
    void run() override
    {
        running.release();
        unblock.acquire();
        exec();
    }
};

bool waitFor(const std::function<bool()> &done, int ms = 20000)
{
    QDeadlineTimer deadline(ms);
    while (!done() && !deadline.hasExpired())
        QThread::msleep(1);
    return done();
}

// Until e's producer has returned all n calls, or waits: none returned for 100 ms in a row. A
// producer slower than that is taken for waiting, which only makes a test of one flood after
// another start some of them together.
bool waitUntilWaiting(const Emitting &e, int n)
{
    int last = -1;
    int quiet = 0;
    return waitFor([&] {
        const int now = e.returned.load();
        quiet = now == last ? quiet + 1 : 0;
        last = now;
        QThread::msleep(10);
        return now == n || quiet >= 10;
    });
}

quint64 sumTo(quint64 n)
{
    return n * (n + 1) / 2;
}

} // namespace

class tst_Isolation : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void unrelatedProducerNotHeldBack_data();
    void unrelatedProducerNotHeldBack();
    void unrelatedProducerNotDropped_data();
    void unrelatedProducerNotDropped();
    void blockTimeoutDropsBeyondShare_data() { paths(); }
    void blockTimeoutDropsBeyondShare();
    void stalledReceiverStopsHoldingProducers_data() { paths(); }
    void stalledReceiverStopsHoldingProducers();

private:
    static void paths()
    {
        QTest::addColumn<Path>("path");
        QTest::newRow("qt-queued") << QtQueued;
        QTest::newRow("funnel") << Funnel;
    }
};

void tst_Isolation::unrelatedProducerNotHeldBack_data()
{
    QTest::addColumn<Path>("path");
    QTest::addColumn<int>("slowCount");
    QTest::addColumn<bool>("oneAfterAnother");
    QTest::newRow("qt-queued, one slow receiver") << QtQueued << 1 << false;
    QTest::newRow("funnel, one slow receiver") << Funnel << 1 << false;
    QTest::newRow("qt-queued, three slow receivers") << QtQueued << 3 << false;
    QTest::newRow("funnel, three slow receivers") << Funnel << 3 << false;
    QTest::newRow("qt-queued, four slow receivers one after another") << QtQueued << 4 << true;
    QTest::newRow("funnel, four slow receivers one after another") << Funnel << 4 << true;
}

// Receivers parked in their slot, each flooded from a thread of its own; another thread's
// 20,000 calls to another receiver all arrive before a parked one has run a second call. Before:
// the floods held the whole capacity and the unrelated producer waited for the parked receivers
// (none of its calls arrived). One after another: each flood starts once the one before waits,
// so that each later receiver finds less room left; before, the fourth took the last of it (all
// that was left, one chunk), and the unrelated producer waited forever; so, one run in a
// hundred, did three floods started together (AddressSanitizer, Qt 6.11).
void tst_Isolation::unrelatedProducerNotHeldBack()
{
    QFETCH(Path, path);
    QFETCH(int, slowCount);
    QFETCH(bool, oneAfterAnother);
    if (QfcTest::ThreadSanitized && path == QtQueued)
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr qsizetype Capacity = 4096;
    constexpr int FloodCalls = 10000;
    constexpr int Calls = 20000;
    QFunnel funnel;
    funnel.setCapacity(Capacity);
    std::vector<std::unique_ptr<Producer>> floods;
    std::vector<std::unique_ptr<GatedReceiver>> slow;
    Producer unrelated;
    Counter fast;
    Threads threads; // stopped before the receivers are destroyed
    for (int i = 0; i < slowCount; ++i) {
        floods.push_back(std::make_unique<Producer>());
        slow.push_back(std::make_unique<GatedReceiver>());
        slow.back()->moveToThread(threads.add());
        QVERIFY(connectVia(path, &funnel, floods.back().get(), slow.back().get(),
                           &GatedReceiver::onValue));
    }
    fast.moveToThread(threads.add());
    QVERIFY(connectVia(path, &funnel, &unrelated, &fast, &Counter::onValue));
    std::vector<std::unique_ptr<Emitting>> flooding;
    std::unique_ptr<Emitting> other;
    auto unpark = qScopeGuard([&] { // first, whatever fails
        for (auto &r : slow)
            r->gate.release();
    });

    for (int i = 0; i < slowCount; ++i) {
        flooding.push_back(std::make_unique<Emitting>(floods[i].get(), FloodCalls));
        if (oneAfterAnother) {
            QVERIFY(slow[i]->entered.tryAcquire(1, 20000));
            QVERIFY(waitUntilWaiting(*flooding.back(), FloodCalls));
        }
    }
    for (auto &r : slow) {
        if (!oneAfterAnother)
            QVERIFY(r->entered.tryAcquire(1, 20000));
    }
    auto admitted = [&] {
        int n = 0;
        for (auto &f : flooding)
            n += f->returned.load();
        return n;
    };
    // Qt queues every flood; the funnel's producers wait once their receivers hold their shares
    // (3/(3k+1) of the capacity each when they fill it together; one after another, each 3/4
    // of the room the ones before left).
    QVERIFY(waitFor([&] {
        return path == QtQueued ? admitted() == slowCount * FloodCalls
                                : funnel.pendingCalls() >= Capacity / 2;
    }));

    other = std::make_unique<Emitting>(&unrelated, Calls);
    QVERIFY2(waitFor([&] { return fast.seen.load() == Calls; }),
             qPrintable(QStringLiteral("%1 of %2 unrelated calls arrived beside %3 parked "
                                       "receivers (%4 of their calls admitted)")
                                .arg(fast.seen.load())
                                .arg(Calls)
                                .arg(slowCount)
                                .arg(admitted())));
    for (auto &r : slow)
        QCOMPARE(r->calls.load(), 1); // still parked in its first call
    if (path == Funnel) {
        for (auto &f : flooding)
            QVERIFY(f->returned.load() < FloodCalls); // its producer waits
        QVERIFY(funnel.highWaterMark() <= Capacity);
        QCOMPARE(funnel.overCapacityCalls(), 0u);
    }

    unpark.dismiss();
    for (auto &r : slow)
        r->gate.release();
    for (auto &r : slow) {
        QVERIFY(waitFor([&] { return r->calls.load() == FloodCalls; }));
        QCOMPARE(r->sum.load(), sumTo(FloodCalls));
    }
    QCOMPARE(fast.seen.load(), Calls);
    QCOMPARE(funnel.droppedCalls(), 0u);
    QVERIFY(waitFor([&] { return funnel.pendingCalls() == 0; }));
}

void tst_Isolation::unrelatedProducerNotDropped_data()
{
    QTest::addColumn<Path>("path");
    QTest::addColumn<QFunnel::OverflowPolicy>("policy");
    QTest::newRow("qt-queued") << QtQueued << QFunnel::OverflowPolicy::DropNewest;
    QTest::newRow("funnel, DropNewest") << Funnel << QFunnel::OverflowPolicy::DropNewest;
    QTest::newRow("funnel, DropOldest") << Funnel << QFunnel::OverflowPolicy::DropOldest;
}

// The drop policies keep the share too: a receiver parked in its slot, flooded, loses the calls
// beyond its share (dropped as the newest, or its oldest evicted), and another thread's calls to
// another receiver lose none. They come in bursts of 100, each waited for, so that only the
// flood, never a preempted receiver thread, could fill the funnel. Before: the flood took the
// whole capacity (DropOldest: twice it) and every unrelated call was dropped.
void tst_Isolation::unrelatedProducerNotDropped()
{
    QFETCH(Path, path);
    QFETCH(QFunnel::OverflowPolicy, policy);
    if (QfcTest::ThreadSanitized && path == QtQueued)
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr qsizetype Capacity = 4096;
    constexpr int FloodCalls = 10000;
    constexpr int Calls = 20000;
    constexpr int Burst = 100;
    QFunnel funnel;
    funnel.setCapacity(Capacity);
    funnel.setOverflowPolicy(policy);
    Producer flood;
    Producer unrelated;
    GatedReceiver slow;
    Counter fast;
    Threads threads; // stopped before the receivers are destroyed
    slow.moveToThread(threads.add());
    fast.moveToThread(threads.add());
    QVERIFY(connectVia(path, &funnel, &flood, &slow, &GatedReceiver::onValue));
    QVERIFY(connectVia(path, &funnel, &unrelated, &fast, &Counter::onValue));
    std::unique_ptr<Emitting> flooding;
    auto unpark = qScopeGuard([&] { slow.gate.release(); }); // first, whatever fails

    flooding = std::make_unique<Emitting>(&flood, FloodCalls);
    QVERIFY(slow.entered.tryAcquire(1, 20000));
    QVERIFY(flooding->thread->wait(60000)); // a drop policy never waits
    const quint64 floodDropped = funnel.droppedCalls();
    if (path == Funnel)
        QVERIFY2(floodDropped > 0, "the flood's calls beyond the capacity were not dropped");

    // The unrelated producer, from a thread of its own, a burst at a time.
    std::atomic<int> sent { 0 };
    std::atomic<bool> go { false };
    std::atomic<bool> quit { false };
    std::unique_ptr<QThread> other(QThread::create([&] {
        while (sent.load() < Calls && !quit.load()) {
            if (!go.exchange(false)) {
                QThread::usleep(100);
                continue;
            }
            for (int i = 0; i < Burst; ++i)
                Q_EMIT unrelated.value(quint64(sent.load() + i + 1));
            QtFastConnect::flush(); // no-op for Qt's queued calls
            sent.fetch_add(Burst);
        }
    }));
    auto stopOther = qScopeGuard([&] {
        quit.store(true);
        other->wait();
    });
    other->start();
    for (int b = 0; b < Calls / Burst; ++b) {
        go.store(true);
        const int expected = (b + 1) * Burst;
        QVERIFY(waitFor([&] {
            return sent.load() == expected
                    && quint64(fast.seen.load()) + (funnel.droppedCalls() - floodDropped)
                    >= quint64(expected);
        }));
        QVERIFY2(funnel.droppedCalls() == floodDropped,
                 qPrintable(QStringLiteral("%1 of the unrelated producer's first %2 calls "
                                           "dropped beside the flooded receiver")
                                    .arg(funnel.droppedCalls() - floodDropped)
                                    .arg(expected)));
    }
    QCOMPARE(fast.seen.load(), Calls);
    QCOMPARE(slow.calls.load(), 1); // still parked in its first call
    if (path == Funnel)
        QVERIFY(funnel.highWaterMark() <= 2 * Capacity);

    unpark.dismiss();
    slow.gate.release();
    QVERIFY(waitFor(
            [&] { return quint64(slow.calls.load()) + funnel.droppedCalls() == FloodCalls; }));
    if (path == QtQueued)
        QCOMPARE(slow.sum.load(), sumTo(FloodCalls));
    QVERIFY(waitFor([&] { return funnel.pendingCalls() == 0; }));
}

// With a block timeout, a producer whose receiver holds its share waits that long per call and
// then drops it, counted: the calls beyond the share, and no other. (Qt drops nothing.) No
// unrelated producer here: with a 10 ms timeout, its own receiver's thread preempted for longer
// on a busy machine would drop its calls too, as documented.
void tst_Isolation::blockTimeoutDropsBeyondShare()
{
    QFETCH(Path, path);
    if (QfcTest::ThreadSanitized && path == QtQueued)
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr qsizetype Capacity = 64;
    constexpr int FloodCalls = 100;
    QFunnel funnel;
    funnel.setCapacity(Capacity);
    funnel.setBlockTimeout(10);
    Producer flood;
    GatedReceiver slow;
    Threads threads; // stopped before the receiver is destroyed
    slow.moveToThread(threads.add());
    QVERIFY(connectVia(path, &funnel, &flood, &slow, &GatedReceiver::onValue));
    std::unique_ptr<Emitting> flooding;
    auto unpark = qScopeGuard([&] { slow.gate.release(); }); // first, whatever fails

    flooding = std::make_unique<Emitting>(&flood, FloodCalls);
    QVERIFY(slow.entered.tryAcquire(1, 20000));
    QVERIFY(flooding->thread->wait(60000));
    QCOMPARE(flooding->returned.load(), FloodCalls);

    unpark.dismiss();
    slow.gate.release();
    const quint64 dropped = funnel.droppedCalls();
    QVERIFY(waitFor([&] { return quint64(slow.calls.load()) + dropped == FloodCalls; }));
    if (path == Funnel) {
        // The share: 3/4 of the capacity, and the credit the producer held reserved (a chunk of
        // one call at this capacity).
        QVERIFY2(dropped >= quint64(FloodCalls - 3 * Capacity / 4 - 1),
                 qPrintable(QString::number(dropped)));
        QVERIFY(funnel.highWaterMark() <= Capacity);
    } else {
        QCOMPARE(dropped, 0u);
    }
    QVERIFY(waitFor([&] { return funnel.pendingCalls() == 0; }));
}

// A receiver whose thread does not run its events at all (blocked before its event loop) is
// stalled, not slow: its calls stop holding room, as before, and its producer stops waiting for
// it, so that a thread that this receiver's thread may itself wait for is not held forever.
void tst_Isolation::stalledReceiverStopsHoldingProducers()
{
    QFETCH(Path, path);
    if (QfcTest::ThreadSanitized && path == QtQueued)
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr qsizetype Capacity = 256;
    constexpr int FloodCalls = 2000;
    QFunnel funnel;
    funnel.setCapacity(Capacity);
    Producer flood;
    GatedReceiver receiver;
    receiver.gate.release(); // its first call does not park
    BlockedThread blocked; // stopped before the receiver is destroyed
    receiver.moveToThread(&blocked);
    blocked.start();
    QVERIFY(blocked.running.tryAcquire(1, 20000));
    QVERIFY(connectVia(path, &funnel, &flood, &receiver, &GatedReceiver::onValue));
    std::unique_ptr<Emitting> flooding;
    auto stop = qScopeGuard([&] { blocked.unblock.release(); }); // first, whatever fails

    flooding = std::make_unique<Emitting>(&flood, FloodCalls);
    QVERIFY2(flooding->thread->wait(60000), "the producer still waits for a stalled receiver");
    QCOMPARE(flooding->returned.load(), FloodCalls);
    stop.dismiss();
    blocked.unblock.release();
    QVERIFY(waitFor([&] { return receiver.calls.load() == FloodCalls; }));
    QCOMPARE(receiver.sum.load(), sumTo(FloodCalls));
    QCOMPARE(funnel.droppedCalls(), 0u);
}

QTEST_MAIN(tst_Isolation)
#include "tst_isolation.moc"
