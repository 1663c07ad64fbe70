// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef SCHEMERUNNER_H
#define SCHEMERUNNER_H

#include "hashworkers.h"

#include <QtCore/qlist.h>
#include <QtCore/qobject.h>
#include <QtCore/qstring.h>

// How results reach the main thread.
enum class QDeliveryScheme {
    None, // each worker folds its own results: the ceiling for any delivery
    Queued, // QObject::connect(..., Qt::QueuedConnection)
    Funnel // QtFastConnect::connect(...), a FunnelConnection
};

struct QMeasurement
{
    quint64 blocks = 0;
    qint64 nanoseconds = 0;
    int passes = 0;

    double blocksPerSecond() const { return nanoseconds > 0 ? blocks * 1e9 / nanoseconds : 0.0; }
};

// The receiver, in the main thread. Its slot runs once per block, so it does nothing but tally:
// any extra work here would be charged to the delivery scheme being measured.
class QResultSink : public QObject
{
    Q_OBJECT
public:
    void reset() { m_tally = QHashTally(); }
    const QHashTally &tally() const { return m_tally; }

public Q_SLOTS:
    void onBlockHashed(quint64 hash) { m_tally.add(hash); }

private:
    QHashTally m_tally;
};

// Measures one delivery scheme on one worker pool: passes over the whole block set until the
// minimum time has elapsed, each pass checked against the reference tally.
class QSchemeRunner
{
public:
    // A pass that receives nothing for this long has lost results; fail rather than hang.
    static constexpr int StallTimeoutMs = 10000;

    QSchemeRunner(QHashWorkerPool &pool, const QHashTally &reference, double minSeconds);

    static QString name(QDeliveryScheme scheme);

    // Returns false, with *errorMessage set, if a pass produced a wrong tally or stalled.
    bool measure(QDeliveryScheme scheme, QMeasurement *result, QString *errorMessage);

private:
    bool connectReporters(QDeliveryScheme scheme, QList<QMetaObject::Connection> *connections);
    bool runDeliveryPass(QHashTally *tally);

    QHashWorkerPool &m_pool;
    const QHashTally m_reference;
    const qint64 m_minNanoseconds;
    QResultSink m_sink;
};

#endif // SCHEMERUNNER_H
