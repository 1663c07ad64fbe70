// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Delivery stage, the wake-ups: which calls a pass may run, so that funnel calls keep their place
// among the other events their emitting thread posts to the receiver's thread.
//
// Qt::QueuedConnection posts each call inside emit. A funnel call reaches the receiver's inbox
// later (through the relay), and the pass that runs it is started by a wake-up event. Each push
// posts one, whose fence counts the calls pushed before it was posted, and a pass runs no call
// beyond its fence. An event that a thread posted before it emitted a call is ahead, in the
// receiver thread's posted-event list, of every wake-up whose fence includes that call: the
// call was pushed after the event was posted, and the fence counted after the push. So no
// call runs before such an event ("never earlier"). A pass that runs out of its budget posts a
// Resume wake-up for the rest, behind the events already queued; Normal wake-ups handled before
// it leave their calls to it, so that however many wake-ups are queued, a receiver's thread
// runs one budgeted pass per event loop iteration. flush() posts Barrier wake-ups, whose passes
// run to their fence without yielding: an event the flushing thread posts afterwards comes
// after them ("never later, after flush()").

#include "qfunnelinbox_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelinboxregistry_p.h"
#include "qfunnelqtcompat_p.h"
#include "qfunnelreceiverguard_p.h"
#include "qfunnelrelay_p.h"

#include <QtCore/private/qobject_p.h>

#include <chrono>
#include <thread>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

// The wake-up: a meta-call event, as Qt posts for a queued call, so that event filters and
// QObject::event() overrides see what they see for Qt::QueuedConnection, and moveToThread()
// and ~QObject treat it as one of the receiver's posted events.
class QFunnelWakeEvent final : public QAbstractMetaCallEvent
{
public:
    using Kind = QFunnelInbox::WakeKind;
    QFunnelWakeEvent(QFunnelInbox *inbox, quint64 fence, Kind kind)
        : QAbstractMetaCallEvent(nullptr, -1), m_inbox(inbox), m_fence(fence), m_kind(kind)
    {
        inbox->ref();
    }
    ~QFunnelWakeEvent() override
    {
        qfcAnnotateAcquire(this); // [P21 take] may be deleted undelivered, in another thread
        if (m_armed)
            m_inbox->wakeDiscarded(m_fence, m_kind);
        m_inbox->deref();
    }
    void placeMetaCall(QObject *receiver) override
    {
        qfcAnnotateAcquire(this); // [P21 take] it travelled through Qt's posted-event list
        m_armed = false;
        m_inbox->wake(receiver, m_fence, m_kind);
    }
    void disarm() noexcept { m_armed = false; }

private:
    QFunnelInbox *const m_inbox;
    const quint64 m_fence;
    const Kind m_kind;
    bool m_armed = true; // not delivered yet
};

} // namespace

void QFunnelInbox::requestWake(quint64 fence)
{
    // A Normal wake-up already claimed with a fence as high covers these calls: its fence was
    // counted after theirs (fences only grow with m_pushed), so it is posted after they were
    // pushed. Relaxed: the claim is a number compared with another; what orders the calls for
    // that wake-up's pass is m_pushed (see push()).
    quint64 claimed = m_wakeFence.load(std::memory_order_relaxed);
    do {
        if (claimed >= fence)
            return;
    } while (!m_wakeFence.compare_exchange_weak(claimed, fence, std::memory_order_relaxed));
    postWake(fence, WakeKind::Normal);
}

bool QFunnelInbox::postWake(quint64 fence, WakeKind kind)
{
    // Relaxed: a count for the stall check, which reads it as a hint.
    m_wakesPending.fetch_add(1, std::memory_order_relaxed);
    if (kind == WakeKind::Resume)
        m_resumesPending.fetch_add(1, std::memory_order_relaxed);
    auto *e = new QFunnelWakeEvent(this, fence, kind);
    qfcAnnotateRelease(e); // [P21 post]
    if (Q_LIKELY(m_guard->post(e)))
        return true;
    // The receiver was destroyed: its calls, with whatever follows them, are dropped in the
    // thread it was destroyed in (a thread that knows none drops them here), never by the relay
    // or the rate-limit timer, which run no user code.
    e->disarm();
    delete e;
    m_wakesPending.fetch_sub(1, std::memory_order_relaxed);
    if (kind == WakeKind::Resume)
        m_resumesPending.fetch_sub(1, std::memory_order_relaxed);
    // ~QObject clears the receiver's weak references before it emits destroyed(): until the
    // guard's hook has run there, the destroying thread is unknown, and the hook drops them.
    if (!m_guard->dropWhenDestroyed(this))
        dropWhereDestroyed();
    return false;
}

void QFunnelInbox::dropWhereDestroyed()
{
    const std::shared_ptr<QFunnelLastThread> last = m_guard->lastThread();
    if (QFunnelRelay::isRelayThread() || QFunnelParkedTimer::isTimerThread()
        || (last && !last->isCurrent())) {
        m_core->inboxes().deferDrop(m_core, this);
        return;
    }
    ref(); // dropping the last call may release the last route referencing this
    dropWhileUndeliverable();
    deref();
}

// While the receiver is dead or the funnel stopped, nothing will ever deliver what is pushed:
// drop it, again and again until nothing is left or another thread holds the pass lock. Every
// holder of the lock calls this (or settle()) after unlocking, so what a thread leaves because
// the lock was taken is always looked at again. Never posts: it may run inside Qt's deletion of
// a posted event, under Qt's posted-event lock.
void QFunnelInbox::dropWhileUndeliverable()
{
    for (;;) {
        const bool dead = !m_guard->isAlive();
        if (!dead && !m_core->isStopped())
            return;
        if (!m_passLock.tryLock())
            return;
        dropAll(dead ? Drop::Dead : Drop::Stopped); // also what a pass took and left
        m_passLock.unlock();
        if (!m_incoming.hasPushesAfterUnlock())
            return;
    }
}

// After a thread other than a pass of the receiver's thread unlocked the pass lock: a wake-up
// handled meanwhile found the lock taken and left its calls (see wake()). They, and what was
// pushed meanwhile, get a wake-up of their own (or are dropped, if the receiver is dead);
// leftover: whether the holder left calls taken.
void QFunnelInbox::settle(bool leftover)
{
    if (m_incoming.hasPushesAfterUnlock() || leftover)
        wakeForAll();
}

// With the pass lock held: the pass a wake-up asks for. Returns the fence of the Resume wake-up
// to post for what it leaves (out of budget, or the receiver moved to another thread), or 0.
quint64 QFunnelInbox::passFor(QObject *receiver, quint64 fence, WakeKind kind)
{
    if (kind == WakeKind::Resume) {
        m_resumesPending.fetch_sub(1, std::memory_order_relaxed);
        fence = qMax(fence, m_resumeFence);
        m_budget.resume();
    } else if (kind == WakeKind::Normal && m_resumesPending.load(std::memory_order_relaxed) > 0) {
        // The Resume wake-up behind this one runs these calls too: later, never earlier.
        m_resumeFence = qMax(m_resumeFence, fence);
        return 0;
    }
    admit(fence);
    runPass(receiver, kind == WakeKind::Barrier);
    if (!m_first) {
        // Relaxed: a hint for flush() (postBarrier()), which posts a barrier when in doubt.
        m_completed.store(m_held.admitted(), std::memory_order_relaxed);
        // Passes of wake-ups handled in one go by Qt's sendPostedEvents() would add up beyond
        // one budget between two paints: once they used it, the next waits for a Resume, in
        // the next event loop iteration.
        if (!m_budget.usedUp() || kind == WakeKind::Barrier) {
            m_budget.caughtUp();
            return 0;
        }
    }
    m_resumeFence = qMax(m_resumeFence, fence);
    m_budget.yielded();
    return m_resumeFence;
}

void QFunnelInbox::wake(QObject *receiver, quint64 fence, WakeKind kind)
{
    m_wakesPending.fetch_sub(1, std::memory_order_relaxed);
    const Qt::HANDLE self = QThread::currentThreadId();
    if (m_passOwner.load(std::memory_order_relaxed) == self) {
        // Nested: a slot of the outer pass runs an event loop (a dialog's exec(), a QEventLoop).
        // The outer pass continues only when that slot returns, which may be long after: what
        // this pass leaves, out of budget, gets its own wake-up now, so the nested loop runs
        // it, as it runs Qt's queued calls.
        if (const quint64 resume = passFor(receiver, fence, kind))
            postWake(resume, WakeKind::Resume);
        return;
    }
    // Taken by another thread only while it finishes a pass of the receiver's old thread, checks
    // for a stall or drops calls; it settles what it leaves when it unlocks. A barrier waits for
    // it instead: what that holder leaves would run after the events flush()'s thread posted
    // behind the barrier. (A slot of the old thread's pass that waits for this thread, moving
    // its receiver here first, deadlocks then; the old thread's pass stops after that slot.)
    if (!m_passLock.tryLock()) {
        if (kind != WakeKind::Barrier) {
            if (kind == WakeKind::Resume)
                m_resumesPending.fetch_sub(1, std::memory_order_relaxed);
            return;
        }
        waitForPassLock();
    }
    m_passOwner.store(self, std::memory_order_relaxed);
    QThreadData *const here = QObjectPrivate::get(receiver)->threadData.loadRelaxed();
    const quint64 resume = passFor(receiver, fence, kind);
    m_passOwner.store(nullptr, std::memory_order_relaxed);
    // A slot moved the receiver to another thread: wake-ups handled there meanwhile found the
    // lock taken. (A slot that destroyed it left nothing to deliver.)
    const bool moved = m_guard->isAliveHere()
            && QObjectPrivate::get(receiver)->threadData.loadRelaxed() != here;
    const bool leftover = m_first || !m_held.isEmpty();
    m_passLock.unlock();
    if (resume) {
        // After a move, its fence also covers what the wake-ups lost there were for.
        // [P5 fence] acquire: as in wakeForAll().
        postWake(moved ? qMax(resume, m_pushed.load(std::memory_order_acquire)) : resume,
                 WakeKind::Resume);
    } else if (moved) {
        settle(leftover);
    }
}

// Only try-locked elsewhere, and held briefly by other threads: a barrier's wait polls it.
void QFunnelInbox::waitForPassLock()
{
    for (int tries = 0; !m_passLock.tryLock(); ++tries) {
        if (tries < 64)
            QThread::yieldCurrentThread();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

void QFunnelInbox::wakeDiscarded(quint64 fence, WakeKind kind)
{
    m_wakesPending.fetch_sub(1, std::memory_order_relaxed);
    if (kind == WakeKind::Resume)
        m_resumesPending.fetch_sub(1, std::memory_order_relaxed);
    // The calls this wake-up stood for are cancelled, as Qt cancels a queued call whose
    // meta-call event is removed unsent (removePostedEvents()) or swallowed by an event filter
    // or an event() override: dropped and counted as discarded, so that a receiver that never
    // lets its calls run does not hold the funnel's capacity. Qt deletes posted events after it
    // unlocks its posted-event lock (removePostedEvents(), sendPostedEvents(), ~QThreadData),
    // so settling may post one.
    ref(); // dropping the last call may release the last route referencing this
    if (m_passLock.tryLock()) {
        if (kind == WakeKind::Resume)
            fence = qMax(fence, m_resumeFence);
        admit(fence);
        dropAdmitted(Drop::Dead);
        const bool leftover = m_first || !m_held.isEmpty();
        m_passLock.unlock();
        settle(leftover); // a wake-up that found the lock taken meanwhile left its calls to us
    }
    dropWhileUndeliverable(); // what was pushed meanwhile, if the receiver is dead
    deref();
}

void QFunnelInbox::postBarrier()
{
    // The calling thread's pushes happened before: its own, or the relay's, which completed
    // this thread's flush marker after them. Relaxed: counts; a stale m_completed only posts
    // a barrier with nothing to do.
    const quint64 fence = m_pushed.load(std::memory_order_relaxed);
    if (m_completed.load(std::memory_order_relaxed) >= fence)
        return;
    postWake(fence, WakeKind::Barrier);
}

// With the pass lock held: what was pushed, up to position fence, joins the calls a pass runs.
void QFunnelInbox::admit(quint64 fence)
{
    m_held.take(m_incoming);
    m_held.admit(fence, m_first, m_last);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
