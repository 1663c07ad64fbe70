// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Experiment 2 of the benchmark report: N worker threads hash tasks (FNV-1a 64 over one block
// of 256 B, 1 KiB, 16 KiB or 100 KiB) and every result goes to a slot in the main thread. The
// published experiment this reproduces: with the standard Qt scheme results/s fell from 60 k to
// 2 k at 32 threads; a queue plus one relay thread scaled near-linearly.
//
// Schemes (one data row per threads x block size x scheme):
//   ceiling        workers take tasks from an atomic counter and fold their results themselves:
//                  no delivery at all, the most any scheme can reach; measured before and
//                  after the other schemes of a row, and the better of the two is the reference
//   qt             the standard Qt scheme: one QObject worker per QThread; the controller (main
//                  thread) invokes each task on a worker's slot queued, the worker emits the
//                  result back over Qt::QueuedConnection
//   tbb-queued     workers pop tasks from a tbb::concurrent_bounded_queue and emit the result
//                  over Qt::QueuedConnection
//   tbb-relay      the same, but workers push results into a second TBB queue; one relay
//                  thread pops them and re-emits over Qt::QueuedConnection (the published fix)
//   funnel         workers take tasks from the atomic counter, like the ceiling, and emit over
//                  a FunnelConnection: only the result path differs from the ceiling
//   funnel-batched the same through QtFastConnect::connectBatched(): one slot call per batch
//   timer-buffer   what applications build by hand: workers append results to a vector under a
//                  mutex, a 16 ms QTimer in the main thread takes them all at once
//   future-watcher what Qt offers: one QtConcurrent::run() task per worker (a QThreadPool of
//                  N threads) calls QPromise::addResult(), QFutureWatcher::resultsReadyAt()
//                  reports them in the main thread (where Qt has QtConcurrent)
//
//   tst_bench_manyproducers                    every row; cleanupTestCase() prints results/s and
//                                              efficiency (results/s / ceiling) per block size
//   QFC_BENCH_QUICK=1                threads 1, 2, 8, 32 only, shorter passes
//   QFC_BENCH_CSV=<file>             also appends every result to <file> as CSV

#include "benchcsv.h"
#include "fnv1a.h"

#include <QtFastConnect/qfastconnect.h>
#ifdef QFC_HAVE_CONCURRENT
#include <QtConcurrent/qtconcurrentrun.h>
#include <QtCore/qfuturewatcher.h>
#include <QtCore/qpromise.h>
#include <QtCore/qthreadpool.h>
#endif
#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qrandom.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <tbb/concurrent_queue.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {

enum class Scheme {
    Ceiling,
    Qt,
    TbbQueued,
    TbbRelay,
    Funnel,
    FunnelBatched,
    TimerBuffer,
    FutureWatcher
};

struct SchemeInfo
{
    Scheme scheme;
    const char *arg; // series name in the CSV output
    const char *label;
};

static constexpr SchemeInfo SchemeTable[] = {
    { Scheme::Ceiling, "ceiling", "ceiling (no delivery)" },
    { Scheme::Qt, "qt", "standard Qt scheme" },
    { Scheme::TbbQueued, "tbb-queued", "TBB task queue, emit queued" },
    { Scheme::TbbRelay, "tbb-relay", "TBB queues + relay thread" },
    { Scheme::Funnel, "funnel", "FunnelConnection" },
    { Scheme::FunnelBatched, "funnel-batched", "connectBatched" },
    { Scheme::TimerBuffer, "timer-buffer", "vector + mutex, 16 ms QTimer" },
#ifdef QFC_HAVE_CONCURRENT
    { Scheme::FutureWatcher, "future-watcher", "QtConcurrent + QFutureWatcher" },
#endif
};

static bool quickMode()
{
    return qEnvironmentVariableIntValue("QFC_BENCH_QUICK") != 0;
}

// The input: random bytes cut into blocks; task t hashes block t % blockCount. Each block's hash
// is known in advance, so every pass is checked against what it must deliver.
class Workload
{
public:
    static constexpr qsizetype DataBytes = 8 << 20;

    explicit Workload(qsizetype blockSize) : m_blockSize(blockSize)
    {
        m_data.resize(DataBytes);
        QRandomGenerator random(20261121);
        random.fillRange(reinterpret_cast<quint32 *>(m_data.data()), DataBytes / 4);
        m_blockCount = DataBytes / blockSize;
        for (qsizetype i = 0; i < m_blockCount; ++i)
            m_hashes.push_back(hash(int(i)));
    }

    quint64 hash(int task) const
    {
        const qsizetype block = task % m_blockCount;
        return qFnv1a64(QByteArrayView(m_data.constData() + block * m_blockSize, m_blockSize));
    }
    quint64 expectedHash(int task) const { return m_hashes[size_t(task % m_blockCount)]; }

private:
    QByteArray m_data;
    qsizetype m_blockSize;
    qsizetype m_blockCount = 0;
    std::vector<quint64> m_hashes;
};

// Results: count and XOR, which does not depend on the order in which they arrive.
struct Tally
{
    quint64 count = 0;
    quint64 checksum = 0;
    void add(quint64 h)
    {
        ++count;
        checksum ^= h;
    }
};

class Emitter : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void result(quint64 hash);
};

// The receiver in the main thread: it only tallies, so that the scheme is what gets measured.
class Sink : public QObject
{
    Q_OBJECT
public:
    void onResult(quint64 hash)
    {
        tally.add(hash);
        if (tally.count == target && loop)
            loop->quit();
    }
    void onResults(QList<quint64> hashes) { addAll(hashes.cbegin(), hashes.cend()); }
    template<typename It>
    void addAll(It first, It last)
    {
        for (; first != last; ++first)
            tally.add(*first);
        if (tally.count == target && loop)
            loop->quit();
    }

    Tally tally;
    quint64 target = 0;
    QEventLoop *loop = nullptr;
};

// The standard Qt scheme's worker: a QObject in its own QThread, driven by queued invocations.
class HashWorker : public QObject
{
    Q_OBJECT
public:
    explicit HashWorker(const Workload &workload) : m_workload(workload) {}

public Q_SLOTS:
    void hashTask(int task) { Q_EMIT result(m_workload.hash(task)); }

Q_SIGNALS:
    void result(quint64 hash);

private:
    const Workload &m_workload;
};

// Threads started once per row and parked between passes, so that a pass measures hashing and
// delivery, not thread creation. Each pass runs body(worker index) on every thread. The hand-off
// uses std::mutex and std::condition_variable, whose ordering ThreadSanitizer sees.
class ThreadPool
{
    Q_DISABLE_COPY_MOVE(ThreadPool)
public:
    explicit ThreadPool(int count)
    {
        for (int i = 0; i < count; ++i)
            m_threads.emplace_back([this, i] { run(i); });
    }
    ~ThreadPool()
    {
        {
            std::lock_guard<std::mutex> lock(m_lock);
            m_quit = true;
        }
        m_wake.notify_all();
        for (auto &t : m_threads)
            t.join();
    }
    int size() const { return int(m_threads.size()); }
    void setBody(std::function<void(int)> body) { m_body = std::move(body); }
    // The lock publishes m_body and the caller's pass state to the workers.
    void startPass()
    {
        {
            std::lock_guard<std::mutex> lock(m_lock);
            ++m_pass;
            m_running = size();
        }
        m_wake.notify_all();
    }
    void waitPass()
    {
        std::unique_lock<std::mutex> lock(m_lock);
        m_finished.wait(lock, [this] { return m_running == 0; });
    }

private:
    void run(int index)
    {
        quint64 seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(m_lock);
                m_wake.wait(lock, [&] { return m_quit || m_pass != seen; });
                if (m_quit)
                    return;
                seen = m_pass;
            }
            m_body(index);
            std::lock_guard<std::mutex> lock(m_lock);
            if (--m_running == 0)
                m_finished.notify_one();
        }
    }

    std::vector<std::thread> m_threads; // plain threads: workers need no event loop
    std::function<void(int)> m_body;
    std::mutex m_lock;
    std::condition_variable m_wake;
    std::condition_variable m_finished;
    quint64 m_pass = 0; // guarded by m_lock
    int m_running = 0; // guarded by m_lock
    bool m_quit = false; // guarded by m_lock
};

// One row: a scheme set up for a number of threads and a block size, able to run passes.
class SchemeRun
{
    Q_DISABLE_COPY_MOVE(SchemeRun)
public:
    // A pass that receives nothing for this long has lost results: fail rather than hang.
    static constexpr int StallTimeoutMs = 60000;

    SchemeRun(Scheme scheme, int threads, const Workload &workload, int tasksPerPass)
        : m_scheme(scheme), m_threads(threads), m_workload(workload), m_tasks(tasksPerPass)
    {
        for (int t = 0; t < m_tasks; ++t)
            m_expected.add(workload.expectedHash(t));
        m_sink.loop = &m_loop;

        if (scheme == Scheme::Qt) {
            for (int i = 0; i < threads; ++i) {
                auto thread = std::make_unique<QThread>();
                auto *worker = new HashWorker(workload);
                worker->moveToThread(thread.get());
                QObject::connect(thread.get(), &QThread::finished, worker, &QObject::deleteLater);
                QObject::connect(worker, &HashWorker::result, &m_sink, &Sink::onResult,
                                 Qt::QueuedConnection);
                thread->start();
                m_qtWorkers.push_back(worker);
                m_qtThreads.push_back(std::move(thread));
            }
            return;
        }

#ifdef QFC_HAVE_CONCURRENT
        if (scheme == Scheme::FutureWatcher) {
            m_qtPool.setMaxThreadCount(threads);
            for (int i = 0; i < threads; ++i) {
                m_watchers.push_back(std::make_unique<QFutureWatcher<quint64>>());
                QFutureWatcher<quint64> *w = m_watchers.back().get();
                QObject::connect(w, &QFutureWatcherBase::resultsReadyAt, &m_sink,
                                 [this, w](int begin, int end) {
                                     const QFuture<quint64> f = w->future();
                                     for (int r = begin; r < end; ++r)
                                         m_sink.tally.add(f.resultAt(r));
                                     if (m_sink.tally.count == m_sink.target)
                                         m_loop.quit();
                                 });
            }
            return;
        }
#endif
        if (scheme == Scheme::TimerBuffer) {
            QObject::connect(&m_drainTimer, &QTimer::timeout, &m_sink, [this] {
                std::vector<quint64> taken;
                {
                    std::lock_guard<std::mutex> lock(m_bufferLock);
                    taken.swap(m_buffer);
                }
                m_sink.addAll(taken.cbegin(), taken.cend());
            });
            m_drainTimer.start(16);
        }
        // The relay scheme has one thread more than it has workers: the relay.
        const int poolSize = scheme == Scheme::TbbRelay ? threads + 1 : threads;
        m_emitters.resize(size_t(poolSize));
        for (auto &e : m_emitters) {
            e = std::make_unique<Emitter>();
            if (scheme == Scheme::Funnel) {
                m_connected &= bool(QtFastConnect::connect(e.get(), &Emitter::result, &m_sink,
                                                           &Sink::onResult));
            } else if (scheme == Scheme::FunnelBatched) {
                m_connected &= bool(QtFastConnect::connectBatched(e.get(), &Emitter::result,
                                                                  &m_sink, &Sink::onResults));
            } else if (scheme != Scheme::Ceiling && scheme != Scheme::TimerBuffer) {
                m_connected &= bool(QObject::connect(e.get(), &Emitter::result, &m_sink,
                                                     &Sink::onResult, Qt::QueuedConnection));
            }
        }
        m_pool = std::make_unique<ThreadPool>(poolSize);
        m_pool->setBody([this](int index) { work(index); });
    }

    ~SchemeRun()
    {
        m_pool.reset();
#ifdef QFC_HAVE_CONCURRENT
        m_qtPool.waitForDone();
#endif
        for (auto &thread : m_qtThreads) {
            thread->quit();
            thread->wait();
        }
    }

    bool connected() const
    {
        return m_connected;
    }

    // Runs one pass of m_tasks tasks; false if it delivered a wrong tally or stalled.
    bool runPass()
    {
        m_sink.tally = Tally();
        m_sink.target = m_scheme == Scheme::Ceiling ? 0 : quint64(m_tasks);
        m_folded = Tally();
        m_next.store(0, std::memory_order_relaxed);

        switch (m_scheme) {
        case Scheme::Qt:
            for (int t = 0; t < m_tasks; ++t) {
                QMetaObject::invokeMethod(m_qtWorkers[size_t(t % m_threads)], "hashTask",
                                          Qt::QueuedConnection, Q_ARG(int, t));
            }
            break;
#ifdef QFC_HAVE_CONCURRENT
        case Scheme::FutureWatcher:
            for (auto &w : m_watchers) {
                w->setFuture(QtConcurrent::run(&m_qtPool, [this](QPromise<quint64> &promise) {
                    for (int t; (t = m_next.fetch_add(1, std::memory_order_relaxed)) < m_tasks;)
                        promise.addResult(m_workload.hash(t));
                }));
            }
            break;
#endif
        case Scheme::TbbQueued:
        case Scheme::TbbRelay:
            m_pool->startPass();
            for (int t = 0; t < m_tasks; ++t)
                m_taskQueue.push(t);
            for (int i = 0; i < m_threads; ++i)
                m_taskQueue.push(-1); // one end-of-pass marker per worker
            break;
        default:
            m_pool->startPass();
            break;
        }

        if (m_scheme != Scheme::Ceiling) {
            QTimer watchdog;
            watchdog.setSingleShot(true);
            QObject::connect(&watchdog, &QTimer::timeout, &m_loop, &QEventLoop::quit);
            watchdog.start(StallTimeoutMs);
            // The slot only runs inside this loop, so it cannot reach the target before exec().
            if (m_sink.tally.count < m_sink.target)
                m_loop.exec();
            if (m_sink.tally.count != m_sink.target)
                return false; // stalled: the workers may still be blocked, leave them be
        }
        if (m_pool)
            m_pool->waitPass();
#ifdef QFC_HAVE_CONCURRENT
        m_qtPool.waitForDone();
#endif
        const Tally &got = m_scheme == Scheme::Ceiling ? m_folded : m_sink.tally;
        return got.count == m_expected.count && got.checksum == m_expected.checksum;
    }

private:
    // Worker threads (and, for TbbRelay, the relay as the last index).
    void work(int index)
    {
        Emitter *emitter = m_emitters[size_t(index)].get();
        switch (m_scheme) {
        case Scheme::Ceiling: {
            Tally local;
            for (int t; (t = m_next.fetch_add(1, std::memory_order_relaxed)) < m_tasks;)
                local.add(m_workload.hash(t));
            std::lock_guard<std::mutex> lock(m_foldLock);
            m_folded.count += local.count;
            m_folded.checksum ^= local.checksum;
            break;
        }
        case Scheme::Funnel:
        case Scheme::FunnelBatched:
            for (int t; (t = m_next.fetch_add(1, std::memory_order_relaxed)) < m_tasks;)
                Q_EMIT emitter->result(m_workload.hash(t));
            break;
        case Scheme::TimerBuffer:
            for (int t; (t = m_next.fetch_add(1, std::memory_order_relaxed)) < m_tasks;) {
                const quint64 h = m_workload.hash(t);
                std::lock_guard<std::mutex> lock(m_bufferLock);
                m_buffer.push_back(h);
            }
            break;
        case Scheme::TbbQueued:
            for (int t;;) {
                m_taskQueue.pop(t);
                if (t < 0)
                    break;
                Q_EMIT emitter->result(m_workload.hash(t));
            }
            break;
        case Scheme::TbbRelay:
            if (index == m_threads) {
                // The relay: exactly one pass worth of results, re-emitted one by one.
                for (int i = 0; i < m_tasks; ++i) {
                    quint64 h;
                    m_resultQueue.pop(h);
                    Q_EMIT emitter->result(h);
                }
                break;
            }
            for (int t;;) {
                m_taskQueue.pop(t);
                if (t < 0)
                    break;
                m_resultQueue.push(m_workload.hash(t));
            }
            break;
        case Scheme::Qt:
        case Scheme::FutureWatcher:
            break;
        }
    }

    const Scheme m_scheme;
    const int m_threads;
    const Workload &m_workload;
    const int m_tasks;
    Tally m_expected;

    Sink m_sink;
    QEventLoop m_loop;
    bool m_connected = true;

    std::vector<std::unique_ptr<Emitter>> m_emitters;
    std::unique_ptr<ThreadPool> m_pool;
    alignas(64) std::atomic<int> m_next { 0 };
    tbb::concurrent_bounded_queue<int> m_taskQueue;
    tbb::concurrent_bounded_queue<quint64> m_resultQueue;
    std::mutex m_foldLock;
    Tally m_folded;

    std::mutex m_bufferLock; // TimerBuffer
    std::vector<quint64> m_buffer;
    QTimer m_drainTimer;
#ifdef QFC_HAVE_CONCURRENT
    QThreadPool m_qtPool; // FutureWatcher
    std::vector<std::unique_ptr<QFutureWatcher<quint64>>> m_watchers;
#endif

    std::vector<HashWorker *> m_qtWorkers; // each deleted in its thread when it finishes
    std::vector<std::unique_ptr<QThread>> m_qtThreads;
};

} // namespace

class tst_BenchManyProducers : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void results_data();
    void results();
    void cleanupTestCase();

private:
    struct Measurement
    {
        quint64 results = 0;
        qint64 nsecs = 0;
        double perSecond() const { return nsecs > 0 ? double(results) * 1e9 / double(nsecs) : 0; }
    };
    // block size -> threads -> scheme
    std::map<int, std::map<int, std::map<Scheme, Measurement>>> m_results;
    std::map<int, std::unique_ptr<Workload>> m_workloads;
};

static const int BlockSizes[] = { 256, 1024, 16 * 1024, 100 * 1024 };

static QByteArray sizeName(int bytes)
{
    return bytes >= 1024 ? QByteArray::number(bytes / 1024) + "KiB"
                         : QByteArray::number(bytes) + "B";
}

void tst_BenchManyProducers::results_data()
{
    QTest::addColumn<int>("blockSize");
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("scheme");
    const std::vector<int> threadCounts = quickMode() ? std::vector<int> { 1, 2, 8, 32 }
                                                      : std::vector<int> { 1, 2, 4, 8, 16, 32 };
    for (int size : BlockSizes) {
        for (int threads : threadCounts) {
            for (const SchemeInfo &info : SchemeTable) {
                QTest::addRow("%s/%d/%s", sizeName(size).constData(), threads, info.arg)
                        << size << threads << int(info.scheme);
            }
            // The ceiling once more after the schemes: efficiency is taken against the better
            // of the two, so that a burst of other work on the machine during one short
            // ceiling row does not flatter every scheme of that row.
            QTest::addRow("%s/%d/ceiling-again", sizeName(size).constData(), threads)
                    << size << threads << int(Scheme::Ceiling);
        }
    }
}

void tst_BenchManyProducers::results()
{
    QFETCH(int, blockSize);
    QFETCH(int, threads);
    QFETCH(int, scheme);

    std::unique_ptr<Workload> &workload = m_workloads[blockSize];
    if (!workload)
        workload = std::make_unique<Workload>(blockSize);
    // A pass hashes about 2 MiB (quick) or 8 MiB, and at least 64 tasks.
    const qsizetype passBytes = quickMode() ? (2 << 20) : (8 << 20);
    const int tasks = int(std::max<qsizetype>(64, passBytes / blockSize));

    SchemeRun run(Scheme(scheme), threads, *workload, tasks);
    QVERIFY(run.connected());
    QVERIFY2(run.runPass(), "warm-up pass: wrong or missing results");

    Measurement m;
    bool ok = true;
    QBENCHMARK {
        QElapsedTimer clock;
        clock.start();
        ok &= run.runPass();
        m.nsecs += clock.nsecsElapsed();
        m.results += quint64(tasks);
    }
    QVERIFY2(ok, "a pass delivered wrong or missing results");

    Measurement &best = m_results[blockSize][threads][Scheme(scheme)];
    if (m.perSecond() > best.perSecond())
        best = m;
}

void tst_BenchManyProducers::cleanupTestCase()
{
    for (const auto &[size, byThreads] : m_results) {
        qInfo("%s tasks: results/s (efficiency = results/s / ceiling), measured in this run",
              sizeName(size).constData());
        QByteArray header = "threads";
        for (const SchemeInfo &info : SchemeTable)
            header += "  " + QByteArray(info.arg).rightJustified(20);
        qInfo("%s", header.constData());
        for (const auto &[threads, row] : byThreads) {
            const auto ceiling = row.find(Scheme::Ceiling);
            const double ceilingRate = ceiling == row.end() ? 0 : ceiling->second.perSecond();
            QByteArray line = QByteArray::number(threads).rightJustified(7);
            for (const SchemeInfo &info : SchemeTable) {
                const auto it = row.find(info.scheme);
                QByteArray cell = "-";
                if (it != row.end()) {
                    const double rate = it->second.perSecond();
                    cell = QByteArray::number(rate / 1e3, 'f', 1) + " k";
                    if (ceilingRate > 0 && info.scheme != Scheme::Ceiling)
                        cell += " (" + QByteArray::number(100 * rate / ceilingRate, 'f', 0) + "%)";
                    BenchCsv::write("many-producers", info.arg, threads, size, "results_per_s",
                                    rate);
                }
                line += "  " + cell.rightJustified(20);
            }
            qInfo("%s", line.constData());
        }
    }
    m_workloads.clear();
}

QTEST_GUILESS_MAIN(tst_BenchManyProducers)

#include "tst_bench_manyproducers.moc"
