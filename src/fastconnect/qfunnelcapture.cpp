// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Capture stage, library half: admission of an emitted call, then the decision of the data path.
//
//   post(), postInvoke()               the entries (qfastconnect_impl.h, qfastinvoke_impl.h)
//    queueCall()                       this thread's lane for the funnel, cached or looked up
//     queueInLane()                    stopped? credit? then the flood's common case inline:
//      |                               the open batch takes the call
//      +- queueAfterRefill()           no credit reserved: the receiver's share (may wait),
//      |                               then refill (may wait, or drop)
//      +- queueAdmitted()              every other case, in this order:
//          1. the receiver's own thread: straight to its inbox if the relay holds no batch
//          2. the open batch takes it (a flood)
//          3. an idle funnel (the relay holds no batch, inbox empty): straight to the inbox
//          4. otherwise the lane starts a batch for the relay
//     postWithoutLane()                a thread_local destructor's emission: straight to inbox
//
// Invariant: queueInLane() asks a subset of queueAdmitted()'s questions, in the same order (a
// special mode, the receiver's thread, the open batch), and only to take case 2 without a call;
// anything else goes to queueAdmitted(), which decides. The split is for register pressure (the
// inline path saves no registers). A new case belongs in queueAdmitted(); queueInLane() needs a
// change only if the new case must precede case 2.

#include "qfunnelcore_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnellane_p.h"
#include "qfunnelroute_p.h"
#include "qfunneltrace_p.h"

#include <QtFastConnect/qfastinvoke.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

// The funnel stopped (application shutdown, or its QFunnel was destroyed), or it is full and
// its overflow policy drops the newest call. Out of line: post() saves no registers for it.
Q_NEVER_INLINE void rejectCall(QFunnelRoute *route, QFunnelCall *call)
{
    route->core->countDropped();
    route->destroyCall(call); // may release the last reference on route, and on its core
}

// Before the call can reach delivery, where a call that is no longer the latest of its
// connection is skipped (QFunnelInbox::deliverSpecial()).
inline void noteLatest(QFunnelRoute *route, QFunnelCall *call)
{
    // A batched connection's calls are never coalesced: none is the latest.
    if (Q_UNLIKELY(route->mode & QFunnelRoute::SpecialModes)
        && !(route->mode & QFunnelBatchedBit)) {
        // [P17 note] Relaxed: the pointer is only compared, with a read-modify-write, which
        // reads the newest value in the modification order; and this exchange happens before
        // that one, since the call reaches delivery through a release (the inbox push) that the
        // delivering thread acquires.
        route->latest.exchange(call, std::memory_order_relaxed);
    }
}

// A call handed to its receiver's inbox without the relay, which would have noted its arena.
inline void pushDirect(QFunnelRoute *route, QFunnelCall *call)
{
    if (Q_UNLIKELY(route->notesArenas))
        route->noteArena(call);
    route->inbox->push(call, call);
}

// An emission from a thread_local destructor after this thread's lanes (or its invoke cache)
// were destroyed: no batch, no lasting reservation; straight to the receiver's inbox (the lane
// set's destructor flushed this thread's earlier calls through the relay first).
Q_NEVER_INLINE void postWithoutLane(QFunnelRoute *route, QFunnelCall *call)
{
    QFunnelCore *c = route->core;
    c->countEmittedWithoutLane();
    QFunnelAdmission::Reservation reservation { 0 };
    c->admission().addReservation(&reservation);
    const bool admitted = !c->isStopped()
            && c->admission().acquireCredit(reservation,
                                            { &QFunnelInbox::heldCallsToWaitFor, route->inbox,
                                              &QFunnelInbox::oweEviction });
    c->admission().removeReservation(&reservation); // returns what the refill reserved beyond
    if (!admitted)
        return rejectCall(route, call);
    route->inbox->charge(1); // no lane to count it (QFunnelLane::countForShare())
    noteLatest(route, call);
    pushDirect(route, call);
}

// After a call was queued for the relay: stop() sweeps the queue after the relay's last round;
// a call queued after that sweep is swept by its own producer.
inline void checkStopAfterQueueing(QFunnelCore *c)
{
    if (Q_UNLIKELY(c->isStopped()))
        c->sweepStoppedQueue();
}

// The decision, for a call admitted with its credit (cases 1-4 above): straight to the inbox or
// into this thread's lane for the relay.
Q_NEVER_INLINE void queueAdmitted(QFunnelRoute *route, QFunnelCall *call, QFunnelLane *lane)
{
    QFunnelCore *c = route->core;
    noteLatest(route, call);
    QFunnelInbox *inbox = route->inbox;
    // Straight to the inbox only while the relay holds no producer's batch (none is queued
    // either): a call another thread emitted before this one (causal order) may be in one.
    // Acquire (hasBatchesInRelay()): a batch queued by an emission that happened before this
    // one is seen, and so is the hand-back of one whose calls were routed.
    if (Q_UNLIKELY(inbox->isCurrentThread())) {
        // An emission from the receiver's own thread goes straight there, so that, as with
        // Qt, the thread's next event loop pass runs it; through the relay while it holds
        // calls (this thread's next event processing waits for its round: delivered all the
        // same).
        if (!c->queue().hasBatchesInRelay())
            return pushDirect(route, call);
        lane->append(call);
        return checkStopAfterQueueing(c);
    }
    // A flood: the relay holds this thread's open batch, which takes the call.
    if (lane->appendToOpenBatch(call))
        return checkStopAfterQueueing(c);
    // Idle funnel: hand the call straight to the receiver's thread, as fast as Qt's own queued
    // connection, instead of paying a relay wake-up on top.
    if (!c->queue().hasBatchesInRelay() && inbox->isIdle())
        return pushDirect(route, call);
    lane->append(call);
    checkStopAfterQueueing(c);
}

// The lane's reservation is empty: refill it (which may wait, or drop the call).
Q_NEVER_INLINE void queueAfterRefill(QFunnelRoute *route, QFunnelCall *call, QFunnelLane *lane)
{
    // Once per chunk of credits: dead receivers' calls the relay left to producers.
    route->core->inboxes().dropDeferred();
    QFunnelAdmission &admission = route->core->admission();
    // Once per chunk too: a receiver that holds its share of the capacity makes its own
    // producers wait (or drop), before they take room that other receivers' producers need.
    // The run this lane counted for an inbox is charged first, so that the share sees it.
    QFunnelInbox *inbox = route->inbox;
    lane->chargeRun();
    if (!admission.refillCredit(
                lane->reservation(),
                { &QFunnelInbox::heldCallsToWaitFor, inbox, &QFunnelInbox::oweEviction }))
        return rejectCall(route, call);
    lane->countForShare(inbox);
    queueAdmitted(route, call, lane);
}

// queueCall() with this thread's lane for the funnel. The common case of a flood inline, every
// other one a tail call, so that this path saves no registers.
Q_ALWAYS_INLINE void queueInLane(QFunnelRoute *route, QFunnelCall *call, QFunnelLane *lane)
{
    QFunnelCore *c = route->core;
    lane->countEmitted();
    if (Q_UNLIKELY(c->isStopped()))
        return rejectCall(route, call);
    if (Q_UNLIKELY(!QFunnelAdmission::takeReserved(lane->reservation())))
        return queueAfterRefill(route, call, lane);
    lane->countForShare(route->inbox);
    if (Q_UNLIKELY(route->mode & QFunnelRoute::SpecialModes)
        || Q_UNLIKELY(route->inbox->isCurrentThread()) || !lane->appendToOpenBatch(call)) {
        return queueAdmitted(route, call, lane);
    }
    checkStopAfterQueueing(c);
}

// queueCall() when this thread's lane for the funnel is not the one it used last.
Q_NEVER_INLINE void queueLookingUpLane(QFunnelRoute *route, QFunnelCall *call)
{
    QFunnelLane *lane = QFunnelLane::forCurrentThread(route->core);
    if (Q_UNLIKELY(!lane))
        return postWithoutLane(route, call);
    queueInLane(route, call, lane);
}

// post() and postInvoke(), once the call holds its reference on route.
Q_ALWAYS_INLINE void queueCall(QFunnelRoute *route, QFunnelCall *call)
{
    Q_TRACE(qfunnel_capture, route);
    if (QFunnelLane *lane = QFunnelLane::cachedForCurrentThread(route->core); Q_LIKELY(lane))
        return queueInLane(route, call, lane);
    queueLookingUpLane(route, call);
}

} // namespace

void post(QFunnelRoute *route, QFunnelCall *call)
{
    route->ref(); // the call's
    queueCall(route, call);
}

void postInvoke(QFunnelRoute *route, QFunnelCall *call)
{
    queueCall(route, call);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
