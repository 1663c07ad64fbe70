// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "logworkers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>

LogWorkers::LogWorkers(int count)
{
    QThread *here = QThread::currentThread();
    for (int p = 0; p < count; ++p) {
        auto w = std::make_unique<Worker>();
        Worker *raw = w.get();
        w->thread.reset(QThread::create([this, raw, p, here] {
            int seq = 0;
            while (!m_stop.load(std::memory_order_relaxed)) {
                Q_EMIT raw->emitter.row(LogRow { p, seq, seq * 0.5, QString::number(seq) });
                raw->emitted.store(quint64(++seq), std::memory_order_relaxed);
            }
            QtFastConnect::flush(); // the rows before the thread's finished()
            raw->emitter.moveToThread(here); // destroyed there
        }));
        w->emitter.moveToThread(w->thread.get());
        m_workers.push_back(std::move(w));
    }
}

void LogWorkers::start()
{
    for (auto &w : m_workers)
        w->thread->start();
}

LogWorkers::~LogWorkers()
{
    stop();
}

void LogWorkers::stop()
{
    m_stop.store(true, std::memory_order_relaxed);
    for (auto &w : m_workers) {
        while (!w->thread->wait(QDeadlineTimer(20)))
            QCoreApplication::processEvents();
    }
}

void LogWorkers::connectTo(LogModel *model, LogFeed feed)
{
    for (const QMetaObject::Connection &c : std::as_const(m_connections))
        QObject::disconnect(c);
    m_connections.clear();
    for (auto &w : m_workers) {
        LogEmitter *e = &w->emitter;
        switch (feed) {
        case LogFeed::Queued:
            m_connections.append(QObject::connect(e, &LogEmitter::row, model, &LogModel::appendRow,
                                                  Qt::QueuedConnection));
            break;
        case LogFeed::Funnel:
            m_connections.append(
                    QtFastConnect::connect(e, &LogEmitter::row, model, &LogModel::appendRow));
            break;
        case LogFeed::Batched:
            m_connections.append(QtFastConnect::connectBatched(e, &LogEmitter::row, model,
                                                               &LogModel::appendRows));
            break;
        }
    }
}

quint64 LogWorkers::emitted() const
{
    quint64 total = 0;
    for (const auto &w : m_workers)
        total += w->emitted.load(std::memory_order_relaxed);
    return total;
}
