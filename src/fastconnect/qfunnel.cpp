// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnel.h"
#include "qfunnel_p.h"
#include "qfunnelcore_p.h"

#include <QtCore/qcoreapplication.h>

QT_BEGIN_NAMESPACE

using namespace QtFastConnectPrivate;

/*!
    \class QFunnel
    \inmodule QtFastConnect
    \brief The QFunnel class carries cross-thread signal emissions to their receivers' threads
    through one bounded queue and one relay thread.

    A funnel is what a \l{QtFastConnect::FunnelConnection}{funnel connection} delivers through.
    Emitting threads (producers) put each emission into a call that holds copies of the
    arguments; the calls travel through a \c{tbb::concurrent_bounded_queue} to a relay thread,
    which hands them to each receiver's thread in batches: one posted event and one event
    dispatcher wake-up per batch, not per call. In the receiver's thread the slot runs once per
    emission, in the order each producer thread emitted.

    Producers do not touch the shared queue once per call: each producer thread fills a batch of
    its own that the relay drains while it is being filled, so the queue sees one operation per
    batch even when producer threads outnumber the CPU cores (oneTBB's bounded queue hands its
    slots out in ticket order, and a preempted ticket holder would otherwise stall every other
    producer). When the funnel is idle, a producer hands its call straight to the receiver's
    thread, so an isolated emission is as fast as with Qt::QueuedConnection.

    The funnel is bounded: capacity() calls may be pending at once. A producer that finds the
    funnel full blocks until the receivers have made room (backpressure), so a slow GUI thread
    slows its producers down instead of letting memory grow. A thread that receives calls through
    the funnel never blocks in an emission: it is admitted over capacity and counted in
    overCapacityCalls(), because the calls that would make room may be waiting for that very
    thread.

    Most applications use globalInstance(), which QtFastConnect::connect() uses by default.
    Separate funnels do not share a queue, a relay or a capacity; use one per group of receivers
    whose backpressure should not affect the others.

    The design follows the "queue plus one relay thread" scheme that fixed Qt's queued-connection
    collapse with many producer threads in published measurements, with the batching described
    above.

    \sa {QtFastConnect::connect}
*/

/*!
    \variable QFunnel::DefaultCapacity
    The capacity of a new funnel: 65,536 calls.
*/

QFunnelPrivate::QFunnelPrivate() : core(new QFunnelCore) { }

QFunnelPrivate::~QFunnelPrivate()
{
    core->stop();
    core->deref();
}

/*!
    Creates a funnel with its relay thread running, and the capacity DefaultCapacity, with the
    given \a parent. Any thread may create a funnel.
*/
QFunnel::QFunnel(QObject *parent) : QObject(*new QFunnelPrivate, parent) { }

/*!
    Stops the relay thread and joins it, releases any producer blocked on a full funnel (its
    emission is dropped and counted), and destroys the pending calls without running them. Calls
    pending for a receiver whose thread is running are dropped by that thread at its next event
    loop pass. Connections made through this funnel stay connected, but their emissions are
    dropped and counted.
*/
QFunnel::~QFunnel() = default;

namespace {
QFunnel *g_globalFunnel = nullptr;
void stopGlobalFunnel()
{
    QFunnelPrivate::get(g_globalFunnel)->core->stop();
}
} // namespace

/*!
    Returns the application-wide funnel, creating it on first use. Thread-safe.

    It is stopped, and its relay thread joined, when the QCoreApplication is destroyed (a Qt
    post routine); calls pending then are never run, and their arguments are destroyed, as Qt
    does with queued calls pending at that point. Emissions after that are dropped and counted,
    and new connections fail with a warning.
*/
QFunnel *QFunnel::globalInstance()
{
    static QFunnel *instance = [] {
        g_globalFunnel = new QFunnel;
        qAddPostRoutine(stopGlobalFunnel);
        return g_globalFunnel;
    }();
    return instance;
}

/*!
    \property QFunnel::capacity
    \brief how many calls may be pending at once: emitted but not yet run or dropped.

    The default is DefaultCapacity (65,536 calls). A value below 1 is refused with a warning and
    leaves the capacity unchanged. Lowering the capacity below the number of pending calls is
    allowed: producers then wait until enough calls have run. Any thread may read or set it.
*/
qsizetype QFunnel::capacity() const
{
    Q_D(const QFunnel);
    return d->core->capacity();
}

void QFunnel::setCapacity(qsizetype calls)
{
    Q_D(QFunnel);
    if (calls < 1) {
        qWarning("QFunnel::setCapacity: capacity must be at least 1 call (got %lld); "
                 "keeping %lld", static_cast<long long>(calls),
                 static_cast<long long>(d->core->capacity()));
        return;
    }
    d->core->setCapacity(calls);
}

/*!
    Returns the number of calls emitted through this funnel that have not yet run or been
    dropped. A snapshot: other threads change it while you look. Thread-safe; it briefly takes
    a lock that producers only take when they run out of reserved credits.
*/
qsizetype QFunnel::pendingCalls() const
{
    Q_D(const QFunnel);
    return d->core->pendingCalls();
}

/*!
    Returns how many emissions were admitted beyond capacity() because they came from a thread
    that receives calls through this funnel (blocking it could deadlock). Thread-safe.
*/
quint64 QFunnel::overCapacityCalls() const
{
    Q_D(const QFunnel);
    return d->core->overCapacityCalls();
}

/*!
    Returns how many calls were dropped without running: emitted after the funnel stopped, or
    pending when it stopped, or addressed to a receiver that lost its thread affinity. Calls to
    a receiver that was destroyed are not counted here: as with Qt's queued connections, they
    are simply never run. Thread-safe.
*/
quint64 QFunnel::droppedCalls() const
{
    Q_D(const QFunnel);
    return d->core->droppedCalls();
}

QT_END_NAMESPACE

#include "moc_qfunnel.cpp"
