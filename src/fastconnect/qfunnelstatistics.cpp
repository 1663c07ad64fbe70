// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// QFunnel's statistics as a QObject shows them: properties, and notify signals sampled by a
// timer in the funnel's thread, so that neither producers nor receivers pay anything per call.

#include "qfunnel.h"
#include "qfunnel_p.h"

#include <QtCore/qcoreevent.h>
#include <QtCore/qmetaobject.h>
#include <QtCore/qthread.h>

QT_BEGIN_NAMESPACE

/*!
    \property QFunnel::emittedCalls
    \brief The emissions this funnel admitted or dropped so far (QFunnel::Statistics::emitted).

    Thread-safe to read. Its notify signal, like every statistics property's, is
    statisticsChanged().
*/
quint64 QFunnel::emittedCalls() const
{
    return statistics().emitted;
}

/*!
    \property QFunnel::deliveredCalls
    \brief The calls whose slot ran (a batch of n counts n). Thread-safe to read.
*/
quint64 QFunnel::deliveredCalls() const
{
    return statistics().delivered;
}

/*!
    \property QFunnel::discardedCalls
    \brief The calls destroyed unrun because their receiver was destroyed first (or their
    meta-call event was removed). Thread-safe to read.
*/
quint64 QFunnel::discardedCalls() const
{
    return statistics().discarded;
}

/*!
    \property QFunnel::coalescedCalls
    \brief The calls destroyed unrun because a newer one replaced them (CoalesceCalls,
    RateLimitCalls, latestPerKey()). Thread-safe to read.
*/
quint64 QFunnel::coalescedCalls() const
{
    return statistics().coalesced;
}

/*!
    \property QFunnel::highWaterMark
    \brief The most calls pending at once so far (see QFunnel::Statistics). Thread-safe to
    read.
*/
qsizetype QFunnel::highWaterMark() const
{
    return statistics().highWaterMark;
}

/*!
    \property QFunnel::statisticsInterval
    \brief How often, in ms, the funnel looks at its counters for statisticsChanged() and
    overflowed(): at most one of each per interval. Default: 100 (DefaultStatisticsInterval).

    The funnel's thread (the one it lives in; the main thread for globalInstance()) does the
    sampling, with a timer that runs only while one of the two signals is connected, so the
    calls themselves never pay for it. Values below 1 ms are refused with a warning.
*/
int QFunnel::statisticsInterval() const
{
    Q_D(const QFunnel);
    return d->statisticsIntervalMs;
}

void QFunnel::setStatisticsInterval(int ms)
{
    Q_D(QFunnel);
    if (ms < 1) {
        qWarning("QFunnel::setStatisticsInterval: %d ms is not a positive interval; keeping %d ms",
                 ms, d->statisticsIntervalMs);
        return;
    }
    if (thread() != QThread::currentThread()) {
        qWarning("QFunnel::setStatisticsInterval: must be called in the funnel's thread");
        return;
    }
    d->statisticsIntervalMs = ms;
    if (d->statisticsTimer.isActive())
        d->statisticsTimer.start(ms, this);
}

/*!
    \fn void QFunnel::statisticsChanged()

    Emitted in the funnel's thread, at most once per statisticsInterval(), when a counter of
    statistics() changed since the previous emission (or since the signal was connected). The
    statistics properties name it as their notify signal, so a QML binding or a QProperty
    follows them without polling.
*/

/*!
    \fn void QFunnel::overflowed(quint64 droppedCalls, quint64 overCapacityCalls)

    Emitted in the funnel's thread, at most once per statisticsInterval(), when emissions were
    dropped (DropNewest, DropOldest, a block timeout) or admitted over the capacity since the
    previous look: the funnel is the bottleneck. \a droppedCalls and \a overCapacityCalls are
    the totals so far, as droppedCalls() and overCapacityCalls() return them.
*/

void QFunnel::connectNotify(const QMetaMethod &signal)
{
    if (signal == QMetaMethod::fromSignal(&QFunnel::statisticsChanged)
        || signal == QMetaMethod::fromSignal(&QFunnel::overflowed)) {
        // Any thread may connect; the timer belongs to the funnel's.
        QMetaObject::invokeMethod(
                this, [this] { d_func()->updateSampling(); }, Qt::QueuedConnection);
    }
    QObject::connectNotify(signal);
}

void QFunnel::disconnectNotify(const QMetaMethod &signal)
{
    // An invalid method: every connection of this object was cut at once.
    if (!signal.isValid() || signal == QMetaMethod::fromSignal(&QFunnel::statisticsChanged)
        || signal == QMetaMethod::fromSignal(&QFunnel::overflowed)) {
        QMetaObject::invokeMethod(
                this, [this] { d_func()->updateSampling(); }, Qt::QueuedConnection);
    }
    QObject::disconnectNotify(signal);
}

void QFunnel::timerEvent(QTimerEvent *event)
{
    Q_D(QFunnel);
    if (event->timerId() != d->statisticsTimer.timerId()) {
        QObject::timerEvent(event);
        return;
    }
    d->sample();
}

// In the funnel's thread: the timer runs exactly while someone listens.
void QFunnelPrivate::updateSampling()
{
    Q_Q(QFunnel);
    const bool wanted = q->isSignalConnected(QMetaMethod::fromSignal(&QFunnel::statisticsChanged))
            || q->isSignalConnected(QMetaMethod::fromSignal(&QFunnel::overflowed));
    if (wanted && !statisticsTimer.isActive()) {
        lastSampled = q->statistics();
        statisticsTimer.start(statisticsIntervalMs, q);
    } else if (!wanted) {
        statisticsTimer.stop();
    }
}

void QFunnelPrivate::sample()
{
    Q_Q(QFunnel);
    const QFunnel::Statistics s = q->statistics();
    const QFunnel::Statistics was = lastSampled;
    lastSampled = s;
    const bool overflowed = s.dropped > was.dropped || s.overCapacity > was.overCapacity;
    if (s.emitted != was.emitted || s.delivered != was.delivered || s.dropped != was.dropped
        || s.discarded != was.discarded || s.coalesced != was.coalesced
        || s.overCapacity != was.overCapacity || s.pending != was.pending
        || s.highWaterMark != was.highWaterMark) {
        Q_EMIT q->statisticsChanged();
    }
    if (overflowed)
        Q_EMIT q->overflowed(s.dropped, s.overCapacity);
}

QT_END_NAMESPACE
