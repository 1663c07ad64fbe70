// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnel.h"
#include "qfunnel_p.h"
#include "qfunnelcore_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>
#include <QtCore/qthread.h>

#include <atomic>

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

    The funnel is bounded: capacity() calls may be pending at once. By default a producer that
    finds the funnel full blocks until the receivers have made room (backpressure), so a slow
    GUI thread slows its producers down instead of letting memory grow. Blocked producers
    resume once a quarter of the capacity is free again (a low-water mark: woken for every
    return of room, they would compete for the CPU with the receiver's thread that makes it),
    or within 100 ms if less room is made; overflowPolicy() and
    blockTimeout() choose counted drops instead. statistics() tells what went where. A thread
    that receives calls through any funnel never blocks in an emission: it is admitted over
    capacity and counted in overCapacityCalls(), because the calls that would make room may be
    waiting for that very thread. A receiver whose thread stalls does not hold the capacity
    either: a producer waiting for room looks every 100 ms for receivers whose thread has not
    handled their calls for 100 ms while it runs no event loop (it has finished, or not started)
    or for a second while it runs one (it is blocked outside their slots); their calls then wait
    outside the capacity, as Qt's queued calls wait for a thread, until that thread runs them.

    One slow receiver does not hold the capacity that the others need: with the Block policy,
    the calls of one receiver (or context object) hold at most three times the room the funnel
    has left (its share). A producer that would exceed it waits until that receiver has run
    calls and holds at most half of its share, while producers emitting to other receivers go
    on: one slow receiver holds at most 3/4 of the capacity; k slow receivers that fill it
    together 3/(3k+1) of it each, leaving 1/(3k+1) free; each one that comes when others hold
    theirs at most 3/4 of the room they left, so that k of them leave about 1/4^k free (fair
    shares, as HTTP/2's per-stream flow-control windows share a connection's). A producer
    whose receiver holds three calls or more (as its producers have counted them so far) never
    takes the last credit: that goes to receivers that hold (almost) none. A funnel's one busy
    receiver thus keeps most of the capacity as its backlog (see DefaultCapacity). A producer
    counts its calls per receiver and checks the share once per chunk of credits it reserves
    (at most 64 calls), so a receiver may hold up to a chunk more per producer thread beyond
    the first; the capacity bounds the whole funnel whatever the shares. The wait obeys
    blockTimeout(), and, like the wait for room, ends for a receiver whose thread stalls. A
    receiver thread never waits for a share. The drop policies keep the shares without waiting:
    with DropNewest a call beyond its receiver's share is dropped; with DropOldest it is admitted
    without taking room from the others, and that receiver's oldest waiting calls make way for
    it, so that the receiver keeps its share of the newest calls.

    A warning names such a receiver's thread. The warnings a flood can repeat by the thousand
    (stalled receivers, producers that waited 5 s for room, threads that exited with calls on
    their way) print their first occurrence in full; the same cause's next ones within 5 s are
    counted, and one line sums them up when those 5 s end, in the application's thread.

    Most applications use globalInstance(), which QtFastConnect::connect() uses by default.
    Separate funnels do not share a queue, a relay or a capacity; use one per group of receivers
    whose calls should not share a capacity at all.

    The design follows the "queue plus one relay thread" scheme that fixed Qt's queued-connection
    collapse with many producer threads in published measurements, with the batching described
    above.

    \sa {QtFastConnect::connect}
*/

/*!
    \variable QFunnel::DefaultCapacity
    The capacity of a new funnel: 65,536 calls.

    What keeps a receiver's thread responsive under a flood is not the capacity but the
    delivery pass's time budget (1 ms; up to 8 ms, three times what the thread's other events
    took, when those are expensive, such as a view's relayout): however many calls are pending,
    the thread's paint, input and timer events wait at most about two passes. The capacity bounds the memory and the
    backlog, and it has to cover the time producer threads are not scheduled: with trivial slots
    the receiver's thread takes 10 to 15 million calls per second, and a funnel of 16,384 calls
    (a frame of work at 1 µs per slot) then runs dry within a scheduler time slice, which cost a
    third of the throughput on 2 cores (benchmarks/responsiveness). 65,536 calls are about
    5 ms of trivial slots, or 65 ms of 1 µs slots: under such a flood, a result waits up to that
    long in the funnel, and that is how long the backlog takes to drain once the producers stop.
    A receiver whose slots are slow, or that wants its results sooner, sets a smaller capacity
    (setCapacity(); 4,096 keeps the same frame rate with a 1 µs slot and drains in about 4 ms).
*/

QFunnelPrivate::QFunnelPrivate() : core(new QFunnelCore) {}

QFunnelPrivate::~QFunnelPrivate()
{
    core->stop();
    core->deref();
}

/*!
    Creates a funnel with its relay thread running, and the capacity DefaultCapacity, with the
    given \a parent. Any thread may create a funnel.
*/
QFunnel::QFunnel(QObject *parent) : QObject(*new QFunnelPrivate, parent) {}

/*!
    Stops the relay thread and joins it, releases any producer blocked on a full funnel (its
    emission is dropped and counted), and destroys the pending calls without running them. Calls
    pending for a receiver whose thread is running are dropped by that thread at its next event
    loop pass. Connections made through this funnel stay connected, but their emissions are
    dropped and counted.
*/
QFunnel::~QFunnel() = default;

namespace {
// The current application's global funnel. Replaced, not restarted, when a new QCoreApplication
// is created after the previous one stopped it: a stopped core stays stopped (its routes and
// pending calls are gone), and whoever still holds the old funnel gets failed connects, as
// documented for a stopped funnel.
std::atomic<QFunnel *> g_globalFunnel { nullptr };
QBasicMutex g_globalFunnelLock;
QList<QFunnel *> *g_retiredGlobalFunnels = nullptr; // never destroyed: another thread may use one

void stopGlobalFunnel()
{
    // [P15 get] acquire: as in globalInstance().
    if (QFunnel *f = g_globalFunnel.load(std::memory_order_acquire))
        QFunnelPrivate::get(f)->core->stop();
}

// With g_globalFunnelLock held. home: the thread the funnel lives in, whichever thread creates
// it: its statistics timer runs there, and setStatisticsInterval() is called there.
QFunnel *newGlobalFunnel(QThread *home)
{
    auto *f = new QFunnel;
    // Not yet seen by any other thread: no timer or posted event to carry along.
    if (home && f->thread() != home)
        f->moveToThread(home);
    // Qt runs (and forgets) the post routines when the application is destroyed.
    qAddPostRoutine(stopGlobalFunnel);
    // [P15 publish] release: pairs with globalInstance()'s acquire; the funnel is complete, and
    // in its thread, before it is seen.
    g_globalFunnel.store(f, std::memory_order_release);
    return f;
}

// globalInstance()'s first call. Out of line, so that the calls after it (every connect and
// invoke that names no funnel) save no registers for the lock.
Q_NEVER_INLINE QFunnel *firstGlobalFunnel()
{
    QMutexLocker locker(&g_globalFunnelLock);
    if (QFunnel *f = g_globalFunnel.load(std::memory_order_relaxed))
        return f;
    return newGlobalFunnel(applicationThread());
}

// Run by every QCoreApplication's constructor (a Qt pre-routine): the global funnel that the
// previous application stopped when it was destroyed is replaced, so that a second application
// in the process (a test runner, a plug-in host, a language binding) connects as the first did.
void renewStoppedGlobalFunnel()
{
    QMutexLocker locker(&g_globalFunnelLock);
    QFunnel *f = g_globalFunnel.load(std::memory_order_relaxed);
    if (!f || !QFunnelPrivate::get(f)->core->isStopped())
        return;
    if (!g_retiredGlobalFunnels)
        g_retiredGlobalFunnels = new QList<QFunnel *>;
    g_retiredGlobalFunnels->append(f);
    // This application's thread: the module may not have noted the application yet.
    newGlobalFunnel(QThread::currentThread());
}
} // namespace
Q_COREAPP_STARTUP_FUNCTION(renewStoppedGlobalFunnel)

/*!
    Returns the application-wide funnel, creating it on first use. Thread-safe.

    The funnel lives in the application's thread (the main thread), whichever thread calls this
    first, also when that is a worker thread before the QCoreApplication exists (it then lives
    in the thread Qt takes for the main thread: the first one that used Qt). So
    setStatisticsInterval() is called from the main thread, and statisticsChanged() and
    overflowed() are emitted there.

    It is stopped, and its relay thread joined, when the QCoreApplication is destroyed (a Qt
    post routine); calls pending then are never run, and their arguments are destroyed, as Qt
    does with queued calls pending at that point. Emissions after that are dropped and counted,
    and new connections fail with a warning. A QCoreApplication created after that gets a new
    global funnel, with the default settings; connections made through the stopped one stay
    stopped.
*/
QFunnel *QFunnel::globalInstance()
{
    // [P15 get] acquire: pairs with newGlobalFunnel()'s release.
    if (QFunnel *f = g_globalFunnel.load(std::memory_order_acquire); Q_LIKELY(f))
        return f;
    return firstGlobalFunnel();
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
    return d->core->admission().capacity();
}

void QFunnel::setCapacity(qsizetype calls)
{
    Q_D(QFunnel);
    if (calls < 1) {
        qWarning("QFunnel::setCapacity: capacity must be at least 1 call (got %lld); "
                 "keeping %lld",
                 static_cast<long long>(calls),
                 static_cast<long long>(d->core->admission().capacity()));
        return;
    }
    d->core->admission().setCapacity(calls);
}

/*!
    Returns the number of calls emitted through this funnel that have not yet run or been
    dropped. A snapshot: other threads change it while you look. Thread-safe; it briefly takes
    a lock that producers only take when they run out of reserved credits.
*/
qsizetype QFunnel::pendingCalls() const
{
    Q_D(const QFunnel);
    d->core->inboxes().dropDeferred(); // a dead receiver's calls are not pending
    return d->core->admission().pendingCalls();
}

/*!
    Returns how many emissions were admitted beyond capacity() because they came from a thread
    that receives calls through a funnel (blocking it could deadlock), or because their
    receiver's thread stalled (see the class description). Thread-safe.
*/
quint64 QFunnel::overCapacityCalls() const
{
    Q_D(const QFunnel);
    return d->core->admission().overCapacityCalls();
}

/*!
    Returns how many calls were dropped without running: by the overflowPolicy() or after
    blockTimeout(), emitted after the funnel stopped, pending when it stopped, or addressed to
    a receiver that lost its thread affinity. Calls to
    a receiver that was destroyed are not counted here: as with Qt's queued connections, they
    are simply never run. Thread-safe.
*/
quint64 QFunnel::droppedCalls() const
{
    Q_D(const QFunnel);
    return d->core->droppedCalls();
}

/*!
    \enum QFunnel::OverflowPolicy

    What an emission does when the funnel already holds capacity() pending calls. Whatever the
    policy, an emission from a thread that receives calls through any funnel is admitted over
    capacity and counted in overCapacityCalls(): blocking it could deadlock, since the calls
    that would make room may be waiting for that very thread.

    \value Block        The default: the emitting thread waits until a receiver has made room
                        (backpressure), at most blockTimeout() ms; an emission still without
                        room then is dropped and counted in droppedCalls(). It waits the same
                        way when its receiver holds its share of the funnel (see the class
                        documentation), while emissions to other receivers go on.
    \value DropNewest   The emission that finds the funnel full, or its receiver holding its
                        share (see the class documentation), is dropped at once (its
                        arguments destroyed in the emitting thread) and counted in
                        droppedCalls(). Calls already pending are all delivered.
    \value DropOldest   The emission is admitted, and the oldest pending calls make room: at
                        the start of each delivery pass for a receiver (and every 128 calls
                        during it), the receiver's thread destroys unrun the oldest calls
                        waiting for that receiver while the funnel is over its capacity, each
                        counted in droppedCalls(). "Oldest" is per receiver: the calls that have
                        waited longest for it, not the oldest in the whole funnel. Producers never take a
                        lock for this. While the receiver threads are busy in a slot, the
                        funnel may hold up to twice its capacity; beyond that the newest
                        emission is dropped (and counted) as with DropNewest. An emission
                        whose receiver holds its share is admitted without taking the room
                        left to other receivers, and that receiver's next delivery pass
                        destroys, oldest first, as many of its waiting calls (counted in
                        droppedCalls()) as it holds beyond its share.

    The policy is a property of the funnel, shared by all its connections; use separate funnels
    for connections that need different policies.
*/

/*!
    \property QFunnel::overflowPolicy
    \brief what an emission into a full funnel does; OverflowPolicy::Block by default.

    Any thread may read or set it; a change applies to emissions that find the funnel full
    from then on.
*/
QFunnel::OverflowPolicy QFunnel::overflowPolicy() const
{
    Q_D(const QFunnel);
    return d->core->admission().policy();
}

void QFunnel::setOverflowPolicy(OverflowPolicy policy)
{
    Q_D(QFunnel);
    switch (policy) {
    case OverflowPolicy::Block:
    case OverflowPolicy::DropNewest:
    case OverflowPolicy::DropOldest:
        d->core->admission().setPolicy(policy);
        return;
    }
    qWarning("QFunnel::setOverflowPolicy: unknown policy %d; keeping %d", int(policy),
             int(d->core->admission().policy()));
}

/*!
    \property QFunnel::blockTimeout
    \brief how long, in milliseconds, a producer waits for room under OverflowPolicy::Block;
    -1 (the default) waits for ever.

    A producer that waited this long without room drops its emission (its arguments are
    destroyed in the emitting thread) and counts it in droppedCalls(). 0 means "never wait",
    which is OverflowPolicy::DropNewest. A value below -1 is refused with a warning. Any
    thread may read or set it; producers already waiting keep the deadline they started with.
*/
int QFunnel::blockTimeout() const
{
    Q_D(const QFunnel);
    return d->core->admission().blockTimeoutMs();
}

void QFunnel::setBlockTimeout(int ms)
{
    Q_D(QFunnel);
    if (ms < -1) {
        qWarning("QFunnel::setBlockTimeout: timeout must be -1 (for ever) or at least 0 ms "
                 "(got %d); keeping %d",
                 ms, d->core->admission().blockTimeoutMs());
        return;
    }
    d->core->admission().setBlockTimeoutMs(ms);
}

/*!
    \class QFunnel::Statistics
    \inmodule QtFastConnect
    \brief A snapshot of a funnel's counters, returned by QFunnel::statistics().

    All counts are in calls (one call = one emission on one funnel connection) since the
    funnel was created. Once nothing is pending, every emission is accounted for exactly:

    \c{emitted == delivered + dropped + discarded + coalesced}

    (with calls pending, add \c pending). While other threads emit, the fields are read one
    after another, not atomically together.

    \list
    \li \c emitted: emissions captured by the funnel's connections.
    \li \c delivered: calls whose slot ran.
    \li \c dropped: calls destroyed unrun by the overflow policy, the block timeout, a
        stopped funnel or a receiver that lost its thread (the same as droppedCalls()).
    \li \c discarded: calls not run because their receiver was destroyed first, as Qt does
        with queued calls.
    \li \c coalesced: calls skipped because a newer call of the same
        QtFastConnect::CoalesceCalls connection was pending.
    \li \c overCapacity: emissions admitted beyond the capacity from a receiver thread, or
        taken out of it for a stalled receiver (the same as overCapacityCalls()).
    \li \c pending: calls emitted and not yet run or destroyed (the same as pendingCalls()).
    \li \c highWaterMark: the largest \c pending seen. Sampled when a producer thread takes
        credits (at most 64 at a time), so it may miss a peak by up to 63 calls per producer
        thread.
    \li \c relayRounds, \c relayedCalls: rounds of the relay thread that handed calls over,
        and the calls it handed over (calls handed directly from producer to an idle receiver
        thread do not go through the relay).
    \li \c meanBatchSize: \c relayedCalls / \c relayRounds, 0 before the first round.
    \endlist
*/

/*!
    Returns a snapshot of this funnel's counters. Any thread may call it.

    Reading costs the emitting and receiving threads nothing: each producer thread and each
    receiver's delivery count in their own memory, with no locked instruction, and this function
    sums those counters, briefly taking the locks that guard the lists of producer threads and
    receivers.
*/
QFunnel::Statistics QFunnel::statistics() const
{
    Q_D(const QFunnel);
    QFunnelCore *core = d->core;
    core->inboxes().dropDeferred(); // a dead receiver's calls are discarded, not pending
    Statistics s;
    // Delivery-side counters first: a call counted there was emitted before this read.
    const QFunnelInboxRegistry::Totals t = core->inboxes().totals();
    s.delivered = t.delivered;
    s.discarded = t.discarded;
    s.coalesced = t.coalesced;
    s.dropped = core->droppedCalls();
    s.overCapacity = core->admission().overCapacityCalls();
    s.pending = core->admission().pendingCalls();
    s.highWaterMark = qMax(core->admission().highWaterMark(), s.pending);
    s.emitted = core->emittedCalls();
    s.relayRounds = core->relay().rounds();
    s.relayedCalls = core->relay().relayedCalls();
    s.meanBatchSize = s.relayRounds ? double(s.relayedCalls) / double(s.relayRounds) : 0.0;
    return s;
}

QT_END_NAMESPACE

#include "moc_qfunnel.cpp"
