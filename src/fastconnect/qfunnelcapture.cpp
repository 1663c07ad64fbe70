// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelcapture_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelqueue_p.h"

#include <QtCore/qvarlengtharray.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

thread_local QFunnelCore *QFunnelLane::tlCachedCore QFC_TLS_INITIAL_EXEC = nullptr;
thread_local QFunnelLane *QFunnelLane::tlCachedLane QFC_TLS_INITIAL_EXEC = nullptr;

// Set when thread exit destroyed this thread's lanes: an emission from a later thread_local
// destructor must not touch them. Trivially destructible, so it outlives the lane set.
thread_local bool tlLanesGone QFC_TLS_INITIAL_EXEC = false;

// This thread's lanes, one per funnel it emitted into; destroyed at thread exit.
struct LaneSet
{
    QVarLengthArray<QFunnelLane *, 4> lanes;
    ~LaneSet()
    {
        QFunnelLane::tlCachedCore = nullptr;
        QFunnelLane::tlCachedLane = nullptr;
        tlLanesGone = true;
        // Calls emitted from here on bypass the relay (postWithoutLane()): first let the relay
        // route what this thread queued, so that they cannot overtake it.
        for (QFunnelLane *lane : std::as_const(lanes))
            flushCurrentThread(lane->core(), lane);
        qDeleteAll(lanes);
    }
};

namespace {
thread_local LaneSet tlLanes;

// The funnel stopped (application shutdown, or its QFunnel was destroyed), or it is full and
// its overflow policy drops the newest call. Out of line: post() saves no registers for it.
Q_NEVER_INLINE void rejectCall(QFunnelSlotObject *so, QFunnelCall *call)
{
    so->destroyCall(call);
    so->core->countDropped();
}
} // namespace

QFunnelLane::QFunnelLane(QFunnelCore *core) : m_core(core)
{
    m_core->ref();
    m_core->addReservation(&m_reserved);
    m_core->addEmittedCounter(&m_emitted);
}

QFunnelLane::~QFunnelLane()
{
    m_core->removeEmittedCounter(&m_emitted);
    m_core->removeReservation(&m_reserved);
    if (m_open && m_open->abandon())
        delete m_open;   // sealed: the relay let go of it; otherwise it frees it after draining
    m_core->deref();
}

QFunnelLane *QFunnelLane::forCurrentThreadSlow(QFunnelCore *core)
{
    if (Q_UNLIKELY(tlLanesGone))
        return nullptr;
    LaneSet &set = tlLanes;
    QFunnelLane *lane = nullptr;
    for (qsizetype i = 0; i < set.lanes.size(); ++i) {
        QFunnelLane *l = set.lanes[i];
        if (l->m_core == core) {
            lane = l;
        } else if (l->m_core->isStopped()) {
            // Lanes of stopped funnels only pin their core; drop them here.
            delete l;
            set.lanes.remove(i--);
        }
    }
    if (!lane) {
        lane = new QFunnelLane(core);
        set.lanes.append(lane);
    }
    tlCachedCore = core;   // the lane holds a reference: core cannot be reused meanwhile
    tlCachedLane = lane;
    return lane;
}

bool QFunnelLane::canBypassRelay() const noexcept
{
    if (m_handedOff)
        return false; // a full batch may not even have been popped yet
    return !m_open || (m_open->load() & QFunnelBatch::Sealed);
}

void QFunnelLane::appendSlow(QFunnelCall *call, bool sealed)
{
    if (m_open) {
        if (!sealed && m_open->append(m_count, call)) {
            // The batch's last call (append() took every other case).
            m_open = nullptr;   // full: the relay frees it once drained
            m_handedOff = true;
            return;
        }
        // Sealed before this call was published: reuse the batch for a new run.
        m_open->restart(call);
    } else {
        m_open = m_core->queue().newBatch();
        m_open->restart(call);
        m_handedOff = false; // until this batch is sealed, canBypassRelay() says no anyway
    }
    m_count = 1;
    // The only contended queue operation: once per batch, not per call.
    m_core->queue().push(m_open);
}

} // namespace QtFastConnectPrivate

namespace QtFastConnectPrivate {
// An emission from a thread_local destructor after this thread's lanes (or its invoke cache)
// were destroyed: no batch, no reservation; straight to the receiver's inbox (the lane set's
// destructor flushed this thread's earlier calls through the relay first).
Q_NEVER_INLINE static void postWithoutLane(QFunnelSlotObject *so, QFunnelCall *call)
{
    QFunnelCore *c = so->core;
    c->countEmittedWithoutLane();
    QFunnelCore::Reservation reservation { 0 };
    c->addReservation(&reservation);
    const bool admitted = !c->isStopped() && c->acquireCredit(reservation);
    c->removeReservation(&reservation);   // gives back what the refill reserved beyond this call
    if (!admitted)
        return rejectCall(so, call);
    if (Q_UNLIKELY(so->mode & QtFastConnect::CoalesceCalls))
        so->latest.exchange(call, std::memory_order_relaxed);   // see post()
    so->inbox->push(call, call);
}
} // namespace QtFastConnectPrivate

void QtFastConnectPrivate::QFunnelSlotObject::post(QFunnelCall *call)
{
    QFunnelCore *c = core;
    QFunnelLane *lane = QFunnelLane::forCurrentThread(c);
    if (Q_UNLIKELY(!lane))
        return postWithoutLane(this, call);
    lane->countEmitted();
    if (Q_UNLIKELY(c->isStopped() || !c->acquireCredit(lane->reservation())))
        return rejectCall(this, call);
    if (Q_UNLIKELY(mode & QtFastConnect::CoalesceCalls)) {
        // Before the call can reach delivery: there, a call that is no longer the latest of
        // its connection is skipped (QFunnelInbox::deliverSpecial()). Relaxed: the pointer is
        // only compared, a read-modify-write always sees the newest value, and the call
        // itself reaches delivery through the push's release.
        latest.exchange(call, std::memory_order_relaxed);
    }
    if (lane->canBypassRelay()) {
        // Idle funnel: hand the call straight to the receiver's thread, as fast as Qt's own
        // queued connection, instead of paying a relay wake-up on top. An emission from the
        // receiver's own thread always goes straight there, so that, as with Qt, the thread's
        // next event loop pass runs it.
        if ((c->relay().isIdle() && inbox->isIdle()) || inbox->isCurrentThread())
            return inbox->push(call, call);
    } else if (Q_UNLIKELY(inbox->isCurrentThread())) {
        // The receiver's own thread, with earlier calls of this thread still in the relay:
        // once the relay has routed them, the call may go straight there, so that this
        // thread's next event loop pass runs it, as with Qt.
        flushCurrentThread(c, lane);
        return inbox->push(call, call);
    }
    lane->append(call);
    // stop() sweeps the queue after the relay's last round; a call queued after that sweep is
    // swept by its own producer.
    if (Q_UNLIKELY(c->isStopped()))
        c->sweepStoppedQueue();
}

QT_END_NAMESPACE
