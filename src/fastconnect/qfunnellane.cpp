// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnellane_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelemissionhook_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelplatform_p.h"
#include "qfunnelqueue_p.h"
#include "qfunnelwarning_p.h"

#include <QtCore/qvarlengtharray.h>

#include <limits>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Set when thread exit destroyed this thread's lanes: an emission from a later thread_local
// destructor must not touch them. Trivially destructible, so it outlives the lane set.
thread_local bool tlLanesGone = false;

struct LaneSet;
// This thread's set once made, for the emission hook, which runs on every signal of the process
// and must not make one. Trivially destructible; cleared by the set's destructor.
thread_local LaneSet *tlLaneSet = nullptr;

// This thread's lanes, one per funnel it emitted into; destroyed at thread exit.
struct LaneSet
{
    QVarLengthArray<QFunnelLane *, 4> lanes;
    bool flushing = false; // in flushThreadLanes()
    ~LaneSet()
    {
        QFunnelLane::tlCache = { nullptr, nullptr };
        QFunnelAdmission::clearThreadReservation();
        tlLaneSet = nullptr;
        tlLanesGone = true;
        if (processIsExiting()) {
            // ExitProcess() ended the relays: nothing would route what this thread queued.
            qDeleteAll(lanes);
            return;
        }
        // Calls emitted from here on bypass the relay (postWithoutLane()): first let the relay
        // route what this thread queued, so that they cannot overtake it.
        QFunnelCore *inFlight = nullptr;
        for (QFunnelLane *lane : std::as_const(lanes)) {
            // An idle relay keeps a batch open whose calls it routed long ago: with none of the
            // funnel's calls pending, none of this thread's is on its way either.
            if (lane->emittedSinceFlush() && !lane->canBypassRelay() && !lane->core()->isStopped()
                && lane->core()->admission().pendingCalls() > 0) {
                inFlight = lane->core();
            }
            flushCurrentThread(lane->core(), lane);
        }
        // Noted and printed by the application's main thread: Qt's message handler is not safe
        // in a thread's exit while the process may be tearing it down.
        if (inFlight)
            runInApplicationThread(inFlight, &warnFinishedInFlight);
        qDeleteAll(lanes);
    }
    // The emission hook flushed before the thread's last signal that posts (a QThread's
    // finished() with a queued or cross-thread connection); calls still on their way now came
    // after it, or the thread posted none: they may reach their receivers after what the
    // thread posted without a signal, or after a QThread::wait() in the receiver's thread.
    // Rate-limited (qfunnelwarning_p.h): threads exit by the thousand.
    static void warnFinishedInFlight(QFunnelCore *)
    {
        if (!qfcNoteWarning(QFunnelWarning::ExitInFlight))
            return;
        qWarning("QtFastConnect: a thread exited with calls emitted after its last flush() still "
                 "on their way to their receivers: what it posted without a signal "
                 "(deleteLater(), QMetaObject::invokeMethod(), postEvent()) and a QThread::wait() "
                 "for it may come before them. Call QtFastConnect::flush() (or QFunnel::flush()) "
                 "before those, or as the last line of the thread's function.");
    }
};

using ThreadLanes = QFunnelThreadObject<LaneSet>;

namespace {
std::atomic<quint64> nextLaneSerial { 1 }; // 0: no lane (QFunnelQueue::isSoleProducer())

quint32 newLaneSerial() noexcept
{
    const quint64 serial = nextLaneSerial.fetch_add(1, std::memory_order_relaxed);
    return serial <= std::numeric_limits<quint32>::max() ? quint32(serial) : 0;
}
} // namespace

QFunnelLane::QFunnelLane(QFunnelCore *core)
    : m_core(core), m_queue(&core->queue()), m_serial(newLaneSerial())
{
    m_core->ref();
    m_core->admission().addReservation(&m_reserved);
    m_core->addEmittedCounter(&m_emitted);
}

QFunnelLane::~QFunnelLane()
{
    m_core->removeEmittedCounter(&m_emitted);
    m_core->admission().removeReservation(&m_reserved);
    if (m_open && m_open->abandon())
        delete m_open; // sealed: the relay let go of it; otherwise it frees it after draining
    chargeRun();
    if (m_runInbox)
        m_runInbox->deref();
    m_core->deref();
}

void QFunnelLane::chargeRun() noexcept
{
    if (m_runCalls) {
        m_runInbox->charge(m_runCalls);
        m_runCalls = 0;
    }
}

void QFunnelLane::startRun(QFunnelInbox *inbox) noexcept
{
    // The call being counted holds a reference on a route to inbox, and so on inbox.
    inbox->ref();
    chargeRun();
    if (m_runInbox)
        m_runInbox->deref();
    m_runInbox = inbox;
    m_runCalls = 1;
}

QFunnelLane *QFunnelLane::forCurrentThreadSlow(QFunnelCore *core)
{
    if (Q_UNLIKELY(tlLanesGone))
        return nullptr;
    LaneSet &set = ThreadLanes::local();
    if (Q_UNLIKELY(!tlLaneSet)) {
        tlLaneSet = &set;
        installEmissionHook();
    }
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
    tlCache = { core, lane }; // the lane holds a reference: core cannot be reused meanwhile
    core->admission().setThreadReservation(&lane->m_reserved); // as tlCache: the lane used last
    return lane;
}

void QFunnelLane::flushThreadLanes()
{
    LaneSet *set = tlLaneSet;
    if (!set || set->flushing)
        return;
    set->flushing = true;
    // By index: posting barriers may drop a dead receiver's calls (user code), which may emit
    // into a funnel this thread has no lane for yet (appended), or drop a stopped funnel's lane
    // (then one lane after it may be skipped this time).
    for (qsizetype i = 0; i < set->lanes.size(); ++i) {
        QFunnelLane *lane = set->lanes[i];
        if (lane->emittedSinceFlush())
            flushWithBarriers(lane->core(), lane);
    }
    set->flushing = false;
}

void QFunnelLane::appendSlow(QFunnelCall *call, bool sealed)
{
    if (m_open) {
        if (!sealed && m_open->append(m_count, call, stamp())) {
            // The batch's last call (append() took every other case).
            m_open = nullptr; // full: the relay frees it once drained
            m_handedOff = true;
            return;
        }
        // Sealed before this call was published: reuse the batch for a new run.
        m_open->restart(call, stamp());
    } else {
        m_open = m_core->queue().newBatch();
        m_open->restart(call, stamp());
        m_handedOff = false; // until this batch is sealed, canBypassRelay() says no anyway
    }
    m_count = 1;
    // The only contended queue operation: once per batch, not per call.
    m_core->relay().ensureStarted();
    m_core->queue().pushBatch(m_open, m_serial);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
