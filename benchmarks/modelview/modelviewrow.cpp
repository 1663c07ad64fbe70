// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "modelviewrow.h"

#include "logmodel.h"
#include "percentiles.h"
#include "processmemory.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtFastConnect/qfunnel.h>
#include <QtConcurrent/qtconcurrentrun.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qfuturewatcher.h>
#include <QtCore/qmutex.h>
#include <QtCore/qpromise.h>
#include <QtCore/qthread.h>
#include <QtCore/qthreadpool.h>
#include <QtCore/qtimer.h>

#include <pthread.h>
#include <time.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {

constexpr int TimerIntervalMs = 16;
constexpr int ExposeMs = 300;
constexpr int DrainTimeoutMs = 60000;
constexpr double MemoryCeilingBytes = 1024.0 * 1024 * 1024;

qint64 nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

qint64 threadCpuNs(clockid_t clock)
{
    timespec ts {};
    clock_gettime(clock, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class RowSender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void row(const LogRow &row);
};

struct alignas(64) ProducerCount
{
    std::atomic<quint64> emitted { 0 }; // written by its producer only
};

LogRow makeRow(int producer, int seq)
{
    return LogRow { producer, seq, seq * 0.5, QString::number(seq) };
}

const std::array<std::pair<RowFeed, const char *>, 9> FeedNames = { {
        { RowFeed::QtQueued, "qt-queued" },
        { RowFeed::Funnel, "funnel" },
        { RowFeed::QtQueuedNoView, "qt-queued-noview" },
        { RowFeed::FunnelNoView, "funnel-noview" },
        { RowFeed::TimerBuffer, "timer-buffer" },
        { RowFeed::FutureWatcher, "future-watcher" },
        { RowFeed::FunnelBatched, "funnel-batched" },
        { RowFeed::FunnelBatchedRateLimited, "funnel-batched-ratelimit" },
        { RowFeed::FunnelBatchedInvoke, "funnel-batched-invoke" },
} };

const ModelViewMetric Fields[] = {
    { "rows_per_s", &ModelViewResult::rowsPerSecond },
    { "gui_ns_per_row", &ModelViewResult::guiCpuNsPerRow },
    { "timer_p50_ms", &ModelViewResult::timerP50Ms },
    { "timer_p99_ms", &ModelViewResult::timerP99Ms },
    { "timer_max_ms", &ModelViewResult::timerMaxMs },
    { "paint_p99_ms", &ModelViewResult::paintP99Ms },
    { "layouts_per_s", &ModelViewResult::layoutsPerSecond },
    { "paints_per_s", &ModelViewResult::paintsPerSecond },
    { "backlog", &ModelViewResult::backlog },
    { "rss_growth_mib", &ModelViewResult::rssGrowthMiB },
    { "drain_ms", &ModelViewResult::drainMs },
    { "missing", &ModelViewResult::missing },
    { "order_errors", &ModelViewResult::orderErrors },
    { "ceiling", &ModelViewResult::ceiling },
};

bool hasView(RowFeed feed)
{
    return feed != RowFeed::QtQueuedNoView && feed != RowFeed::FunnelNoView;
}

} // namespace

QByteArray rowFeedName(RowFeed feed)
{
    for (const auto &[f, name] : FeedNames) {
        if (f == feed)
            return name;
    }
    return {};
}

std::optional<RowFeed> rowFeedFromName(const QByteArray &name)
{
    for (const auto &[f, n] : FeedNames) {
        if (name == n)
            return f;
    }
    return std::nullopt;
}

QList<RowFeed> allRowFeeds()
{
    QList<RowFeed> feeds;
    for (const auto &[f, n] : FeedNames)
        feeds.append(f);
    return feeds;
}

QList<ModelViewMetric> modelViewMetrics()
{
    return QList<ModelViewMetric>(std::begin(Fields), std::end(Fields));
}

QByteArray ModelViewResult::toLine() const
{
    QByteArray line;
    for (const ModelViewMetric &f : Fields)
        line += QByteArray(f.name) + '=' + QByteArray::number(this->*f.member, 'g', 10) + ' ';
    return line.trimmed();
}

std::optional<ModelViewResult> ModelViewResult::fromLine(const QByteArray &line)
{
    ModelViewResult r;
    size_t seen = 0;
    for (const QByteArray &field : line.trimmed().split(' ')) {
        const qsizetype eq = field.indexOf('=');
        for (const ModelViewMetric &f : Fields) {
            if (eq > 0 && field.left(eq) == f.name) {
                r.*f.member = field.mid(eq + 1).toDouble();
                ++seen;
            }
        }
    }
    return seen == std::size(Fields) ? std::optional(r) : std::nullopt;
}

ModelViewResult runModelViewRow(const ModelViewOptions &options)
{
    const int producers = options.producers;
    LogModel model(producers);
    std::unique_ptr<CountingListView> view;
    if (hasView(options.feed)) {
        view = std::make_unique<CountingListView>();
        view->setModel(&model);
        view->resize(480, 640);
        view->show();
    }
    std::vector<qint64> ticksNs;
    ticksNs.reserve(size_t(options.warmUpMs + options.measureMs + DrainTimeoutMs) / 8);
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer); // its lateness is what is measured
    QObject::connect(&tick, &QTimer::timeout, [&ticksNs] { ticksNs.push_back(nowNs()); });
    tick.start(TimerIntervalMs);
    {
        QEventLoop expose; // the window exposed and painting before the rows come
        QTimer::singleShot(ExposeMs, &expose, &QEventLoop::quit);
        expose.exec();
    }

    std::atomic<bool> stop { false };
    std::vector<ProducerCount> counts(static_cast<size_t>(producers));
    auto emitted = [&counts] {
        quint64 total = 0;
        for (const ProducerCount &c : counts)
            total += c.emitted.load(std::memory_order_relaxed);
        return total;
    };
    QThread *mainThread = QThread::currentThread();

    // Feeds: each sets up its producers' loop in threads (or the pool's tasks).
    std::vector<std::unique_ptr<RowSender>> senders;
    std::vector<std::unique_ptr<QThread>> threads;
    QMutex bufferLock;
    std::vector<LogRow> buffer;
    QTimer drainTimer;
    QThreadPool pool;
    std::vector<std::unique_ptr<QFutureWatcher<LogRow>>> watchers;

    switch (options.feed) {
    case RowFeed::QtQueued:
    case RowFeed::QtQueuedNoView:
    case RowFeed::Funnel:
    case RowFeed::FunnelNoView:
    case RowFeed::FunnelBatched:
    case RowFeed::FunnelBatchedRateLimited:
        for (int p = 0; p < producers; ++p) {
            senders.push_back(std::make_unique<RowSender>());
            RowSender *s = senders.back().get();
            bool ok = false;
            if (options.feed == RowFeed::FunnelBatched)
                ok = QtFastConnect::connectBatched(s, &RowSender::row, &model,
                                                   &LogModel::appendRows);
            else if (options.feed == RowFeed::FunnelBatchedRateLimited)
                ok = QtFastConnect::connectBatched(s, &RowSender::row, &model,
                                                   &LogModel::appendRows,
                                                   QtFastConnect::RateLimitCalls);
            else if (options.feed == RowFeed::Funnel || options.feed == RowFeed::FunnelNoView)
                ok = QtFastConnect::connect(s, &RowSender::row, &model, &LogModel::appendRow);
            else
                ok = QObject::connect(s, &RowSender::row, &model, &LogModel::appendRow,
                                      Qt::QueuedConnection);
            Q_ASSERT(ok);
            Q_UNUSED(ok);
            std::atomic<quint64> *count = &counts[size_t(p)].emitted;
            threads.emplace_back(QThread::create([s, p, count, &stop, mainThread] {
                int seq = 0;
                while (!stop.load(std::memory_order_relaxed)) {
                    Q_EMIT s->row(makeRow(p, seq));
                    count->store(quint64(++seq), std::memory_order_relaxed);
                }
                QtFastConnect::flush(); // this thread's rows before its finished()
                s->moveToThread(mainThread); // destroyed there
            }));
            s->moveToThread(threads.back().get());
        }
        break;
    case RowFeed::FunnelBatchedInvoke:
        for (int p = 0; p < producers; ++p) {
            std::atomic<quint64> *count = &counts[size_t(p)].emitted;
            threads.emplace_back(QThread::create([p, count, &stop, &model] {
                int seq = 0;
                while (!stop.load(std::memory_order_relaxed)) {
                    QtFastConnect::invokeBatched(&model, &LogModel::appendRows, makeRow(p, seq));
                    count->store(quint64(++seq), std::memory_order_relaxed);
                }
                QtFastConnect::flush(); // this thread's rows before its finished()
            }));
        }
        break;
    case RowFeed::TimerBuffer:
        for (int p = 0; p < producers; ++p) {
            std::atomic<quint64> *count = &counts[size_t(p)].emitted;
            threads.emplace_back(QThread::create([p, count, &stop, &bufferLock, &buffer] {
                int seq = 0;
                while (!stop.load(std::memory_order_relaxed)) {
                    LogRow row = makeRow(p, seq);
                    {
                        QMutexLocker locker(&bufferLock);
                        buffer.push_back(std::move(row));
                    }
                    count->store(quint64(++seq), std::memory_order_relaxed);
                }
            }));
        }
        QObject::connect(&drainTimer, &QTimer::timeout, [&] {
            std::vector<LogRow> rows;
            {
                QMutexLocker locker(&bufferLock);
                rows.swap(buffer);
            }
            model.appendRange(std::make_move_iterator(rows.begin()),
                              std::make_move_iterator(rows.end()), qsizetype(rows.size()));
        });
        drainTimer.start(TimerIntervalMs);
        break;
    case RowFeed::FutureWatcher:
        pool.setMaxThreadCount(producers);
        for (int p = 0; p < producers; ++p) {
            std::atomic<quint64> *count = &counts[size_t(p)].emitted;
            watchers.push_back(std::make_unique<QFutureWatcher<LogRow>>());
            QFutureWatcher<LogRow> *watcher = watchers.back().get();
            QObject::connect(watcher, &QFutureWatcherBase::resultsReadyAt, &model,
                             [watcher, &model](int begin, int end) {
                                 const QFuture<LogRow> future = watcher->future();
                                 std::vector<LogRow> rows;
                                 rows.reserve(size_t(end - begin));
                                 for (int i = begin; i < end; ++i)
                                     rows.push_back(future.resultAt(i));
                                 model.appendRange(std::make_move_iterator(rows.begin()),
                                                   std::make_move_iterator(rows.end()),
                                                   qsizetype(rows.size()));
                             });
            // Started below, with the threads of the other feeds.
            watcher->setProperty("producer", p);
            Q_UNUSED(count);
        }
        break;
    }

    const double baselineRss = ProcessMemory::residentBytes();
    const clockid_t guiClock = [] {
        clockid_t c {};
        pthread_getcpuclockid(pthread_self(), &c);
        return c;
    }();
    for (auto &t : threads)
        t->start();
    for (size_t p = 0; p < watchers.size(); ++p) {
        std::atomic<quint64> *count = &counts[p].emitted;
        const int producer = int(p);
        watchers[p]->setFuture(
                QtConcurrent::run(&pool, [producer, count, &stop](QPromise<LogRow> &promise) {
                    int seq = 0;
                    while (!stop.load(std::memory_order_relaxed)) {
                        promise.addResult(makeRow(producer, seq));
                        count->store(quint64(++seq), std::memory_order_relaxed);
                    }
                }));
    }

    ModelViewResult result;
    qint64 windowStartNs = 0;
    qint64 windowEndNs = 0;
    QEventLoop loop;
    // The monitor measures from its own thread: the GUI thread may be too swamped to run a timer.
    std::thread monitor([&] {
        const qint64 startNs = nowNs();
        auto sleepUntil = [&](qint64 t) {
            while (nowNs() < t) {
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                if (ProcessMemory::residentBytes() - baselineRss > MemoryCeilingBytes) {
                    result.ceiling = 1;
                    return false;
                }
            }
            return true;
        };
        const bool warm = sleepUntil(startNs + qint64(options.warmUpMs) * 1000000);
        windowStartNs = nowNs();
        const quint64 rows0 = model.rowsAdded();
        const qint64 cpu0 = threadCpuNs(guiClock);
        const quint64 layouts0 = view ? view->layouts.load(std::memory_order_relaxed) : 0;
        if (warm)
            sleepUntil(windowStartNs + qint64(options.measureMs) * 1000000);
        windowEndNs = nowNs();
        const quint64 rows1 = model.rowsAdded();
        const qint64 cpu1 = threadCpuNs(guiClock);
        const quint64 layouts1 = view ? view->layouts.load(std::memory_order_relaxed) : 0;
        const double seconds = double(windowEndNs - windowStartNs) / 1e9;
        result.rowsPerSecond = double(rows1 - rows0) / seconds;
        result.guiCpuNsPerRow = rows1 > rows0 ? double(cpu1 - cpu0) / double(rows1 - rows0) : 0;
        result.layoutsPerSecond = double(layouts1 - layouts0) / seconds;
        const quint64 e = emitted();
        result.backlog = e > rows1 ? double(e - rows1) : 0;
        result.rssGrowthMiB = (ProcessMemory::peakResidentBytes() - baselineRss) / (1 << 20);

        stop.store(true, std::memory_order_relaxed);
        for (auto &t : threads)
            t->wait(); // a funnel producer may first wait for room; the GUI thread makes it
        pool.waitForDone();
        const qint64 stoppedNs = nowNs();
        const quint64 total = emitted();
        while (model.rowsAdded() < total && nowNs() - stoppedNs < qint64(DrainTimeoutMs) * 1000000)
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        result.drainMs = double(nowNs() - stoppedNs) / 1e6;
        QMetaObject::invokeMethod(&loop, &QEventLoop::quit, Qt::QueuedConnection);
    });
    loop.exec();
    monitor.join();
    // Rows still on their way when the drain timed out are missing; let none arrive later.
    tick.stop();
    drainTimer.stop();
    result.missing = double(qint64(emitted()) - qint64(model.rowsAdded()));
    result.orderErrors = double(model.orderErrors());

    std::vector<double> lateness;
    // Every interval that overlaps the window: one frozen across its end counts too.
    auto overlaps = [&](const std::vector<qint64> &t, size_t i) {
        return t[i] > windowStartNs && t[i - 1] < windowEndNs;
    };
    for (size_t i = 1; i < ticksNs.size(); ++i) {
        if (overlaps(ticksNs, i))
            lateness.push_back(
                    qMax(0.0, double(ticksNs[i] - ticksNs[i - 1]) / 1e6 - TimerIntervalMs));
    }
    const Percentiles late = Percentiles::of(lateness);
    result.timerP50Ms = late.median;
    result.timerP99Ms = late.p99;
    result.timerMaxMs = late.max;
    if (view) {
        std::vector<double> intervals;
        for (size_t i = 1; i < view->paintedNs.size(); ++i) {
            if (overlaps(view->paintedNs, i))
                intervals.push_back(double(view->paintedNs[i] - view->paintedNs[i - 1]) / 1e6);
        }
        result.paintP99Ms = Percentiles::of(intervals).p99;
        result.paintsPerSecond =
                double(intervals.size()) * 1e9 / double(windowEndNs - windowStartNs);
    }
    for (auto &s : senders)
        s->disconnect();
    return result;
}

#include "modelviewrow.moc"
