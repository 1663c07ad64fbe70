// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Experiment 1 of the benchmark report: delivery of quint64 emissions to a slot in the main
// thread, the funnel against Qt's own ways of making the same call.
//
//   tst_bench_funnel                           one-producer, throughput and idle-latency tables,
//                                              printed by cleanupTestCase()
//   tst_bench_funnel oneProducer               calls/s of one producer thread over every path:
//                                              plain member call, Qt::DirectConnection,
//                                              Qt::QueuedConnection, QMetaObject::invokeMethod
//                                              queued, FunnelConnection
//   tst_bench_funnel idleLatency               latency of isolated calls only (about a second)
//   tst_bench_funnel -callgrind singleProducerCallgrind
//                                              instructions per iteration of 10,000 calls
//   tst_bench_funnel --deliver <path> <calls>  delivers a 70,000-call warm-up, then exactly <calls>
//                                              calls from one producer
//                                              thread and exits; for callgrind-per-call.sh
//                                              (paths: see PathTable)
//   tst_bench_funnel --receiver-cost <calls> <repetitions> <producers> <path>...
//                                              CPU time of the receiver (main) thread per
//                                              delivered call while it drains a backlog, and
//                                              the calls/s that makes its ceiling; for
//                                              callgrind-per-thread.sh (receivercost.cpp)
//   QFC_BENCH_CSV=<file>             also appends every result to <file> as CSV
//                                              (benchmarks/shared/benchcsv.h)
//
// This file holds the QTest rows and their tables; the paths, receiver and producer pool are in
// deliverypaths.h, the latency receiver in latencyreceiver.h, the --deliver mode in
// deliveronly.cpp, the --receiver-cost mode in receivercost.cpp.

#include "benchcsv.h"
#include "deliverypaths.h"
#include "latencyreceiver.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qrandom.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

// throughput(): calls per QBENCHMARK iteration, split evenly between the producers.
static constexpr quint64 CallsPerIteration = 200000;
// singleProducerCallgrind(): calls per iteration; divide its result by this.
static constexpr quint64 CallgrindCallsPerIteration = 10000;

// Wall-clock rows are meaningless under valgrind, which serializes the threads.
static bool underCallgrind()
{
    return QCoreApplication::arguments().contains(QStringLiteral("-callgrindchild"));
}

class tst_BenchFunnel : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void oneProducer_data();
    void oneProducer();
    void throughput_data();
    void throughput();
    void singleProducerCallgrind_data();
    void singleProducerCallgrind();
    void idleLatency_data();
    void idleLatency();
    void cleanupTestCase();

private:
    void printOneProducer() const;
    void printThroughput() const;
    void printLatency() const;

    struct Measurement
    {
        quint64 calls = 0;
        qint64 nsecs = 0;
    };
    // Our own clock around each iteration, so that the table compares rows of this very run.
    std::map<int, std::map<Path, Measurement>> m_results;
    std::map<Path, Measurement> m_oneProducer;

    struct Latency
    {
        int calls = 0;
        double medianUs = 0;
        double p90Us = 0;
        double p99Us = 0;
        double maxUs = 0;
    };
    std::map<Path, Latency> m_latency;
};

void tst_BenchFunnel::oneProducer_data()
{
    QTest::addColumn<int>("path");
    for (const PathInfo &info : PathTable)
        QTest::addRow("%s", info.label) << int(info.path);
}

// The 2017 experiment (100 million emissions, direct against cross-thread queued) at a size
// that runs in a second or two: one producer thread, one receiver, every path side by side.
void tst_BenchFunnel::oneProducer()
{
    QFETCH(int, path);
    if (underCallgrind())
        QSKIP("wall-clock throughput; use scripts/callgrind-per-call.sh for instruction counts");

    Receiver receiver(1);
    QEventLoop loop;
    if (!runsInProducer(Path(path)))
        receiver.loop = &loop;
    ProducerPool pool(1);
    QVERIFY(connectPath(Path(path), pool, 0, &receiver));
    runRound(pool, receiver, CallsPerIteration); // warm-up

    Measurement m;
    QBENCHMARK {
        QElapsedTimer clock;
        clock.start();
        runRound(pool, receiver, CallsPerIteration);
        m.nsecs += clock.nsecsElapsed();
        m.calls += CallsPerIteration;
    }

    QCOMPARE(receiver.count, m.calls + CallsPerIteration);
    QCOMPARE(receiver.sum, pool.emittedSum());
    QCOMPARE(receiver.outOfOrder, 0u);

    Measurement &total = m_oneProducer[Path(path)];
    total.calls += m.calls;
    total.nsecs += m.nsecs;
}

void tst_BenchFunnel::throughput_data()
{
    QTest::addColumn<int>("producers");
    QTest::addColumn<int>("path");
    for (int producers : { 1, 4, 32 }) {
        for (Path path : { Path::Queued, Path::Funnel }) {
            QTest::addRow("%d producer%s, %s", producers, producers == 1 ? "" : "s", pathName(path))
                    << producers << int(path);
        }
    }
}

void tst_BenchFunnel::throughput()
{
    QFETCH(int, producers);
    QFETCH(int, path);
    if (underCallgrind())
        QSKIP("wall-clock throughput; use singleProducerCallgrind under -callgrind");

    Receiver receiver(producers);
    QEventLoop loop;
    receiver.loop = &loop;
    ProducerPool pool(producers);
    for (int i = 0; i < producers; ++i)
        QVERIFY(connectPath(Path(path), pool, i, &receiver));
    const quint64 callsEach = CallsPerIteration / quint64(producers);

    // Warm-up: per-thread lanes, the inbox and Qt's posted-event list get allocated here.
    runRound(pool, receiver, callsEach);

    Measurement m;
    QBENCHMARK {
        QElapsedTimer clock;
        clock.start();
        runRound(pool, receiver, callsEach);
        m.nsecs += clock.nsecsElapsed();
        m.calls += callsEach * quint64(producers);
    }

    QCOMPARE(receiver.count, m.calls + callsEach * quint64(producers));
    QCOMPARE(receiver.sum, pool.emittedSum());
    QCOMPARE(receiver.outOfOrder, 0u);

    Measurement &total = m_results[producers][Path(path)];
    total.calls += m.calls;
    total.nsecs += m.nsecs;
}

void tst_BenchFunnel::singleProducerCallgrind_data()
{
    QTest::addColumn<int>("path");
    for (Path path : { Path::Funnel, Path::Queued, Path::Direct })
        QTest::addRow("%s, %llu calls", pathName(path), CallgrindCallsPerIteration) << int(path);
}

// Small enough for -callgrind (which counts every thread's instructions inside QBENCHMARK; the
// result is per 10,000 calls). Runs as a short wall-clock benchmark otherwise.
void tst_BenchFunnel::singleProducerCallgrind()
{
    QFETCH(int, path);
    Receiver receiver(1);
    QEventLoop loop;
    if (Path(path) != Path::Direct)
        receiver.loop = &loop;
    ProducerPool pool(1);
    QVERIFY(connectPath(Path(path), pool, 0, &receiver));

    // Warm-up, so that one-time allocations stay out of the count.
    runRound(pool, receiver, 1000);
    quint64 calls = 1000;

    QBENCHMARK {
        runRound(pool, receiver, CallgrindCallsPerIteration);
        calls += CallgrindCallsPerIteration;
    }

    QCOMPARE(receiver.count, calls);
    QCOMPARE(receiver.sum, pool.emittedSum());
    QCOMPARE(receiver.outOfOrder, 0u);
}

void tst_BenchFunnel::idleLatency_data()
{
    QTest::addColumn<int>("path");
    for (Path path : { Path::Queued, Path::Funnel })
        QTest::addRow("%s", pathName(path)) << int(path);
}

// How long an isolated call takes from emission to the slot, with everything idle in between:
// the receiver thread asleep in its event loop and, for the funnel, the relay asleep with no
// batch in hand, which is when the funnel hands the call straight to the receiver's thread.
// One producer thread emits a timestamp, waits until the slot has run, sleeps 100-200 µs and
// emits the next one, so there is never more than one call in flight. The percentiles are
// printed per row and side by side by cleanupTestCase(). Not a QBENCHMARK: a run is mostly
// sleep, and QTest would run each benchmark row twice (a warm-up invocation) to time it.
void tst_BenchFunnel::idleLatency()
{
    QFETCH(int, path);
    if (underCallgrind())
        QSKIP("wall-clock latency; use singleProducerCallgrind under -callgrind");

    LatencyReceiver receiver;
    receiver.delaysNs.reserve(LatencyCalls);
    receiver.target = LatencyWarmupCalls + LatencyCalls;
    QEventLoop loop;
    receiver.loop = &loop;
    Sender sender;
    if (Path(path) == Path::Funnel) {
        QVERIFY(QtFastConnect::connect(&sender, &Sender::value, &receiver,
                                       &LatencyReceiver::onStamp));
    } else {
        QVERIFY(QObject::connect(&sender, &Sender::value, &receiver, &LatencyReceiver::onStamp,
                                 Qt::QueuedConnection));
    }

    std::atomic<bool> stalled { false };
    const int target = receiver.target;
    std::unique_ptr<QThread> producer(QThread::create([&] {
        // The same gaps in every row and run, spread so that nothing periodic phase-locks.
        QRandomGenerator gaps(20260101);
        for (int i = 0; i < target; ++i) {
            if (i)
                std::this_thread::sleep_for(std::chrono::microseconds(
                        gaps.bounded(LatencyMinGapUs, LatencyMaxGapUs + 1)));
            Q_EMIT sender.value(steadyNowNs());
            if (!receiver.received.tryAcquire(1, LatencyTimeoutMs)) {
                stalled.store(true, std::memory_order_relaxed);
                return;
            }
        }
    }));
    // A lost call must fail the row, not hang it.
    QTimer watchdog;
    watchdog.setSingleShot(true);
    QObject::connect(&watchdog, &QTimer::timeout, &loop, &QEventLoop::quit);
    watchdog.start(LatencyTimeoutMs + 1000);

    producer->start();
    // The slot only runs inside this loop, so it cannot reach the target before exec().
    loop.exec();
    watchdog.stop();
    producer->wait();
    // A call that arrives after a failure must not touch the dead loop.
    receiver.loop = nullptr;

    QVERIFY2(!stalled.load(std::memory_order_relaxed), "a call did not arrive within 10 s");
    QCOMPARE(receiver.count, target);
    QCOMPARE(int(receiver.delaysNs.size()), LatencyCalls);
    QCOMPARE(receiver.negative, 0);

    std::vector<qint64> sorted = receiver.delaysNs;
    std::sort(sorted.begin(), sorted.end());
    // Nearest rank: the smallest delay that at least p of the calls did not exceed.
    auto percentileUs = [&sorted](double p) {
        const size_t rank = size_t(std::ceil(p * double(sorted.size())));
        return double(sorted[std::max<size_t>(rank, 1) - 1]) / 1e3;
    };
    Latency l;
    l.calls = LatencyCalls;
    l.medianUs = percentileUs(0.50);
    l.p90Us = percentileUs(0.90);
    l.p99Us = percentileUs(0.99);
    l.maxUs = double(sorted.back()) / 1e3;
    qInfo("%s: %d calls, median %.1f µs, p90 %.1f µs, p99 %.1f µs, max %.1f µs",
          pathName(Path(path)), l.calls, l.medianUs, l.p90Us, l.p99Us, l.maxUs);
    m_latency[Path(path)] = l;
    const char *series = pathInfo(Path(path)).arg;
    BenchCsv::write("idle-latency", series, 1, 8, "median_us", l.medianUs);
    BenchCsv::write("idle-latency", series, 1, 8, "p99_us", l.p99Us);
    BenchCsv::write("idle-latency", series, 1, 8, "max_us", l.maxUs);
}

void tst_BenchFunnel::cleanupTestCase()
{
    printOneProducer();
    printThroughput();
    printLatency();
}

void tst_BenchFunnel::printOneProducer() const
{
    if (m_oneProducer.empty())
        return;
    const auto queued = m_oneProducer.find(Path::Queued);
    const double queuedRate = queued == m_oneProducer.end() || queued->second.nsecs <= 0
            ? 0
            : double(queued->second.calls) * 1e9 / double(queued->second.nsecs);
    qInfo("One producer thread, quint64, calls/s measured in this run");
    qInfo("%-22s  %14s  %10s  %10s", "path", "calls/s", "ns/call", "x Qt queued");
    for (const PathInfo &info : PathTable) {
        const auto it = m_oneProducer.find(info.path);
        if (it == m_oneProducer.end() || it->second.nsecs <= 0 || !it->second.calls)
            continue;
        const double rate = double(it->second.calls) * 1e9 / double(it->second.nsecs);
        const double nsPerCall = double(it->second.nsecs) / double(it->second.calls);
        qInfo("%-22s  %12.3f M  %10.1f  %10.2f", info.label, rate / 1e6, nsPerCall,
              queuedRate > 0 ? rate / queuedRate : 0.0);
        BenchCsv::write("one-producer", info.arg, 1, 8, "calls_per_s", rate);
        BenchCsv::write("one-producer", info.arg, 1, 8, "ns_per_call", nsPerCall);
    }
}

void tst_BenchFunnel::printThroughput() const
{
    if (m_results.empty())
        return;
    auto rate = [](const std::map<Path, Measurement> &row, Path path) -> double {
        auto it = row.find(path);
        if (it == row.end() || it->second.nsecs <= 0)
            return 0;
        return double(it->second.calls) * 1e9 / double(it->second.nsecs);
    };
    auto cell = [](double callsPerSecond) {
        return callsPerSecond > 0 ? QByteArray::number(callsPerSecond / 1e6, 'f', 3) + " M"
                                  : QByteArray("-");
    };
    qInfo("Calls/s measured in this run (the machine is shared: compare rows of one run only)");
    qInfo("%9s  %20s  %16s  %9s", "producers", pathName(Path::Queued), pathName(Path::Funnel),
          "funnel/Qt");
    for (const auto &[producers, row] : m_results) {
        const double queued = rate(row, Path::Queued);
        const double funnel = rate(row, Path::Funnel);
        const QByteArray ratio = queued > 0 && funnel > 0
                ? QByteArray::number(funnel / queued, 'f', 2) + "x"
                : QByteArray("-");
        qInfo("%9d  %20s  %16s  %9s", producers, cell(queued).constData(), cell(funnel).constData(),
              ratio.constData());
        for (Path path : { Path::Queued, Path::Funnel }) {
            if (const double r = rate(row, path); r > 0)
                BenchCsv::write("producers", pathInfo(path).arg, producers, 8, "calls_per_s", r);
        }
    }
}

void tst_BenchFunnel::printLatency() const
{
    if (m_latency.empty())
        return;
    qInfo("Idle latency in µs, emission to slot, measured in this run (one call in flight, "
          "%d-%d µs apart)",
          LatencyMinGapUs, LatencyMaxGapUs);
    qInfo("%-20s  %6s  %8s  %8s  %8s  %8s", "", "calls", "median", "p90", "p99", "max");
    for (const auto &[path, l] : m_latency) {
        qInfo("%-20s  %6d  %8.1f  %8.1f  %8.1f  %8.1f", pathName(path), l.calls, l.medianUs,
              l.p90Us, l.p99Us, l.maxUs);
    }
    const auto queued = m_latency.find(Path::Queued);
    const auto funnel = m_latency.find(Path::Funnel);
    if (queued == m_latency.end() || funnel == m_latency.end())
        return;
    auto ratio = [](double f, double q) {
        return q > 0 ? QByteArray::number(f / q, 'f', 2) + "x" : QByteArray("-");
    };
    // Below 1: the funnel is faster. The max is one sample each: no ratio.
    qInfo("%-20s  %6s  %8s  %8s  %8s  %8s", "funnel/Qt", "",
          ratio(funnel->second.medianUs, queued->second.medianUs).constData(),
          ratio(funnel->second.p90Us, queued->second.p90Us).constData(),
          ratio(funnel->second.p99Us, queued->second.p99Us).constData(), "-");
}

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    if (argc > 1 && !std::strcmp(argv[1], "--deliver")) {
        const int rc = argc == 4 ? deliverOnly(argv[2], argv[3]) : -1;
        if (rc == -1) {
            std::fprintf(stderr, "usage: %s --deliver <path> <calls>; paths:", argv[0]);
            for (const PathInfo &info : PathTable)
                std::fprintf(stderr, " %s", info.arg);
            std::fprintf(stderr, "\n");
            return 2;
        }
        return rc;
    }
    if (argc > 1 && !std::strcmp(argv[1], "--receiver-cost")) {
        const int rc = receiverCost(argc - 2, argv + 2);
        if (rc == -1) {
            std::fprintf(stderr,
                         "usage: %s --receiver-cost <calls> <repetitions> <producers> <path>...;"
                         " paths:",
                         argv[0]);
            for (const PathInfo &info : PathTable) {
                if (!runsInProducer(info.path))
                    std::fprintf(stderr, " %s", info.arg);
            }
            std::fprintf(stderr, "\n");
            return 2;
        }
        return rc;
    }
    tst_BenchFunnel tc;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&tc, argc, argv);
}

#include "tst_bench_funnel.moc"
