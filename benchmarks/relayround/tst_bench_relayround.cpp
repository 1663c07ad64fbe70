// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// How long the relay thread's round really is, and what flush() costs a producer, on the
// system it runs on: the round is a sleep of 50 to 400 µs between two passes over the batches
// the relay holds, and how close the system's timers come to that decides how late a held
// call, flush() and a thread's exit are. On Windows the relay sleeps on a high-resolution
// waitable timer (Sleep() would round up to the system timer's period, 1 to 15.6 ms).
//
//   relayRound     one producer emits a call every 20 µs for a second, so the relay always holds
//                  its batch and routes something each round: the round's mean length is the
//                  time over QFunnel::Statistics::relayRounds, and every 100th call is followed
//                  by a timed flush(), which waits for the round in progress. Qt::QueuedConnection
//                  has no such round: the same stream over it gives the emission-to-slot delay
//                  to compare with the funnel's (a held call waits for the next round).
//   flushLatency   the producer emits one call and calls QFunnel::flush(), 2,000 times, 100 µs
//                  apart: the time flush() takes (median, p99, max), against the time a
//                  Qt::QueuedConnection emission takes to post its event, which is when Qt's
//                  call is as far as flush() takes the funnel's. An idle relay hands such a
//                  call to the receiver's thread at once: mostly flush()'s fast path.
// Timing is wall clock (a noisy, shared machine shows in p99 and max); under Wine or qemu it
// measures the emulation, not a real system.
//   QFC_BENCH_CSV=<file>   also appends the results to <file> as CSV

#include "benchcsv.h"
#include "percentiles.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

constexpr auto StreamGap = std::chrono::microseconds(20);
constexpr auto StreamLength = std::chrono::seconds(1);
constexpr int FlushCalls = 2000;
constexpr auto FlushGap = std::chrono::microseconds(100);
constexpr int TimeoutMs = 60000;

using Clock = std::chrono::steady_clock;

// Busy-waits: a sleep this short is what is being measured, so it cannot pace the producer.
void spinFor(Clock::duration d)
{
    const Clock::time_point until = Clock::now() + d;
    while (Clock::now() < until) {}
}

double microseconds(Clock::duration d)
{
    return std::chrono::duration<double, std::micro>(d).count();
}

qint64 nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count();
}

class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(int seq, qint64 emittedNs);
};

// In the main thread: counts the calls, checks their order, records each one's delay.
class Counter : public QObject
{
    Q_OBJECT
public:
    void onValue(int seq, qint64 emittedNs)
    {
        delaysUs.push_back(double(nowNs() - emittedNs) / 1e3);
        if (seq != last + 1)
            ++outOfOrder;
        last = seq;
        received.fetch_add(1, std::memory_order_relaxed);
    }
    int last = -1;
    int outOfOrder = 0;
    std::atomic<int> received { 0 };
    std::vector<double> delaysUs;
};

// A funnel connection and a Qt::QueuedConnection, each from its own sender to its own counter.
struct Subjects
{
    QFunnel funnel;
    Sender sender;
    Counter counter;
    Sender qtSender;
    Counter qtCounter;

    bool connect()
    {
        return QtFastConnect::connect(&funnel, &sender, &Sender::value, &counter, &Counter::onValue)
                && QObject::connect(&qtSender, &Sender::value, &qtCounter, &Counter::onValue,
                                    Qt::QueuedConnection);
    }
};

// Runs the producer in its own thread while the main thread's event loop delivers, until
// every emitted call arrived (or the timeout: the caller compares the counts).
template<typename Produce>
int runProducer(Counter &counter, Produce produce)
{
    std::atomic<int> emitted { -1 };
    std::thread producer([&] { emitted.store(produce(), std::memory_order_release); });
    QDeadlineTimer deadline(TimeoutMs);
    while (!deadline.hasExpired()) {
        const int n = emitted.load(std::memory_order_acquire);
        if (n >= 0 && counter.received.load(std::memory_order_relaxed) == n)
            break;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    producer.join();
    return emitted.load(std::memory_order_relaxed);
}

} // namespace

class tst_BenchRelayRound : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void relayRound();
    void flushLatency();
};

void tst_BenchRelayRound::relayRound()
{
    Subjects x;
    QVERIFY(x.connect());

    // funnel: flushed every 100th call (timed) and before the producer thread exits, as a
    // QThread's run() should end.
    std::vector<double> flushUs;
    flushUs.reserve(size_t(StreamLength / StreamGap / 100 + 1));
    auto stream = [&flushUs](Sender &s, QFunnel *funnel) {
        return [&s, &flushUs, funnel] {
            const Clock::time_point end = Clock::now() + StreamLength;
            int n = 0;
            for (Clock::time_point next = Clock::now(); next < end; next += StreamGap) {
                while (Clock::now() < next) {}
                Q_EMIT s.value(n++, nowNs());
                if (funnel && n % 100 == 0) {
                    const Clock::time_point t0 = Clock::now();
                    funnel->flush();
                    flushUs.push_back(microseconds(Clock::now() - t0));
                }
            }
            if (funnel)
                funnel->flush();
            return n;
        };
    };
    const QFunnel::Statistics before = x.funnel.statistics();
    const Clock::time_point start = Clock::now();
    const int emitted = runProducer(x.counter, stream(x.sender, &x.funnel));
    const Clock::duration elapsed = Clock::now() - start;
    const QFunnel::Statistics after = x.funnel.statistics();
    QCOMPARE(x.counter.received.load(), emitted);
    QCOMPARE(x.counter.outOfOrder, 0);

    const int qtEmitted = runProducer(x.qtCounter, stream(x.qtSender, nullptr));
    QCOMPARE(x.qtCounter.received.load(), qtEmitted);
    QCOMPARE(x.qtCounter.outOfOrder, 0);

    const quint64 rounds = after.relayRounds - before.relayRounds;
    QVERIFY2(rounds > 0, "the relay never held the producer's batch");
    const double roundUs = microseconds(elapsed) / double(rounds);
    const double callsPerRound = double(after.relayedCalls - before.relayedCalls) / double(rounds);
    const Percentiles f = Percentiles::of(x.counter.delaysUs);
    const Percentiles q = Percentiles::of(x.qtCounter.delaysUs);
    qInfo("relay round: %.1f us on average (%llu rounds in %.0f ms, %.1f calls each; nominal "
          "50 us)",
          roundUs, static_cast<unsigned long long>(rounds), microseconds(elapsed) / 1e3,
          callsPerRound);
    qInfo("emission to slot: funnel median %.1f us, p99 %.1f us; Qt queued median %.1f us, "
          "p99 %.1f us; median ratio funnel/Qt %.2f",
          f.median, f.p99, q.median, q.p99, f.median / std::max(q.median, 0.001));
    const Percentiles fl = Percentiles::of(flushUs);
    qInfo("flush() while the relay holds the batch: median %.1f us, p99 %.1f us, max %.1f us "
          "(%d flushes)",
          fl.median, fl.p99, fl.max, int(flushUs.size()));
    BenchCsv::write("relay-round", "funnel", 1, 8, "mean_round_us", roundUs);
    BenchCsv::write("relay-round", "funnel", 1, 8, "delay_median_us", f.median);
    BenchCsv::write("relay-round", "qt-queued", 1, 8, "delay_median_us", q.median);
    BenchCsv::write("relay-round", "funnel", 1, 8, "flush_median_us", fl.median);
}

void tst_BenchRelayRound::flushLatency()
{
    Subjects x;
    QVERIFY(x.connect());

    std::vector<double> flushUs;
    std::vector<double> postUs;
    flushUs.reserve(FlushCalls);
    postUs.reserve(FlushCalls);
    const int emitted = runProducer(x.counter, [&] {
        for (int i = 0; i < FlushCalls; ++i) {
            Q_EMIT x.sender.value(i, nowNs());
            const Clock::time_point t0 = Clock::now();
            x.funnel.flush();
            flushUs.push_back(microseconds(Clock::now() - t0));
            spinFor(FlushGap);
        }
        return FlushCalls;
    });
    QCOMPARE(emitted, FlushCalls);
    QCOMPARE(x.counter.received.load(), FlushCalls);
    const int qtEmitted = runProducer(x.qtCounter, [&] {
        for (int i = 0; i < FlushCalls; ++i) {
            const Clock::time_point t0 = Clock::now();
            Q_EMIT x.qtSender.value(i, nowNs());
            postUs.push_back(microseconds(Clock::now() - t0));
            spinFor(FlushGap);
        }
        return FlushCalls;
    });
    QCOMPARE(qtEmitted, FlushCalls);
    QCOMPARE(x.qtCounter.received.load(), FlushCalls);

    const Percentiles f = Percentiles::of(flushUs);
    const Percentiles q = Percentiles::of(postUs);
    qInfo("flush() after one call: median %.1f us, p99 %.1f us, max %.1f us", f.median, f.p99,
          f.max);
    qInfo("Qt queued emission (posts its event): median %.1f us, p99 %.1f us, max %.1f us; "
          "flush()/post median ratio %.1f",
          q.median, q.p99, q.max, f.median / std::max(q.median, 0.001));
    BenchCsv::write("flush-latency", "funnel", 1, 8, "median_us", f.median);
    BenchCsv::write("flush-latency", "funnel", 1, 8, "p99_us", f.p99);
    BenchCsv::write("flush-latency", "qt-queued", 1, 8, "median_us", q.median);
    BenchCsv::write("flush-latency", "qt-queued", 1, 8, "p99_us", q.p99);
}

QTEST_GUILESS_MAIN(tst_BenchRelayRound)
#include "tst_bench_relayround.moc"
