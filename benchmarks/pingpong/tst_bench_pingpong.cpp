// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Experiment 5 of the benchmark report: the round trip of a ping-pong between the main thread
// and a worker thread that runs an event loop, one message in flight, over Qt::QueuedConnection
// and over FunnelConnection: twice the cost of one hand-off between threads (published
// coroutine and channel switches: goroutine ~1.4 µs, libcopp ~0.6 µs).
//
//   tst_bench_pingpong                         both rows; median, p99 and max round trip in µs
//   QTFASTCONNECT_BENCH_QUICK=1                2,000 round trips per row instead of 20,000
//   QTFASTCONNECT_BENCH_CSV=<file>             also appends the results to <file> as CSV

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
        if (++count > WarmupRoundTrips)
            roundTripsUs.push_back(double(rtt) / 1e3);
        if (count == target)
            loop->quit();
        else
            serve();
    }
Q_SIGNALS:
    void ping(qint64 stampNs);

public:
    int count = 0;
    int target = 0;
    QEventLoop *loop = nullptr;
    std::vector<double> roundTripsUs;
};

class tst_BenchPingPong : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void roundTrip_data();
    void roundTrip();
};

void tst_BenchPingPong::roundTrip_data()
{
    QTest::addColumn<bool>("funnel");
    QTest::newRow("qt-queued") << false;
    QTest::newRow("funnel") << true;
}

// Not a QBENCHMARK: the figure is a distribution, and QTest would time each row twice.
void tst_BenchPingPong::roundTrip()
{
    QFETCH(bool, funnel);
    const int measured = qEnvironmentVariableIntValue("QTFASTCONNECT_BENCH_QUICK") ? 2000 : 20000;

    QThread thread;
    Ponger ponger;
    ponger.moveToThread(&thread);
    Pinger pinger;
    QEventLoop loop;
    pinger.loop = &loop;
    pinger.target = WarmupRoundTrips + measured;
    pinger.roundTripsUs.reserve(size_t(measured));
    if (funnel) {
        QVERIFY(QtFastConnect::connect(&pinger, &Pinger::ping, &ponger, &Ponger::onPing));
        QVERIFY(QtFastConnect::connect(&ponger, &Ponger::pong, &pinger, &Pinger::onPong));
    } else {
        QVERIFY(QObject::connect(&pinger, &Pinger::ping, &ponger, &Ponger::onPing,
                                 Qt::QueuedConnection));
        QVERIFY(QObject::connect(&ponger, &Ponger::pong, &pinger, &Pinger::onPong,
                                 Qt::QueuedConnection));
    }
    thread.start();

    QTimer watchdog; // a lost ball fails the row instead of hanging it
    watchdog.setSingleShot(true);
    QObject::connect(&watchdog, &QTimer::timeout, &loop, &QEventLoop::quit);
    watchdog.start(TimeoutMs);
    pinger.serve();
    loop.exec();
    thread.quit();
    thread.wait();

    QCOMPARE(pinger.count, pinger.target);
    const Percentiles p = Percentiles::of(pinger.roundTripsUs);
    const char *series = funnel ? "funnel" : "qt-queued";
    qInfo("%s: %d round trips, median %.1f µs, p99 %.1f µs, max %.1f µs", series, measured,
          p.median, p.p99, p.max);
    BenchCsv::write("ping-pong", series, 2, 8, "median_us", p.median);
    BenchCsv::write("ping-pong", series, 2, 8, "p99_us", p.p99);
    BenchCsv::write("ping-pong", series, 2, 8, "max_us", p.max);
}

QTEST_GUILESS_MAIN(tst_BenchPingPong)

#include "tst_bench_pingpong.moc"
