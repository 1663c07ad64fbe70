// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "floodrow.h"

#include "percentiles.h"
#include "processmemory.h"
#include "valuesender.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qfile.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtGui/qpainter.h>
#include <QtWidgets/qwidget.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace {

constexpr int Producers = 8;
constexpr int FrameIntervalMs = 16;
constexpr int WarmUpMs = 300;
constexpr int DrainTimeoutMs = 120000;

using Clock = std::chrono::steady_clock;

qint64 nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count();
}

class Receiver : public QObject
{
    Q_OBJECT
public:
    void onValue(quint64 v)
    {
        if (slotNs > 0) { // a slot with real work: busy, not sleeping
            const auto end = Clock::now() + std::chrono::nanoseconds(slotNs);
            while (Clock::now() < end) {}
        }
        sum += v;
        // Only this thread writes; the monitor thread reads it.
        delivered.store(delivered.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    qint64 slotNs = 0;
    quint64 sum = 0;
    std::atomic<quint64> delivered { 0 };
};

// The GUI: repainted by a timer, each paint event timestamped.
class FrameWidget : public QWidget
{
public:
    std::vector<qint64> paintedNs;

protected:
    void paintEvent(QPaintEvent *) override
    {
        paintedNs.push_back(nowNs());
        QPainter p(this);
        p.fillRect(rect(), paintedNs.size() % 2 ? Qt::darkCyan : Qt::darkBlue);
    }
};

struct alignas(64) ProducerCount
{
    std::atomic<quint64> emitted { 0 }; // written by its producer only
};

const std::array<std::pair<FloodConnection, const char *>, 5> ConnectionNames = { {
        { FloodConnection::QtQueued, "qt-queued" },
        { FloodConnection::Funnel, "funnel" },
        { FloodConnection::FunnelCapacity4096, "funnel-capacity-4096" },
        { FloodConnection::FunnelCoalesce, "funnel-coalesce" },
        { FloodConnection::FunnelRateLimit, "funnel-rate-limit" },
} };

} // namespace

QByteArray floodConnectionName(FloodConnection connection)
{
    for (const auto &[c, name] : ConnectionNames) {
        if (c == connection)
            return name;
    }
    return {};
}

std::optional<FloodConnection> floodConnectionFromName(const QByteArray &name)
{
    for (const auto &[c, n] : ConnectionNames) {
        if (name == n)
            return c;
    }
    return std::nullopt;
}

QByteArray FloodRowResult::toLine() const
{
    return QByteArray("frames=") + QByteArray::number(frames)
            + " median_ms=" + QByteArray::number(medianMs) + " p99_ms=" + QByteArray::number(p99Ms)
            + " max_ms=" + QByteArray::number(maxMs)
            + " calls_per_s=" + QByteArray::number(callsPerSecond, 'f', 0)
            + " emitted_per_s=" + QByteArray::number(emittedPerSecond, 'f', 0)
            + " rss_growth_mib=" + QByteArray::number(rssGrowthMiB) + " pending_at_stop="
            + QByteArray::number(pendingAtStop, 'f', 0) + " drain_ms=" + QByteArray::number(drainMs)
            + " flood_ms=" + QByteArray::number(floodMs) + " ceiling="
            + QByteArray::number(int(ceilingHit)) + " drained=" + QByteArray::number(int(drained));
}

std::optional<FloodRowResult> FloodRowResult::fromLine(const QByteArray &line)
{
    FloodRowResult r;
    int seen = 0;
    for (const QByteArray &field : line.trimmed().split(' ')) {
        const qsizetype eq = field.indexOf('=');
        if (eq < 0)
            continue;
        const QByteArray key = field.left(eq);
        const double v = field.mid(eq + 1).toDouble();
        double *fields[] = {
            &r.medianMs,     &r.p99Ms,         &r.maxMs,   &r.callsPerSecond, &r.emittedPerSecond,
            &r.rssGrowthMiB, &r.pendingAtStop, &r.drainMs, &r.floodMs
        };
        const char *names[] = { "median_ms",       "p99_ms",        "max_ms",
                                "calls_per_s",     "emitted_per_s", "rss_growth_mib",
                                "pending_at_stop", "drain_ms",      "flood_ms" };
        for (size_t i = 0; i < std::size(names); ++i) {
            if (key == names[i]) {
                *fields[i] = v;
                ++seen;
            }
        }
        if (key == "frames") {
            r.frames = int(v);
            ++seen;
        } else if (key == "ceiling") {
            r.ceilingHit = v != 0;
            ++seen;
        } else if (key == "drained") {
            r.drained = v != 0;
            ++seen;
        }
    }
    return seen == 12 ? std::optional(r) : std::nullopt;
}

FloodRowResult runFloodRow(const FloodRowOptions &options)
{
    FrameWidget widget;
    widget.resize(320, 240);
    widget.show();
    QTimer frameTimer;
    frameTimer.setTimerType(Qt::PreciseTimer); // the interval is what is measured
    QObject::connect(&frameTimer, &QTimer::timeout, &widget, qOverload<>(&QWidget::update));
    frameTimer.start(FrameIntervalMs);
    {
        QEventLoop warmUp; // the window exposed and painting before the flood starts
        QTimer::singleShot(WarmUpMs, &warmUp, &QEventLoop::quit);
        warmUp.exec();
    }

    Receiver receiver;
    receiver.slotNs = options.slotNs;
    QFunnel ownFunnel;
    ownFunnel.setCapacity(4096);
    std::array<Sender, Producers> senders;
    std::array<ProducerCount, Producers> counts;
    std::atomic<bool> stop { false };
    std::vector<std::unique_ptr<QThread>> threads;
    QThread *mainThread = QThread::currentThread();
    for (int p = 0; p < Producers; ++p) {
        Sender *s = &senders[size_t(p)];
        bool ok = false;
        switch (options.connection) {
        case FloodConnection::QtQueued:
            ok = QObject::connect(s, &Sender::value, &receiver, &Receiver::onValue,
                                  Qt::QueuedConnection);
            break;
        case FloodConnection::Funnel:
            ok = QtFastConnect::connect(s, &Sender::value, &receiver, &Receiver::onValue);
            break;
        case FloodConnection::FunnelCapacity4096:
            ok = QtFastConnect::connect(&ownFunnel, s, &Sender::value, &receiver,
                                        &Receiver::onValue);
            break;
        case FloodConnection::FunnelCoalesce:
            ok = QtFastConnect::connect(s, &Sender::value, &receiver, &Receiver::onValue,
                                        QtFastConnect::CoalesceCalls);
            break;
        case FloodConnection::FunnelRateLimit:
            ok = QtFastConnect::connect(s, &Sender::value, &receiver, &Receiver::onValue,
                                        QtFastConnect::RateLimitCalls);
            break;
        }
        Q_ASSERT(ok);
        Q_UNUSED(ok);
        threads.emplace_back(QThread::create([&, s, p] {
            quint64 n = 0;
            const quint64 tag = quint64(p) << 56;
            while (!stop.load(std::memory_order_relaxed)) { // no pacing at all
                Q_EMIT s->value(tag | n);
                counts[size_t(p)].emitted.store(++n, std::memory_order_relaxed);
            }
            s->moveToThread(mainThread); // destroyed there, with the array
        }));
        s->moveToThread(threads.back().get());
    }

    const bool funnel = options.connection != FloodConnection::QtQueued;
    const QFunnel *usedFunnel = options.connection == FloodConnection::FunnelCapacity4096
            ? &ownFunnel
            : QFunnel::globalInstance();
    auto emitted = [&] {
        quint64 total = 0;
        for (const ProducerCount &c : counts)
            total += c.emitted.load(std::memory_order_relaxed);
        return total;
    };
    // The funnel counts what it holds; Qt's queue is what was emitted and not yet delivered.
    auto pending = [&]() -> double {
        if (funnel)
            return double(usedFunnel->statistics().pending);
        const quint64 e = emitted();
        const quint64 d = receiver.delivered.load(std::memory_order_relaxed);
        return e > d ? double(e - d) : 0;
    };

    FloodRowResult result;
    const double baselineRss = ProcessMemory::residentBytes();
    QEventLoop loop;
    widget.paintedNs.clear();
    const qint64 startNs = nowNs();
    qint64 stopNs = 0;
    quint64 deliveredAtStop = 0;
    quint64 emittedAtStop = 0;
    for (auto &t : threads)
        t->start();

    // The monitor ends the flood and watches the drain from its own thread: the GUI thread may
    // be too swamped to run a timer.
    std::thread monitor([&] {
        const qint64 endNs = startNs + qint64(options.floodMs) * 1000000;
        while (nowNs() < endNs) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
            if (ProcessMemory::residentBytes() - baselineRss > FloodMemoryCeilingBytes) {
                result.ceilingHit = true;
                break;
            }
        }
        stop.store(true, std::memory_order_relaxed);
        stopNs = nowNs();
        deliveredAtStop = receiver.delivered.load(std::memory_order_relaxed);
        emittedAtStop = emitted();
        for (auto &t : threads)
            t->wait(); // a funnel producer may first wait for room; the GUI thread makes it
        const qint64 stoppedNs = nowNs();
        result.pendingAtStop = pending();
        qint64 drainedNs = 0;
        while (nowNs() - stoppedNs < qint64(DrainTimeoutMs) * 1000000) {
            if (pending() == 0) {
                drainedNs = nowNs();
                break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        result.drained = drainedNs != 0;
        result.drainMs = result.drained ? double(drainedNs - stoppedNs) / 1e6 : DrainTimeoutMs;
        QMetaObject::invokeMethod(&loop, &QEventLoop::quit, Qt::QueuedConnection);
    });
    loop.exec();
    monitor.join();
    frameTimer.stop();

    result.floodMs = double(stopNs - startNs) / 1e6;
    result.callsPerSecond = double(deliveredAtStop) * 1e3 / result.floodMs;
    result.emittedPerSecond = double(emittedAtStop) * 1e3 / result.floodMs;
    result.rssGrowthMiB = (ProcessMemory::peakResidentBytes() - baselineRss) / (1 << 20);

    // Intervals between the paints of the flood, plus the first paint after it.
    std::vector<double> intervals;
    qint64 previous = startNs;
    for (qint64 t : widget.paintedNs) {
        intervals.push_back(double(t - previous) / 1e6);
        previous = t;
        if (t > stopNs)
            break;
        ++result.frames;
    }
    const Percentiles pc = Percentiles::of(intervals);
    result.medianMs = pc.median;
    result.p99Ms = pc.p99;
    result.maxMs = pc.max;

    if (!options.framesFile.isEmpty()) {
        QFile file(options.framesFile);
        if (file.open(QIODevice::Append | QIODevice::Text)) {
            const QByteArray prefix = floodConnectionName(options.connection) + ','
                    + QByteArray::number(double(options.slotNs) / 1000) + ',';
            previous = startNs;
            for (qint64 t : widget.paintedNs) {
                file.write(prefix + QByteArray::number(double(t - startNs) / 1e6, 'f', 3) + ','
                           + QByteArray::number(double(t - previous) / 1e6, 'f', 3) + '\n');
                previous = t;
            }
        }
    }
    return result;
}

#include "floodrow.moc"
