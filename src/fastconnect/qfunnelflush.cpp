// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelflush_p.h"
#include "qfastconnect.h"
#include "qfunnel_p.h"
#include "qfunnellane_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelinboxregistry_p.h"

#include <memory>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

void flushCurrentThread(QFunnelCore *core, QFunnelLane *lane)
{
    if (core->isStopped())
        return; // nothing pending will ever be delivered
    if (!lane)
        lane = QFunnelLane::forCurrentThread(core);
    if (!lane)
        return;
    if (lane->canBypassRelay())
        return lane->noteFlushed(); // none of this thread's calls is in the relay's hands
    waitForRelayRound(core);
    lane->noteFlushed();
}

void waitForRelayRound(QFunnelCore *core)
{
    // On the heap: a batch is ~4 KiB, too much for small thread stacks.
    auto marker = std::make_unique<QFunnelFlushMarker>();
    core->relay().ensureStarted();
    core->queue().push(marker.get());
    core->relay().wake(); // the round that completes it starts now, not after the interval
    // As for a call: a marker queued after stop()'s sweep is swept by its own thread.
    if (core->isStopped())
        core->sweepStoppedQueue();
    marker->wait();
}

void flushWithBarriers(QFunnelCore *core, QFunnelLane *lane)
{
    flushCurrentThread(core, lane);
    if (!core->isStopped())
        core->inboxes().postBarriers();
}

} // namespace QtFastConnectPrivate

/*!
    Makes every call the calling thread emitted through this funnel so far reach its
    receiver's thread: when flush() returns, the next event loop pass that thread starts
    (QCoreApplication::processEvents(), QCoreApplication::sendPostedEvents(), or its running
    event loop) runs them, as with Qt::QueuedConnection, where the call is posted before emit
    returns. Without it, a call emitted while the relay thread is busy reaches the receiver's
    thread one relay round later (about 50 µs); an event processing of the receiver's thread
    that starts in between waits for that round, so it runs the call all the same.

    It is also an ordering barrier: every call the calling thread emitted through this funnel
    before flush() returned runs before any event that thread posts to the same receiver's
    thread afterwards (QThread::finished() when run() returns, a deleteLater(), a queued signal
    or QMetaObject::invokeMethod(), QCoreApplication::postEvent()), as with
    Qt::QueuedConnection, under any load: the delivery passes that run those calls do not yield
    to the event loop before they have run. Before a signal the thread emits, the module calls
    it by itself when the signal has a connection that posts (queued, or automatic to an object
    of another thread): QThread::finished() and a worker's queued done() need no flush(). Call
    it before events a thread posts without a signal: QObject::deleteLater(),
    QMetaObject::invokeMethod(), QCoreApplication::postEvent().

    It blocks until the relay thread has routed the calling thread's calls (one relay round,
    which it starts at once, tens of µs, when some are in its hands; no wait otherwise), then
    posts one wake-up event to each receiver of this funnel that may still have calls pending.
    It does not wait for any slot to run, so it never deadlocks with a receiver. The barrier's
    cost falls on the receiver's thread: a pass that would have yielded after its budget (1 ms)
    runs on through the calls pending at flush(), at most capacity() of them. Any thread may
    call it; calls emitted by other threads are not reordered. On a stopped funnel it returns at once.

    \sa {QtFastConnect::flush}
*/
void QFunnel::flush()
{
    Q_D(QFunnel);
    d->core->inboxes().dropDeferred();
    flushWithBarriers(d->core);
}

/*!
    \fn void QtFastConnect::flush()

    Calls QFunnel::flush() on QFunnel::globalInstance(): every call the calling thread emitted
    through the global funnel reaches its receiver's thread before this returns, so the
    receiver's next event loop pass runs it. Any thread may call it.
*/
void QtFastConnect::flush()
{
    QFunnel::globalInstance()->flush();
}

QT_END_NAMESPACE
