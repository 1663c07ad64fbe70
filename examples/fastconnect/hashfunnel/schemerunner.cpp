// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "schemerunner.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qtimer.h>

#include <cmath>

QSchemeRunner::QSchemeRunner(QHashWorkerPool &pool, const QHashTally &reference, double minSeconds)
    : m_pool(pool), m_reference(reference), m_minNanoseconds(qint64(std::ceil(minSeconds * 1e9)))
{}

QString QSchemeRunner::name(QDeliveryScheme scheme)
{
    switch (scheme) {
    case QDeliveryScheme::None:
        return QStringLiteral("ceiling (no delivery)");
    case QDeliveryScheme::Queued:
        return QStringLiteral("Qt::QueuedConnection");
    case QDeliveryScheme::Funnel:
        return QStringLiteral("QtFastConnect::FunnelConnection");
    }
    Q_UNREACHABLE();
    return QString();
}

bool QSchemeRunner::connectReporters(QDeliveryScheme scheme,
                                     QList<QMetaObject::Connection> *connections)
{
    for (int i = 0; i < m_pool.threadCount(); ++i) {
        QHashReporter *reporter = m_pool.reporter(i);
        QMetaObject::Connection c;
        if (scheme == QDeliveryScheme::Queued) {
            c = QObject::connect(reporter, &QHashReporter::blockHashed, &m_sink,
                                 &QResultSink::onBlockHashed, Qt::QueuedConnection);
        } else {
            c = QtFastConnect::connect(reporter, &QHashReporter::blockHashed, &m_sink,
                                       &QResultSink::onBlockHashed);
        }
        if (!c)
            return false;
        connections->append(c);
    }
    return true;
}

bool QSchemeRunner::runDeliveryPass(QHashTally *tally)
{
    m_sink.reset();
    const quint64 expected = m_reference.count;

    // Wakes the loop below now and then, so that a pass that lost results ends with an error.
    quint64 lastCount = 0;
    QElapsedTimer quiet;
    quiet.start();
    bool stalled = false;
    QTimer watchdog;
    watchdog.callOnTimeout([&] {
        if (m_sink.tally().count != lastCount) {
            lastCount = m_sink.tally().count;
            quiet.restart();
        } else if (quiet.hasExpired(StallTimeoutMs)) {
            stalled = true;
        }
    });
    watchdog.start(1000);

    m_pool.startPass(QHashWorkerPool::Mode::Emit);
    // The pass ends when the main thread holds every result, not when the workers are done.
    while (m_sink.tally().count < expected && !stalled)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    watchdog.stop();
    if (stalled) {
        *tally = m_sink.tally();
        return false; // the workers cannot be waited for: they may be blocked in an emit
    }
    // Every result arrived, so the workers are past their last emit and about to go idle.
    m_pool.waitForPass();
    *tally = m_sink.tally();
    return true;
}

bool QSchemeRunner::measure(QDeliveryScheme scheme, QMeasurement *result, QString *errorMessage)
{
    QList<QMetaObject::Connection> connections;
    if (scheme != QDeliveryScheme::None && !connectReporters(scheme, &connections)) {
        *errorMessage = QStringLiteral("%1: connecting the workers failed").arg(name(scheme));
        for (const QMetaObject::Connection &c : std::as_const(connections))
            QObject::disconnect(c);
        return false;
    }

    *result = QMeasurement();
    bool ok = true;
    QElapsedTimer clock;
    clock.start();
    do {
        QHashTally tally;
        if (scheme == QDeliveryScheme::None) {
            m_pool.startPass(QHashWorkerPool::Mode::Fold);
            tally = m_pool.waitForPass();
        } else if (!runDeliveryPass(&tally)) {
            *errorMessage = QStringLiteral("%1, %2 threads, pass %3 stalled: %4 of %5 results "
                                           "arrived, none in the last %6 s")
                                    .arg(name(scheme))
                                    .arg(m_pool.threadCount())
                                    .arg(result->passes + 1)
                                    .arg(tally.count)
                                    .arg(m_reference.count)
                                    .arg(StallTimeoutMs / 1000);
            ok = false;
            break;
        }
        result->blocks += tally.count;
        ++result->passes;
        if (tally != m_reference) {
            *errorMessage = QStringLiteral("%1, %2 threads, pass %3: %4 results with checksum "
                                           "0x%5, expected %6 with checksum 0x%7")
                                    .arg(name(scheme))
                                    .arg(m_pool.threadCount())
                                    .arg(result->passes)
                                    .arg(tally.count)
                                    .arg(tally.checksum, 16, 16, QLatin1Char('0'))
                                    .arg(m_reference.count)
                                    .arg(m_reference.checksum, 16, 16, QLatin1Char('0'));
            ok = false;
            break;
        }
    } while (clock.nsecsElapsed() < m_minNanoseconds);
    result->nanoseconds = clock.nsecsElapsed();

    for (const QMetaObject::Connection &c : std::as_const(connections))
        QObject::disconnect(c);
    return ok;
}
