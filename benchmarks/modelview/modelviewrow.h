// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef MODELVIEWROW_H
#define MODELVIEWROW_H

#include <QtCore/qbytearray.h>
#include <QtCore/qglobal.h>
#include <QtCore/qlist.h>

#include <optional>

// One row of the model/view experiment, run in a process of its own (so that its peak RSS is
// its own): P producer threads append log rows, unpaced, to a LogModel shown in a QListView in
// the GUI thread, through one of these feeds; after a warm-up the window is measured, then the
// producers stop and the backlog drains.
enum class RowFeed {
    QtQueued, // a signal per row, Qt::QueuedConnection
    Funnel, // a signal per row, the funnel at its defaults
    QtQueuedNoView, // the same two with no view on the model: the view's share
    FunnelNoView,
    TimerBuffer, // a mutex-guarded vector, drained by a 16 ms QTimer: one insert per drain
    FutureWatcher, // QtConcurrent::run + QPromise::addResult, QFutureWatcher::resultsReadyAt()
    FunnelBatched, // QtFastConnect::connectBatched(): one insert per batch
    FunnelBatchedRateLimited, // the same with RateLimitCalls: at most one batch per 16 ms
    FunnelBatchedInvoke, // QtFastConnect::invokeBatched(): no signal, one insert per batch
};

QByteArray rowFeedName(RowFeed feed);
std::optional<RowFeed> rowFeedFromName(const QByteArray &name);
QList<RowFeed> allRowFeeds();

struct ModelViewOptions
{
    RowFeed feed = RowFeed::Funnel;
    int producers = 4;
    int warmUpMs = 1000;
    int measureMs = 3000;
};

struct ModelViewResult
{
    // In the measured window:
    double rowsPerSecond = 0; // inserted into the model
    double guiCpuNsPerRow = 0; // the GUI thread's CPU time, per row inserted
    double timerP50Ms = 0; // lateness of a 16 ms timer in the GUI thread (interval - 16 ms)
    double timerP99Ms = 0;
    double timerMaxMs = 0;
    double paintP99Ms = 0; // interval between the view's paints (0 without a view)
    double layoutsPerSecond = 0; // the view's item relayouts
    double paintsPerSecond = 0;
    double backlog = 0; // rows emitted and not yet inserted at the window's end
    double rssGrowthMiB = 0; // peak RSS (VmHWM) at the window's end minus RSS before
    // After the producers stopped:
    double drainMs = 0; // until the last row was inserted
    double missing = 0; // rows emitted and never inserted (negative: inserted twice)
    double orderErrors = 0; // rows out of their producer's order
    double ceiling = 0; // 1 if the producers stopped early at +1 GiB RSS

    QByteArray toLine() const;
    static std::optional<ModelViewResult> fromLine(const QByteArray &line);
};

// Every metric of a result, by the name the child's line and the CSV give it.
struct ModelViewMetric
{
    const char *name;
    double ModelViewResult::*member;
};
QList<ModelViewMetric> modelViewMetrics();

// Needs a QApplication.
ModelViewResult runModelViewRow(const ModelViewOptions &options);

#endif // MODELVIEWROW_H
