// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef LOGWORKERS_H
#define LOGWORKERS_H

#include "logmodel.h"

#include <QtCore/qlist.h>
#include <QtCore/qobject.h>
#include <QtCore/qthread.h>

#include <atomic>
#include <memory>
#include <vector>

// How the workers' rows reach the model.
enum class LogFeed {
    Queued, // a signal per row, Qt::QueuedConnection
    Funnel, // a signal per row, QtFastConnect::connect()
    Batched, // QtFastConnect::connectBatched(): one beginInsertRows() per batch
};

// One worker's signal: a row per result.
class LogEmitter : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void row(const LogRow &row);
};

// N threads producing rows as fast as they can, each through its own emitter, until destroyed.
class LogWorkers
{
    Q_DISABLE_COPY_MOVE(LogWorkers)
public:
    explicit LogWorkers(int count);
    ~LogWorkers();

    void start(); // once connected
    // Stops the workers and waits for them, running the calling thread's events meanwhile: a
    // worker blocked on a full funnel waits for this thread to take its rows.
    void stop();
    // Connects every worker to model through feed, cutting the previous connections.
    void connectTo(LogModel *model, LogFeed feed);
    quint64 emitted() const;

private:
    struct Worker
    {
        LogEmitter emitter;
        std::unique_ptr<QThread> thread;
        std::atomic<quint64> emitted { 0 }; // written by its thread only
    };
    std::vector<std::unique_ptr<Worker>> m_workers;
    QList<QMetaObject::Connection> m_connections;
    std::atomic<bool> m_stop { false };
};

#endif // LOGWORKERS_H
