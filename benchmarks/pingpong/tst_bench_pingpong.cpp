// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Experiment 5 of the benchmark report: the round trip of a ping-pong between the main thread
// and a worker thread that runs an event loop, one message in flight, over Qt::QueuedConnection
// and over FunnelConnection: twice the cost of one hand-off between threads (published
// coroutine and channel switches: goroutine ~1.4 µs, libcopp ~0.6 µs).
//
// The two connections take turns in blocks of round trips (each block with the other one
// first), with their pongers in the same worker thread: a change in the machine's load during
// the run touches both medians alike, so that their ratio compares the connections, not the
// moments they ran at.
//
//   tst_bench_pingpong                         median, p99 and max round trip in µs, per
//                                              connection
//   QFC_BENCH_QUICK=1                2,000 round trips per connection instead of 20,000
//   QFC_BENCH_CSV=<file>             also appends the results to <file> as CSV

#include "benchcsv.h"
#include "percentiles.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <chrono>

static constexpr int WarmupRoundTrips = 200;
static constexpr int Blocks = 20; // per connection
static constexpr int TimeoutMs = 60000;

static qint64 steadyNowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

// In the worker thread: sends every ball straight back.
class Ponger : public QObject
{
    Q_OBJECT
public:
    void onPing(qint64 stampNs) { Q_EMIT pong(stampNs); }
Q_SIGNALS:
    void pong(qint64 stampNs);
};

// In the main thread: times each round trip and serves the next ball.
class Pinger : public QObject
{
    Q_OBJECT
public:
    void serve() { Q_EMIT ping(steadyNowNs()); }
    void onPong(qint64 stampNs)
    {
        const qint64 rtt = steadyNowNs() - stampNs;
        if (recording)
            roundTripsUs.push_back(double(rtt) / 1e3);
        if (++count == target)
            loop->quit();
        else
            serve();
    }
    // Runs n round trips, then returns.
    void runBlock(int n, bool record)
    {
        count = 0;
        target = n;
        recording = record;
        serve();
        loop->exec();
    }
Q_SIGNALS:
    void ping(qint64 stampNs);

public:
    int count = 0;
    int target = 0;
    bool recording = false;
    QEventLoop *loop = nullptr;
    std::vector<double> roundTripsUs;
};

// One way of connecting the two: its own pinger and ponger.
struct PingPongPair
{
    const char *series;
    Pinger pinger;
    Ponger ponger;
};

class tst_BenchPingPong : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void roundTrip();
};

// Not a QBENCHMARK: the figure is a distribution, and QTest would time each row twice.
void tst_BenchPingPong::roundTrip()
{
    const int measured = qEnvironmentVariableIntValue("QFC_BENCH_QUICK") ? 2000 : 20000;
    const int block = measured / Blocks;

    QThread thread;
    QEventLoop loop;
    PingPongPair qt { "qt-queued", {}, {} };
    PingPongPair funnel { "funnel", {}, {} };
    for (PingPongPair *pair : { &qt, &funnel }) {
        pair->ponger.moveToThread(&thread);
        pair->pinger.loop = &loop;
        pair->pinger.roundTripsUs.reserve(size_t(measured));
    }
    QVERIFY(QObject::connect(&qt.pinger, &Pinger::ping, &qt.ponger, &Ponger::onPing,
                             Qt::QueuedConnection));
    QVERIFY(QObject::connect(&qt.ponger, &Ponger::pong, &qt.pinger, &Pinger::onPong,
                             Qt::QueuedConnection));
    QVERIFY(QtFastConnect::connect(&funnel.pinger, &Pinger::ping, &funnel.ponger, &Ponger::onPing));
    QVERIFY(QtFastConnect::connect(&funnel.ponger, &Ponger::pong, &funnel.pinger, &Pinger::onPong));
    thread.start();

    QTimer watchdog; // a lost ball fails the test instead of hanging it
    watchdog.setSingleShot(true);
    QObject::connect(&watchdog, &QTimer::timeout, &loop, &QEventLoop::quit);
    watchdog.start(TimeoutMs);
    qt.pinger.runBlock(WarmupRoundTrips, false);
    funnel.pinger.runBlock(WarmupRoundTrips, false);
    for (int b = 0; b < Blocks && watchdog.isActive(); ++b) {
        PingPongPair &first = b % 2 ? funnel : qt;
        PingPongPair &second = b % 2 ? qt : funnel;
        first.pinger.runBlock(block, true);
        second.pinger.runBlock(block, true);
    }
    thread.quit();
    thread.wait();

    for (PingPongPair *pair : { &qt, &funnel }) {
        QCOMPARE(qsizetype(pair->pinger.roundTripsUs.size()), qsizetype(block) * Blocks);
        const Percentiles p = Percentiles::of(pair->pinger.roundTripsUs);
        qInfo("%s: %d round trips, median %.1f µs, p99 %.1f µs, max %.1f µs", pair->series,
              block * Blocks, p.median, p.p99, p.max);
        BenchCsv::write("ping-pong", pair->series, 2, 8, "median_us", p.median);
        BenchCsv::write("ping-pong", pair->series, 2, 8, "p99_us", p.p99);
        BenchCsv::write("ping-pong", pair->series, 2, 8, "max_us", p.max);
    }
}

QTEST_GUILESS_MAIN(tst_BenchPingPong)

#include "tst_bench_pingpong.moc"
