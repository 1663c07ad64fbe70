// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef FLOODROW_H
#define FLOODROW_H

#include <QtCore/qbytearray.h>
#include <QtCore/qglobal.h>
#include <QtCore/qstring.h>

#include <optional>

// One row of the responsiveness experiment, run in a process of its own (so that its peak RSS
// is its own): a widget repainted every 16 ms while 8 producer threads flood a slot in the GUI
// thread, unpaced, for a fixed time; then they stop and the backlog drains.

enum class FloodConnection {
    QtQueued, // Qt::QueuedConnection
    Funnel, // QtFastConnect::connect(), the global funnel at its defaults
    FunnelCapacity4096, // a QFunnel of its own, setCapacity(4096)
    FunnelCoalesce, // the global funnel, QtFastConnect::CoalesceCalls
    FunnelRateLimit, // the global funnel, QtFastConnect::RateLimitCalls (16 ms)
};

QByteArray floodConnectionName(FloodConnection connection);
std::optional<FloodConnection> floodConnectionFromName(const QByteArray &name);

struct FloodRowOptions
{
    FloodConnection connection = FloodConnection::Funnel;
    qint64 slotNs = 0; // busy time of each slot call
    int floodMs = 5000;
    QString framesFile; // if set: every frame appended as "series,slot_us,t_ms,interval_ms"
};

struct FloodRowResult
{
    int frames = 0; // painted during the flood
    double medianMs = 0; // paint-to-paint interval during the flood (the first paint
    double p99Ms = 0; // after it included, so that a freeze across its end counts)
    double maxMs = 0;
    double callsPerSecond = 0; // delivered during the flood
    double emittedPerSecond = 0; // emitted during it (more than delivered: coalesced, queued)
    double rssGrowthMiB = 0; // peak RSS (VmHWM) minus RSS before the flood
    double pendingAtStop = 0; // once every producer has stopped
    double drainMs = 0; // from then until nothing was pending
    double floodMs = 0; // as run: shorter if the memory ceiling ended it
    bool ceilingHit = false;
    bool drained = false;

    QByteArray toLine() const; // "key=value ..." for the parent process
    static std::optional<FloodRowResult> fromLine(const QByteArray &line);
};

// Producers stop early once RSS has grown by this much: Qt's queue has no bound of its own.
constexpr double FloodMemoryCeilingBytes = 1024.0 * 1024 * 1024;

// Needs a QApplication. Returns when the backlog drained (or after two minutes, drained false).
FloodRowResult runFloodRow(const FloodRowOptions &options);

#endif // FLOODROW_H
