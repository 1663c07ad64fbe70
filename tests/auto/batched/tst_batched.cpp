// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Batched connections (QtFastConnect::connectBatched()): the slot runs once for a run of pending
// calls, with their arguments moved into one list. Every scenario counts each call: emitted ==
// delivered + dropped + discarded, a batch of n counting n delivered; the values a batched slot
// sees, concatenated, are the ones a Qt::QueuedConnection slot sees one by one.

#include "countedvalue.h"
#include "eventloopthread.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qregularexpression.h>
#include <QtCore/qset.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <tuple>

// Larger than the pool's largest chunk: its calls come from operator new, not from the pool.
struct BigValue
{
    quint64 value = 0;
    QString text; // not trivially destructible either
    char padding[400] = {};
};

class Source : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(quint64 v);
    void big(const BigValue &v);
    void pair(int key, const QString &text);
    void counted(CountedValue v);
};

class Sink : public QObject
{
    Q_OBJECT
public:
    QList<quint64> values; // concatenated batches, or per-call values
    QList<qsizetype> batchSizes;
    QList<std::tuple<int, QString>> pairs;
    QList<QObject *> senders; // sender() in each call
    QList<Qt::HANDLE> threads; // the thread of each call
    bool deleteSelfInSlot = false;

public Q_SLOTS:
    void onValues(QList<quint64> batch)
    {
        batchSizes.append(batch.size());
        values.append(batch);
        senders.append(sender());
        threads.append(QThread::currentThreadId());
        if (deleteSelfInSlot)
            delete this;
    }
    void onValue(quint64 v) { values.append(v); }
    void onPairs(const QList<std::tuple<int, QString>> &batch)
    {
        batchSizes.append(batch.size());
        pairs.append(batch);
    }

public:
    // Not a slot: moc cannot call a parameter of rvalue reference type; the funnel can.
    void onCounted(QList<CountedValue> &&batch)
    {
        batchSizes.append(batch.size());
        for (const CountedValue &v : batch)
            values.append(v.value);
    }
};

static bool accountedFor(const QFunnel::Statistics &s)
{
    return s.pending == 0 && s.emitted == s.delivered + s.dropped + s.discarded + s.coalesced;
}

// Emits first..last from a thread of its own; returns once every emission came back from emit.
// The thread flushes funnel (the global one if nullptr) before it ends, as a worker should.
static void emitFromThread(Source *source, quint64 last, QFunnel *funnel = nullptr)
{
    std::thread t([=] {
        for (quint64 i = 1; i <= last; ++i)
            Q_EMIT source->value(i);
        if (funnel)
            funnel->flush();
        else
            QtFastConnect::flush();
    });
    t.join();
}

static QList<quint64> oneTo(quint64 n)
{
    QList<quint64> v;
    for (quint64 i = 1; i <= n; ++i)
        v.append(i);
    return v;
}

class tst_Batched : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void deliversEveryCallInOrderLikeQtQueued();
    void batchesAreCapped();
    void severalArgumentsMakeTuples();
    void argumentsAreMovedNeverCopied();
    void callsOutsideThePool();
    void functorWithContext();
    void severalEmittingThreadsKeepTheirOrder();
    void receiverDeletedWithBatchesPending();
    void slotDeletesItsReceiver();
    void moveToThreadWithBatchesPending();
    void dropOldestCountsWhatItDrops();
    void rateLimitedBatchesDropNothing();
    void rateLimitedBatchIsEverythingSinceTheLast();
    void rateLimitedBatchesOfAReceiverComeDueTogether();
    void rateLimitedLateComerJoinsTheWaitingGroup();
    void latestPerKeyKeepsTheNewestOfEachKey();
    void latestPerKeyWithSeveralArguments();
    void badCombinationsAreRefused();
    void disconnectBySlot();
    void invokeBatchedRunsOneSlotCallPerRun();
    void invokeBatchedMovesItsArguments();
    void invokeBatchedSeveralArgumentsMakeTuples();
    void invokeBatchedToADeletedReceiver();
    void invokeBatchedBadCalls();
    void invokeBatchedKeyComparesMemberPointersNotBytes();
    void rateLimitedConnectionWaitsForNoSlowerGroup();
};

void tst_Batched::deliversEveryCallInOrderLikeQtQueued()
{
    // The oracle: the same emissions through Qt::QueuedConnection, one slot call each.
    constexpr quint64 N = 20000;
    Source qtSource;
    Sink qtSink;
    QVERIFY(connect(&qtSource, &Source::value, &qtSink, &Sink::onValue, Qt::QueuedConnection));
    emitFromThread(&qtSource, N);
    QTRY_COMPARE(qtSink.values.size(), qsizetype(N));

    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, &sink,
                                          &Sink::onValues));
    // The main thread runs no event loop meanwhile: the calls wait, and batches form.
    emitFromThread(&source, N, &funnel);
    QTRY_COMPARE(sink.values.size(), qsizetype(N));
    QCOMPARE(sink.values, qtSink.values);
    QVERIFY2(sink.batchSizes.size() < qsizetype(N) / 10,
             qPrintable(QString::number(sink.batchSizes.size())));
    for (QObject *s : std::as_const(sink.senders))
        QCOMPARE(s, &source); // sender() is valid in a batched slot, as in a queued one
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    QCOMPARE(funnel.statistics().delivered, N); // a batch of n counts n
}

void tst_Batched::batchesAreCapped()
{
    constexpr quint64 N = 20000;
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, &sink,
                                          &Sink::onValues));
    emitFromThread(&source, N, &funnel);
    QTRY_COMPARE(sink.values.size(), qsizetype(N));
    QCOMPARE(sink.values, oneTo(N));
    const qsizetype largest = *std::max_element(sink.batchSizes.cbegin(), sink.batchSizes.cend());
    QVERIFY2(largest > 1 && largest <= 4096, qPrintable(QString::number(largest)));
}

void tst_Batched::severalArgumentsMakeTuples()
{
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::pair, &sink, &Sink::onPairs));
    std::thread t([&] {
        for (int i = 0; i < 1000; ++i)
            Q_EMIT source.pair(i, QString::number(i));
        funnel.flush();
    });
    t.join();
    QTRY_COMPARE(sink.pairs.size(), 1000);
    for (int i = 0; i < 1000; ++i)
        QCOMPARE(sink.pairs.at(i), std::make_tuple(i, QString::number(i)));
    static_assert(std::is_same_v<QtFastConnect::BatchOf<decltype(&Source::pair)>,
                                 QList<std::tuple<int, QString>>>);
    static_assert(std::is_same_v<QtFastConnect::BatchOf<decltype(&Source::value)>, QList<quint64>>);
}

void tst_Batched::argumentsAreMovedNeverCopied()
{
    // A by-value signal argument, MoveArguments: moved into the call at emit, moved into the
    // batch at delivery. Never copied.
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::counted, &sink,
                                          &Sink::onCounted, QtFastConnect::MoveArguments));
    CountedValue::resetCounters();
    std::thread t([&] {
        for (quint64 i = 1; i <= 1000; ++i)
            Q_EMIT source.counted(CountedValue(i));
        funnel.flush();
    });
    t.join();
    QTRY_COMPARE(sink.values.size(), 1000);
    QCOMPARE(sink.values, oneTo(1000));
    QCOMPARE(CountedValue::copies.load(), 0);
    QVERIFY(CountedValue::moves.load() >= 2000);
    QTRY_VERIFY(accountedFor(funnel.statistics()));
}

void tst_Batched::callsOutsideThePool()
{
    QFunnel funnel;
    Source source;
    QObject context;
    QList<quint64> got;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::big, &context,
                                          [&](const QList<BigValue> &batch) {
                                              for (const BigValue &v : batch) {
                                                  QCOMPARE(v.text, QString::number(v.value));
                                                  got.append(v.value);
                                              }
                                          }));
    std::thread t([&] {
        for (quint64 i = 1; i <= 3000; ++i)
            Q_EMIT source.big(BigValue { i, QString::number(i), {} });
        funnel.flush();
    });
    t.join();
    QTRY_COMPARE(got.size(), 3000);
    QCOMPARE(got, oneTo(3000));
    QTRY_VERIFY(accountedFor(funnel.statistics()));
}

void tst_Batched::functorWithContext()
{
    QFunnel funnel;
    Source source;
    QObject context;
    QList<quint64> got;
    int calls = 0;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, &context,
                                          [&](QList<quint64> batch) {
                                              ++calls;
                                              got.append(batch);
                                          }));
    emitFromThread(&source, 5000, &funnel);
    QTRY_COMPARE(got.size(), 5000);
    QCOMPARE(got, oneTo(5000));
    QVERIFY(calls < 5000);
}

void tst_Batched::severalEmittingThreadsKeepTheirOrder()
{
    // Four threads emit through one connection: each thread's values arrive in its order. Their
    // calls come from four pool arenas, side by side in the receiver's list: a pool-checking
    // build (ASan, debug) also checks that no run returned to the pool as one list
    // (QPoolChunkBatch::addLinked()) mixes arenas.
    constexpr quint64 PerThread = 20000;
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, &sink,
                                          &Sink::onValues));
    std::vector<std::thread> threads;
    for (quint64 p = 0; p < 4; ++p) {
        threads.emplace_back([&source, &funnel, p] {
            for (quint64 i = 0; i < PerThread; ++i)
                Q_EMIT source.value(p << 32 | i);
            funnel.flush();
        });
    }
    // Delivered while they emit (the capacity, 65,536, is below the 80,000 emitted).
    QTRY_COMPARE_WITH_TIMEOUT(sink.values.size(), qsizetype(4 * PerThread), 30000);
    for (auto &t : threads)
        t.join();
    quint64 next[4] = {};
    for (quint64 v : std::as_const(sink.values)) {
        const quint64 p = v >> 32;
        QCOMPARE(v & 0xffffffff, next[p]);
        ++next[p];
    }
    QTRY_VERIFY(accountedFor(funnel.statistics()));
}

void tst_Batched::receiverDeletedWithBatchesPending()
{
    QFunnel funnel;
    Source source;
    auto *sink = new Sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, sink, &Sink::onValues));
    emitFromThread(&source, 3000, &funnel);
    delete sink; // before the main thread's event loop ran any of them
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    const QFunnel::Statistics s = funnel.statistics();
    QCOMPARE(s.emitted, 3000u);
    QCOMPARE(s.delivered, 0u);
    QCOMPARE(s.discarded, 3000u);
}

void tst_Batched::slotDeletesItsReceiver()
{
    // The first batch's slot deletes its receiver: the calls left are discarded, not run.
    QFunnel funnel;
    Source source;
    auto *sink = new Sink;
    sink->deleteSelfInSlot = true;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, sink, &Sink::onValues));
    emitFromThread(&source, 20000, &funnel);
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    const QFunnel::Statistics s = funnel.statistics();
    QCOMPARE(s.emitted, 20000u);
    QVERIFY(s.delivered >= 1);
    QCOMPARE(s.delivered + s.discarded, 20000u);
}

void tst_Batched::moveToThreadWithBatchesPending()
{
    QFunnel funnel;
    Source source;
    EventLoopThread thread;
    thread.start();
    auto *sink = new Sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, sink, &Sink::onValues));
    emitFromThread(&source, 10000, &funnel);
    sink->moveToThread(&thread); // the pending calls follow it, as Qt's queued calls do
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    thread.quit();
    QVERIFY(thread.wait());
    thread.acquireRun(); // what its slots wrote is this thread's to read now
    QCOMPARE(sink->values, oneTo(10000));
    const Qt::HANDLE other = sink->threads.constFirst();
    QVERIFY(other != QThread::currentThreadId());
    for (Qt::HANDLE h : std::as_const(sink->threads))
        QCOMPARE(h, other);
    delete sink;
}

void tst_Batched::dropOldestCountsWhatItDrops()
{
    // Capacity 64, DropOldest, the receiver's thread not running while 5,000 are emitted: the
    // same calls run, in the same order, as through a per-call funnel connection (the oracle
    // here: Qt's queue has no bound), and every other one is counted as dropped.
    auto run = [](bool batched, QList<quint64> *values) {
        QFunnel funnel;
        funnel.setCapacity(64);
        funnel.setOverflowPolicy(QFunnel::OverflowPolicy::DropOldest);
        Source source;
        Sink sink;
        const bool ok = batched ? bool(QtFastConnect::connectBatched(
                                &funnel, &source, &Source::value, &sink, &Sink::onValues))
                                : bool(QtFastConnect::connect(&funnel, &source, &Source::value,
                                                              &sink, &Sink::onValue));
        if (!ok)
            return QFunnel::Statistics();
        emitFromThread(&source, 5000, &funnel);
        if (!QTest::qWaitFor([&] { return accountedFor(funnel.statistics()); }, 10000))
            return QFunnel::Statistics();
        *values = sink.values;
        return funnel.statistics();
    };
    QList<quint64> perCall;
    QList<quint64> batched;
    const QFunnel::Statistics p = run(false, &perCall);
    const QFunnel::Statistics b = run(true, &batched);
    QCOMPARE(p.emitted, 5000u);
    QCOMPARE(b.emitted, 5000u);
    QCOMPARE(b.delivered + b.dropped, 5000u);
    QVERIFY(b.dropped > 0);
    QCOMPARE(quint64(batched.size()), b.delivered);
    QCOMPARE(batched, perCall);
    QCOMPARE(b.dropped, p.dropped);
}

void tst_Batched::rateLimitedBatchesDropNothing()
{
    // Three bursts of 2,000 emissions 20 ms apart, a 50 ms rate limit: the slot runs at most
    // once per 50 ms, each time with everything pending since the last batch; nothing is
    // coalesced or dropped, and the order is the emission order.
    using namespace std::chrono_literals;
    QFunnel funnel;
    Source source;
    Sink sink;
    QList<std::chrono::steady_clock::time_point> times;
    QObject context;
    QList<quint64> values;
    QVERIFY(QtFastConnect::connectBatched(
            &funnel, &source, &Source::value, &context,
            [&](QList<quint64> batch) {
                times.append(std::chrono::steady_clock::now());
                values.append(batch);
            },
            QtFastConnect::rateLimit(50ms)));
    std::thread t([&] {
        for (quint64 burst = 0; burst < 3; ++burst) {
            for (quint64 i = 1; i <= 2000; ++i)
                Q_EMIT source.value(burst * 2000 + i);
            funnel.flush();
            std::this_thread::sleep_for(20ms);
        }
    });
    QTRY_COMPARE_WITH_TIMEOUT(values.size(), 6000, 10000);
    t.join();
    QCOMPARE(values, oneTo(6000));
    // The module checks the rule before it builds the batch and calls the slot, which reads the
    // clock: a preemption in between (under ThreadSanitizer or qemu, beside other tests, a whole
    // time slice) delays one reading and shortens the next gap. Each gap may lose that much;
    // their sum only what the first reading lost. Without the rule, the bursts would come about
    // 20 ms apart.
    constexpr auto slack = 20ms;
    const auto us = [](auto d) {
        return qint64(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
    };
    for (qsizetype i = 1; i < times.size(); ++i) {
        QVERIFY2(times[i] - times[i - 1] >= 50ms - slack,
                 qPrintable(QStringLiteral("batch %1 came %2 us after the one before")
                                    .arg(i)
                                    .arg(us(times[i] - times[i - 1]))));
    }
    QVERIFY2(times.last() - times.first() >= (times.size() - 1) * 50ms - slack,
             qPrintable(QStringLiteral("%1 batches in %2 us")
                                .arg(times.size())
                                .arg(us(times.last() - times.first()))));
    QVERIFY(times.size() >= 2);
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    const QFunnel::Statistics s = funnel.statistics();
    QCOMPARE(s.delivered, 6000u);
    QCOMPARE(s.coalesced, 0u);
    QCOMPARE(s.dropped, 0u);
}

void tst_Batched::rateLimitedBatchIsEverythingSinceTheLast()
{
    // 20,000 calls pending before the receiver's thread runs its events, a 100 ms rate limit:
    // at most two batches (what the first pass admitted, then everything else an interval
    // later), not batches capped at 4,096 calls whose rest waits for further intervals.
    using namespace std::chrono_literals;
    constexpr quint64 N = 20000;
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, &sink, &Sink::onValues,
                                          QtFastConnect::rateLimit(100ms)));
    emitFromThread(&source, N, &funnel);
    QTRY_COMPARE_WITH_TIMEOUT(sink.values.size(), qsizetype(N), 10000);
    QCOMPARE(sink.values, oneTo(N));
    const qsizetype largest = *std::max_element(sink.batchSizes.cbegin(), sink.batchSizes.cend());
    QVERIFY2(sink.batchSizes.size() <= 2 && largest > 4096,
             qPrintable(QStringLiteral("%1 batches, the largest of %2 calls")
                                .arg(sink.batchSizes.size())
                                .arg(largest)));
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    QCOMPARE(funnel.statistics().coalesced, 0u);
}

namespace {
// Counts the events its object receives: here, only the funnel's wake-ups, one per delivery
// pass, so that a slot can tell which pass runs it. The event itself is not read: it came
// through Qt's posted-event list, whose lock ThreadSanitizer does not see.
class PassCounter : public QObject
{
public:
    int passes = 0;

protected:
    bool eventFilter(QObject *, QEvent *) override
    {
        ++passes;
        return false;
    }
};

// Two rate-limited (20 ms unless told) batched connections, A and B, to one context object, recording the
// delivery pass of each batch and the values.
struct TwoRateLimitedConnections
{
    QFunnel funnel;
    Source a;
    Source b;
    QObject context;
    PassCounter counter;
    QList<int> passesOfA;
    QList<int> passesOfB;
    QList<quint64> valuesOfA;
    QList<quint64> valuesOfB;
    std::atomic<qsizetype> batchesOfA { 0 }; // passesOfA.size(), for the feeding threads
    std::atomic<qsizetype> deliveredOfB { 0 }; // valuesOfB.size(), for the feeding threads

    // slowA: A's slot takes 4 ms. Both connections rate-limited to interval.
    bool connect(bool slowA, std::chrono::milliseconds interval = std::chrono::milliseconds(20))
    {
        using namespace std::chrono_literals;
        context.installEventFilter(&counter);
        const bool okA = QtFastConnect::connectBatched(
                &funnel, &a, &Source::value, &context,
                [this, slowA](QList<quint64> batch) {
                    passesOfA.append(counter.passes);
                    valuesOfA.append(batch);
                    batchesOfA.store(passesOfA.size(), std::memory_order_release);
                    if (slowA)
                        std::this_thread::sleep_for(4ms);
                },
                QtFastConnect::rateLimit(interval));
        const bool okB = QtFastConnect::connectBatched(
                &funnel, &b, &Source::value, &context,
                [this](QList<quint64> batch) {
                    passesOfB.append(counter.passes);
                    valuesOfB.append(batch);
                    deliveredOfB.store(valuesOfB.size(), std::memory_order_release);
                },
                QtFastConnect::rateLimit(interval));
        return okA && okB;
    }
    // Emits 1..n, one value per 100 us on average wherever sleeps are coarser (Windows:
    // bursts), then flushes.
    void feed(Source *source, quint64 n)
    {
        using namespace std::chrono_literals;
        const auto start = std::chrono::steady_clock::now();
        for (quint64 i = 1; i <= n; ++i) {
            Q_EMIT source->value(i);
            std::this_thread::sleep_until(start + i * 100us);
        }
        funnel.flush();
    }
};
} // namespace

void tst_Batched::rateLimitedBatchesOfAReceiverComeDueTogether()
{
    // Both connections fed for 400 ms by two threads; A's slot takes 4 ms. Their batches run in
    // the same delivery passes (so a view lays out once for both), not each on its own clock,
    // which would drift apart by A's 4 ms and take about twice as many passes.
    constexpr quint64 N = 4000;
    TwoRateLimitedConnections t;
    QVERIFY(t.connect(true));
    std::thread ta([&] { t.feed(&t.a, N); });
    std::thread tb([&] { t.feed(&t.b, N); });
    QTRY_VERIFY_WITH_TIMEOUT(
            t.valuesOfA.size() == qsizetype(N) && t.valuesOfB.size() == qsizetype(N), 20000);
    ta.join();
    tb.join();
    QCOMPARE(t.valuesOfA, oneTo(N));
    QCOMPARE(t.valuesOfB, oneTo(N));
    QVERIFY2(t.passesOfA.size() >= 5 && t.passesOfB.size() >= 5, "too few batches to tell");
    QSet<int> passes;
    for (int p : std::as_const(t.passesOfA))
        passes.insert(p);
    for (int p : std::as_const(t.passesOfB))
        passes.insert(p);
    QVERIFY2(passes.size() <= qMax(t.passesOfA.size(), t.passesOfB.size()) + 3,
             qPrintable(QStringLiteral("%1 passes ran %2 batches of A and %3 of B")
                                .arg(passes.size())
                                .arg(t.passesOfA.size())
                                .arg(t.passesOfB.size())));
}

void tst_Batched::rateLimitedLateComerJoinsTheWaitingGroup()
{
    // One thread feeds A without a pause and sends B's bursts, each once the one before was
    // delivered and B's interval has passed, so that each burst finds B due with nothing of it
    // waiting. A burst follows a batch of A's and one more call of A's, which waits for A's
    // interval: a group B can join if the relay hands the burst over within that interval.
    // Each of B's batches runs in a pass with one of A's (it waits for A's group), not in a
    // pass of its own. 100 ms, not 20: under Wine beside two busy loops the relay took longer
    // than 20 ms in 4 of 30 runs (B arrived after A's group had run: nothing to join), and
    // bursts timed apart from A's batches found A's calls due, their timer late, in 6 of 20.
    using namespace std::chrono_literals;
    constexpr auto Interval = 100ms;
    constexpr quint64 Bursts = 6;
    constexpr quint64 BurstSize = 50;
    TwoRateLimitedConnections t;
    QVERIFY(t.connect(false, Interval));
    std::atomic<quint64> fedA { 0 }; // final once the thread has flushed
    std::atomic<bool> done { false };
    std::thread feeder([&] {
        const auto start = std::chrono::steady_clock::now();
        const auto giveUp = start + 20s;
        std::optional<std::chrono::steady_clock::time_point> burstAt;
        std::optional<qsizetype> batchesOfA; // A's batches when the burst came due
        quint64 a = 0;
        for (quint64 burst = 0; burst < Bursts && std::chrono::steady_clock::now() < giveUp;) {
            const auto now = std::chrono::steady_clock::now();
            bool burstNow = false;
            if (!burstAt) {
                if (t.deliveredOfB.load(std::memory_order_acquire)
                    >= qsizetype(burst * BurstSize)) {
                    burstAt = now + Interval + 20ms;
                }
            } else if (now >= *burstAt) {
                const qsizetype seen = t.batchesOfA.load(std::memory_order_acquire);
                if (!batchesOfA)
                    batchesOfA = seen;
                else
                    burstNow = seen != *batchesOfA;
            }
            Q_EMIT t.a.value(++a);
            if (burstNow) {
                for (quint64 i = 1; i <= BurstSize; ++i)
                    Q_EMIT t.b.value(burst * BurstSize + i);
                ++burst;
                burstAt.reset();
                batchesOfA.reset();
            }
            std::this_thread::sleep_until(start + a * 100us);
        }
        t.funnel.flush();
        fedA.store(a, std::memory_order_relaxed);
        done.store(true, std::memory_order_release);
    });
    QTRY_VERIFY_WITH_TIMEOUT(done.load(std::memory_order_acquire)
                                     && t.valuesOfA.size() == qsizetype(fedA.load())
                                     && t.valuesOfB.size() == qsizetype(Bursts * BurstSize),
                             30000);
    feeder.join();
    QCOMPARE(t.valuesOfA, oneTo(fedA.load()));
    QCOMPARE(t.valuesOfB, oneTo(Bursts * BurstSize));
    QVERIFY2(t.passesOfB.size() >= qsizetype(Bursts),
             "B's bursts did not make batches of their own");
    QStringList alone;
    for (qsizetype i = 0; i < t.passesOfB.size(); ++i) {
        if (!t.passesOfA.contains(t.passesOfB.at(i)))
            alone.append(QString::number(i + 1));
    }
    // At most one: a feeder or relay held up for an interval finds A's call due, not waiting.
    QVERIFY2(alone.size() <= 1,
             qPrintable(QStringLiteral("B's batches %1 of %2 ran in a pass without one of A's")
                                .arg(alone.join(QLatin1String(", ")))
                                .arg(t.passesOfB.size())));
}

void tst_Batched::latestPerKeyKeepsTheNewestOfEachKey()
{
    // 20,000 values, key = value % 10, emitted while the main thread runs no event loop: each
    // batch holds at most one value per key, the newest of the batch, in emission order; the
    // others are counted as coalesced; every key's last value is delivered.
    constexpr quint64 N = 20000;
    QFunnel funnel;
    Source source;
    QObject context;
    QList<QList<quint64>> batches;
    QVERIFY(QtFastConnect::connectBatched(
            &funnel, &source, &Source::value, &context,
            [&](QList<quint64> batch) { batches.append(batch); },
            QtFastConnect::latestPerKey([](quint64 v) { return v % 10; })));
    emitFromThread(&source, N, &funnel);
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    const QFunnel::Statistics s = funnel.statistics();
    QCOMPARE(s.emitted, N);
    QVERIFY(s.coalesced > 0);
    QList<quint64> all;
    for (const QList<quint64> &batch : std::as_const(batches)) {
        QSet<quint64> keys;
        for (quint64 v : batch) {
            QVERIFY(!keys.contains(v % 10));
            keys.insert(v % 10);
        }
        all.append(batch);
    }
    QCOMPARE(quint64(all.size()), s.delivered);
    for (qsizetype i = 1; i < all.size(); ++i)
        QVERIFY(all.at(i) > all.at(i - 1));
    QList<quint64> last(all.end() - 10, all.end());
    QCOMPARE(last,
             QList<quint64>({ N - 9, N - 8, N - 7, N - 6, N - 5, N - 4, N - 3, N - 2, N - 1, N }));
}

void tst_Batched::latestPerKeyWithSeveralArguments()
{
    // The key function takes the signal's arguments; a member slot.
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(
            &funnel, &source, &Source::pair, &sink, &Sink::onPairs,
            QtFastConnect::latestPerKey([](int key, const QString &) { return key; })));
    std::thread t([&] {
        for (int i = 0; i < 3000; ++i)
            Q_EMIT source.pair(i % 3, QString::number(i));
        funnel.flush();
    });
    t.join();
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    const QFunnel::Statistics s = funnel.statistics();
    QCOMPARE(s.delivered + s.coalesced, 3000u);
    QCOMPARE(quint64(sink.pairs.size()), s.delivered);
    const QList<std::tuple<int, QString>> newest = { { 0, QStringLiteral("2997") },
                                                     { 1, QStringLiteral("2998") },
                                                     { 2, QStringLiteral("2999") } };
    QCOMPARE(sink.pairs.mid(sink.pairs.size() - 3), newest);
}

void tst_Batched::badCombinationsAreRefused()
{
    Source source;
    Sink sink;
    QTest::ignoreMessage(QtWarningMsg,
                         "QtFastConnect::connectBatched(Source, Sink): a batched connection "
                         "delivers every call; CoalesceCalls is not supported with it "
                         "(RateLimitCalls is)");
    QVERIFY(!QtFastConnect::connectBatched(&source, &Source::value, &sink, &Sink::onValues,
                                           QtFastConnect::CoalesceCalls));
    // The batch bit on a per-call slot (only ConnectionMode::fromInt() can make it).
    QTest::ignoreMessage(QtWarningMsg,
                         "QtFastConnect::connect(Source, Sink): a batched connection needs "
                         "QtFastConnect::connectBatched() and a slot that takes a batch");
    QVERIFY(!QtFastConnect::connect(&source, &Source::value, &sink, &Sink::onValue,
                                    QtFastConnect::ConnectionMode::fromInt(0x110000)));
}

void tst_Batched::disconnectBySlot()
{
    QFunnel funnel;
    Source source;
    Sink sink;
    QVERIFY(QtFastConnect::connectBatched(&funnel, &source, &Source::value, &sink, &Sink::onValues,
                                          Qt::UniqueConnection));
    QVERIFY(!QtFastConnect::connectBatched(&funnel, &source, &Source::value, &sink, &Sink::onValues,
                                           Qt::UniqueConnection));
    QVERIFY(QtFastConnect::disconnect(&source, &Source::value, &sink, &Sink::onValues));
    emitFromThread(&source, 10, &funnel);
    QCoreApplication::processEvents();
    QVERIFY(sink.values.isEmpty());
    QCOMPARE(funnel.statistics().emitted, 0u);
}

QTEST_MAIN(tst_Batched)
void tst_Batched::invokeBatchedRunsOneSlotCallPerRun()
{
    // Like QtFastConnect::invoke(), without a signal: the thread's calls of one member function
    // run in order, a batch per run of them, sender() null, every call counted.
    constexpr quint64 N = 20000;
    QFunnel funnel;
    Sink sink;
    std::atomic<bool> allQueued { true };
    std::thread t([&] {
        for (quint64 i = 1; i <= N; ++i) {
            if (!QtFastConnect::invokeBatched(&funnel, &sink, &Sink::onValues, i))
                allQueued = false;
        }
        funnel.flush();
    });
    t.join();
    QVERIFY(allQueued);
    QTRY_COMPARE(sink.values, oneTo(N));
    // Emitted before the main thread ran its event loop: runs of many calls.
    QVERIFY2(sink.batchSizes.size() < qsizetype(N) / 10,
             qPrintable(QString::number(sink.batchSizes.size()) + " batches"));
    QVERIFY(std::all_of(sink.senders.cbegin(), sink.senders.cend(),
                        [](QObject *s) { return s == nullptr; }));
    QVERIFY(std::all_of(sink.threads.cbegin(), sink.threads.cend(),
                        [](Qt::HANDLE h) { return h == QThread::currentThreadId(); }));
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    QCOMPARE(funnel.statistics().emitted, N);
}

void tst_Batched::invokeBatchedMovesItsArguments()
{
    QFunnel funnel;
    Sink sink;
    CountedValue::resetCounters();
    std::thread t([&] {
        for (quint64 i = 1; i <= 1000; ++i)
            QtFastConnect::invokeBatched(&funnel, &sink, &Sink::onCounted, CountedValue(i));
        funnel.flush();
    });
    t.join();
    QTRY_COMPARE(sink.values, oneTo(1000));
    QCOMPARE(CountedValue::copies.load(), 0);
    QTRY_VERIFY(accountedFor(funnel.statistics()));
}

void tst_Batched::invokeBatchedSeveralArgumentsMakeTuples()
{
    QFunnel funnel;
    Sink sink;
    std::thread t([&] {
        for (int i = 1; i <= 500; ++i)
            QtFastConnect::invokeBatched(&funnel, &sink, &Sink::onPairs, i, QString::number(i));
        funnel.flush();
    });
    t.join();
    QTRY_COMPARE(sink.pairs.size(), 500);
    for (int i = 1; i <= 500; ++i)
        QCOMPARE(sink.pairs.at(i - 1), std::make_tuple(i, QString::number(i)));
    QTRY_VERIFY(accountedFor(funnel.statistics()));
}

void tst_Batched::invokeBatchedToADeletedReceiver()
{
    // Deleted with calls pending, as with Qt's queued calls: none runs, all are discarded; the
    // thread's next call to a new object at the same address is not sent to the dead one's slot.
    QFunnel funnel;
    auto *sink = new Sink;
    std::thread t([&] {
        for (quint64 i = 1; i <= 3000; ++i)
            QtFastConnect::invokeBatched(&funnel, sink, &Sink::onValues, i);
        funnel.flush();
    });
    t.join();
    delete sink;
    QTRY_VERIFY(accountedFor(funnel.statistics()));
    QCOMPARE(funnel.statistics().delivered, 0u);
    QCOMPARE(funnel.statistics().discarded, 3000u);
}

void tst_Batched::invokeBatchedBadCalls()
{
    QFunnel funnel;
    QTest::ignoreMessage(QtWarningMsg,
                         QRegularExpression("^QtFastConnect::invokeBatched\\(.*\\): invalid "
                                            "nullptr parameter \\(receiver\\)$"));
    QVERIFY(!QtFastConnect::invokeBatched(&funnel, static_cast<Sink *>(nullptr), &Sink::onValues,
                                          quint64(1)));
    Sink sink;
    QTest::ignoreMessage(QtWarningMsg,
                         "QtFastConnect::invokeBatched(Sink): invalid nullptr parameter "
                         "(funnel)");
    QVERIFY(!QtFastConnect::invokeBatched(nullptr, &sink, &Sink::onValues, quint64(1)));
    QCOMPARE(funnel.statistics().emitted, 0u);
}

// MSVC's member function pointers of some classes carry padding, whose bytes are whatever the
// stack held: invokeBatched()'s route cache must compare them with ==, as connects do, or every
// call misses and batches shrink to one item. Two copies of one pointer whose padding differs,
// through the library's entry point: one route.
void tst_Batched::invokeBatchedKeyComparesMemberPointersNotBytes()
{
    using Func = decltype(&Sink::onValues);
    using Slot = QtFastConnectPrivate::QFunnelBatchMemberSlot<Func, QtPrivate::List<quint64>>;
    struct Padded
    {
        Func member;
        char padding[8];
    };
    static_assert(sizeof(Padded) <= sizeof(quintptr) * QtFastConnectPrivate::QFunnelMemberKeyWords);
    Padded a, b;
    std::memset(&a, 0x11, sizeof a);
    std::memset(&b, 0x22, sizeof b);
    a.member = b.member = &Sink::onValues;
    const auto equals = [](const void *x, const void *y) {
        return static_cast<const Padded *>(x)->member == static_cast<const Padded *>(y)->member;
    };
    QFunnel funnel;
    Sink sink;
    auto route = [&](const Padded &key) {
        return QtFastConnectPrivate::batchedInvokeRoute(
                &funnel, &sink, &QtFastConnectPrivate::qfcSlotImpl<Slot>, &key, sizeof(Padded),
                equals, &QtFastConnectPrivate::qfcNewBatchInvokeSlot<Slot, Func>, "test");
    };
    QtFastConnectPrivate::QFunnelRoute *first = route(a);
    QtFastConnectPrivate::QFunnelRoute *second = route(b);
    QVERIFY(first);
    QCOMPARE(second, first);
    QtFastConnectPrivate::releaseRoute(first); // the calls' references this test never used
    QtFastConnectPrivate::releaseRoute(second);
}

// Two rate-limited batched connections to one receiver, 16 ms and 1,000 ms, both fed one value
// every 40 ms: the fast one's batches run as its own interval allows, a value or so each, not
// held back to the slow one's group (which took 25 values per batch).
void tst_Batched::rateLimitedConnectionWaitsForNoSlowerGroup()
{
    using namespace std::chrono_literals;
    constexpr quint64 N = 30;
    QFunnel funnel;
    Source fast;
    Source slow;
    QObject context;
    QList<qsizetype> fastBatches;
    QList<quint64> fastValues;
    QList<quint64> slowValues;
    QVERIFY(QtFastConnect::connectBatched(
            &funnel, &fast, &Source::value, &context,
            [&](QList<quint64> batch) {
                fastBatches.append(batch.size());
                fastValues.append(batch);
            },
            QtFastConnect::rateLimit(16ms)));
    QVERIFY(QtFastConnect::connectBatched(
            &funnel, &slow, &Source::value, &context,
            [&](QList<quint64> batch) { slowValues.append(batch); },
            QtFastConnect::rateLimit(1000ms)));
    std::thread feeder([&] {
        const auto start = std::chrono::steady_clock::now();
        for (quint64 i = 1; i <= N; ++i) {
            Q_EMIT slow.value(i);
            Q_EMIT fast.value(i);
            std::this_thread::sleep_until(start + i * 40ms);
        }
        funnel.flush();
    });
    QTRY_VERIFY_WITH_TIMEOUT(fastValues.size() == qsizetype(N) && slowValues.size() == qsizetype(N),
                             20000);
    feeder.join();
    QCOMPARE(fastValues, oneTo(N));
    QCOMPARE(slowValues, oneTo(N));
    // At one value per 40 ms and 16 ms, a batch holds one value, a few where the main thread
    // was held up; half the slow interval's worth means it waited for the slow connection.
    const qsizetype largest = *std::max_element(fastBatches.cbegin(), fastBatches.cend());
    QVERIFY2(largest < 12,
             qPrintable(
                     QStringLiteral("%1 batches of the 16 ms connection, the largest of %2 values")
                             .arg(fastBatches.size())
                             .arg(largest)));
}

#include "tst_batched.moc"
