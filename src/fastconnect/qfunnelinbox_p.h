// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELINBOX_P_H
#define QFUNNELINBOX_P_H

//
//  W A R N I N G
//  -------------
//
// This file is not part of the QtFastConnect API. It exists purely as an
// implementation detail. This header file may change from version to
// version without notice, or even be removed.
//
// We mean it.
//

#include "qfunnelcallstack_p.h"
#include "qfunnelheldcalls_p.h"
#include "qfunnelparkedcalls_p.h"
#include "qfunnelpassbudget_p.h"
#include "qfunnelstallstate_p.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qmutex.h>
#include <QtCore/qthread.h>

#include <atomic>

QT_BEGIN_NAMESPACE

class QAbstractEventDispatcher;
class QThreadData;

namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelReceiverGuard;

// Delivery stage: the calls of one funnel waiting for one receiver (or context object), shared
// by all the funnel's connections and invokes to that receiver. Producers (directly, when the
// funnel is idle) and the relay push chains of calls; each push posts a wake-up: a meta-call
// event addressed to the receiver itself. So the wake-up lives in the receiver's thread's
// posted-event list like a Qt::QueuedConnection call, and QObject::moveToThread() takes it along
// to the receiver's new thread, even when the old thread is blocked or has finished. The
// receiver's thread then runs the calls in its event loop, a bounded pass at a time, so paint
// and input events interleave with a flood. Passes may nest (a slot that runs an event loop),
// like Qt's sendPostedEvents().
//
// Order with the receiver thread's other events (qfunnelinboxwake.cpp): a wake-up carries a
// fence, the number of calls pushed before it was posted, and its pass runs no call beyond it,
// so no call runs before an event its emitting thread posted before emitting it. A barrier
// wake-up (flush()) runs up to its fence without yielding to the event loop, so that no event
// posted after flush() overtakes the calls emitted before it.
//
// Reference counted: each route to it holds one, and so does a wake-up in flight; the receiver's
// guard keeps one while the receiver lives and the funnel runs (retainInbox()).
class QFunnelInbox
{
    Q_DISABLE_COPY_MOVE(QFunnelInbox)
public:
    // A pass yields after its budget (QFunnelPassBudget): passes of wake-ups handled together
    // share it (see passFor()).

    // A batched connection's slot gets at most this many calls at once: beyond it, batches
    // save nothing measurable and one slot call would hold the thread for longer than a pass.
    // Not with RateLimitCalls, whose batch is everything since the last one.
    static constexpr int MaxBatchCalls = 4096;
    // Credits go back to blocked producers every CreditReturnCalls calls run, so that they
    // refill as room is made instead of all at once after a pass; not after every call, since
    // each return may wake a producer (a futex call).
    static constexpr int CreditReturnCalls = 512;

    // Holds references on core and guard. threadId: the receiver's thread now (a hint).
    QFunnelInbox(QFunnelCore *core, QFunnelReceiverGuard *guard, Qt::HANDLE threadId);

    void ref() noexcept { m_ref.fetch_add(1, std::memory_order_relaxed); }
    // Only for the registry's lookup: fails if the inbox is already being destroyed.
    bool tryRef() noexcept;
    void deref() noexcept;

    QFunnelReceiverGuard *guard() const noexcept { return m_guard; }
    const QFunnelCore *core() const noexcept { return m_core; }

    // Whether no call waits to be taken; any thread. A hint for the capture's choice of path,
    // relaxed: either answer is correct (a push lands behind what the inbox holds); a stale one
    // costs a wake-up per call or a relay round.
    bool isIdle() const noexcept { return m_incoming.isEmpty(); }
    // Pushes a chain of n calls linked newest → oldest (top->next ... bottom), keeping its
    // order, and posts a wake-up for them.
    void push(QFunnelCall *top, QFunnelCall *bottom, quint32 n = 1)
    {
        publish(QFunnelCallStack::newestFirst(top, bottom), n);
    }
    // The relay's push: a chain of n calls linked oldest → newest (first->next ... last; last's
    // link is not read), pushed whole (QFunnelCallStack::oldestFirst()).
    void pushInOrder(QFunnelCall *first, QFunnelCall *last, quint32 n)
    {
        publish(QFunnelCallStack::oldestFirst(first, last, n), n);
    }

    // A producer waits for room (any thread): if this receiver's thread has not handled the
    // wake-up posted for its calls for StalledMs (it is blocked), or for
    // QFunnelAdmission::StallCheckMs while it has no event loop (finished, not started), its
    // pending calls stop counting against the capacity, and so do the calls pushed for it until
    // its thread runs a pass again, as Qt's queued calls wait for a thread that may start
    // again. Returns the credits given back.
    static constexpr qint64 StalledMs = 1000;
    qsizetype releaseIfStalled(qint64 nowMs);

    // Isolation (QFunnelAdmission::ShareOfRoomLeft): calls admitted for this receiver, charged by
    // the producers' lanes a run at a time (QFunnelLane::countForShare()); any thread.
    void charge(qsizetype calls) noexcept
    {
        // Relaxed: a count; heldCalls() is a hint.
        m_charged.fetch_add(quint64(calls), std::memory_order_relaxed);
    }
    // The calls admitted for this receiver and not yet run or dropped, wherever they are (in a
    // lane, in the relay's hands, here, parked), less each producer's run not charged yet (at
    // most a chunk of credits); any thread. Relaxed: a hint.
    qsizetype heldCalls() const noexcept
    {
        const quint64 charged = m_charged.load(std::memory_order_relaxed);
        const quint64 finished = m_finished.load(std::memory_order_relaxed);
        // A pass may finish calls before their producer has charged them.
        return charged > finished ? qsizetype(charged - finished) : 0;
    }
    // QFunnelAdmission::HeldCalls for a producer waiting for this inbox (inbox): heldCalls(), or
    // -1 once its producers must not wait for it any more: its thread stalled (its calls hold
    // no room), it was destroyed, or the funnel stopped.
    static qsizetype heldCallsToWaitFor(const void *inbox) noexcept;
    // QFunnelAdmission::OweEviction (DropOldest), any thread: a call to this receiver was
    // admitted beyond its share, without a credit; this receiver's oldest pending call makes
    // way for it (evictOldest()). Before the call is queued.
    static void oweEviction(const void *inbox) noexcept;

    // True when the calling thread is the one the receiver lived in at its last delivery pass
    // (or at connect time): a hint for the capture's "the receiver's own thread" path, read
    // relaxed. A stale answer only sends a call through the relay instead of around it.
    bool isCurrentThread() const noexcept
    {
        return m_threadId.load(std::memory_order_relaxed) == QThread::currentThreadId();
    }

    // Statistics, any thread: calls run, calls not run because their receiver was destroyed,
    // calls skipped because a newer one of their connection was pending (CoalesceCalls).
    quint64 deliveredCalls() const noexcept { return m_delivered.load(std::memory_order_relaxed); }
    quint64 discardedCalls() const noexcept { return m_discarded.load(std::memory_order_relaxed); }
    quint64 coalescedCalls() const noexcept { return m_coalesced.load(std::memory_order_relaxed); }

    // What a wake-up asks for: a pass up to its fence, budgeted (Normal), the rest of a pass
    // that yielded (Resume), or a pass that does not yield before its fence (Barrier).
    enum class WakeKind : quint8 { Normal, Resume, Barrier };
    // The wake-up event's handler, in the receiver's thread (receiver is alive there).
    void wake(QObject *receiver, quint64 fence, WakeKind kind);
    // The wake-up event was destroyed without being delivered (its receiver was destroyed, or
    // someone removed its posted events): the calls up to its fence are cancelled.
    void wakeDiscarded(quint64 fence, WakeKind kind);
    // flush(), in the flushing thread: if calls pushed here may not have run yet, posts a
    // barrier wake-up for them.
    void postBarrier();
    // Called by QFunnelCore::stop(), in the stopping thread: drops what is pending now, unless
    // a delivery pass is running (then that pass drops it when it ends). Qt delivers no events
    // once the application is gone, so the stopping thread cannot leave this to the receiver's.
    void dropPendingOnStop();
    // RateLimitCalls: the timer for parked calls fired, or was destroyed unfired (see
    // deliverRateLimited()).
    void parkedCallsDue();
    void parkedTimerLost();
    // While the receiver is dead or the funnel stopped, drops what is pending (any thread that
    // may run user code; see the .cpp).
    void dropWhileUndeliverable();
    // The receiver was destroyed: drops its calls in the thread that destroyed it, now if that
    // is the calling thread (or it is unknown and this thread may run user code), else through
    // a task posted there (QFunnelInboxRegistry::deferDrop()). Any thread.
    void dropWhereDestroyed();

private:
    ~QFunnelInbox();
    // Why calls are dropped: the funnel stopped, or DropOldest evicted them (both counted as
    // dropped), or their receiver is dead (counted as discarded).
    enum class Drop { Stopped, Evicted, Dead };
    // Pushes the chain of n calls and posts their wake-up.
    void publish(const QFunnelCallStack::Chain &chain, quint32 n)
    {
        // A stalled receiver's calls hold no capacity (releaseIfStalled()): these give their
        // credits back, marked before they are published, so that no pass finishes them first.
        const bool detached = m_stall.isDetached();
        if (Q_UNLIKELY(detached))
            m_stall.markFree(n);
        // Once published, the calls (and the routes that keep this inbox alive) may be
        // delivered and freed before push() returns: hold a reference until it has.
        ref();
        m_incoming.push(chain);
        // [P5 count] Counted after the push: a wake-up whose fence includes these calls is posted
        // after they were pushed, also one another thread posts (requestWake()): acq_rel, so that
        // a fence read from this count comes after the push, and the pass of that wake-up
        // finds these calls in m_incoming.
        const quint64 fence = m_pushed.fetch_add(n, std::memory_order_acq_rel) + n;
        requestWake(fence);
        if (Q_UNLIKELY(detached))
            releaseCreditFree(n);
        deref();
    }
    // A push's wake-up: posted unless a Normal one with a fence as high was claimed.
    void requestWake(quint64 fence);
    // A wake-up for everything pushed so far (a timer fired, a pass left calls to others).
    // [P5 fence] acquire: pairs with push()'s count, so that the fence comes after those pushes.
    void wakeForAll() { postWake(m_pushed.load(std::memory_order_acquire), WakeKind::Normal); }
    bool postWake(quint64 fence, WakeKind kind);
    void settle(bool leftover);
    void waitForPassLock();
    quint64 passFor(QObject *receiver, quint64 fence, WakeKind kind);
    void releaseCreditFree(qsizetype n);
    void runPass(QObject *receiver, bool barrier);
    void admit(quint64 fence);
    void dropAll(Drop why);
    void dropAdmitted(Drop why);
    void dropCall(QFunnelCall *call, Drop why);
    void count(Drop why, quint64 n) noexcept;
    qsizetype deliverSpecial(QFunnelCall *call, QObject *receiver, QThreadData *here,
                             bool pastUnparked);
    int runCalls(QFunnelRoute *route, QObject *receiver, QThreadData *here, int limit);
    int runBatch(QFunnelRoute *route, QObject *receiver, int limit);
    template<int Delivery>
    int runCallsOf(QFunnelRoute *route, QObject *receiver, QThreadData *here, int limit);
    void run(QFunnelCall *call, QObject *receiver);
    void putBack(QFunnelCall *call);
    bool claimLatest(QFunnelCall *call);
    qsizetype deliverRateLimited(QFunnelCall *call, QObject *receiver);
    qsizetype deliverRateLimitedBatch(QFunnelCall *call, QObject *receiver, bool pastUnparked);
    void park(QFunnelCall *first, QFunnelCall *last, qsizetype n);
    qsizetype unparkDue();
    void armParkedTimer(qint64 dueNs);
    // DropOldest: whether the pass must evict calls (the funnel is over its capacity, or calls
    // admitted beyond this receiver's share wait for the oldest to make way).
    bool mustEvict() const noexcept;
    void evictOldest();
    void settleOwedEvictions(qsizetype paid);
    // Single writer (the pass lock's holder, which orders successive writers); no locked
    // instruction.
    static void bump(std::atomic<quint64> &c, quint64 n = 1) noexcept
    {
        c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    std::atomic<int> m_ref { 1 };

    QFunnelCallStack m_incoming; // calls pushed and not yet taken
    // Calls pushed so far (the fences count them), and the highest fence a Normal wake-up was
    // posted with: a push whose calls an already posted wake-up covers posts none.
    std::atomic<quint64> m_pushed { 0 };
    std::atomic<quint64> m_wakeFence { 0 };
    // Wake-up events posted and neither handled nor discarded yet (the stall check's "its
    // wake-up waits").
    std::atomic<int> m_wakesPending { 0 };
    // Every call below this position has run or was dropped (pass lock holder writes; flush()
    // reads it to skip an inbox with nothing left).
    std::atomic<quint64> m_completed { 0 };
    // Calls admitted for this receiver (charge()), and those that ran or were dropped here
    // (single writer, the pass lock's holder, which adds to it before it returns their credits:
    // see P7 in docs/architecture.md).
    std::atomic<quint64> m_charged { 0 };
    std::atomic<quint64> m_finished { 0 };

    // Held for a whole delivery pass, and by whoever drops calls. Only ever try-locked: its
    // holder settles what it leaves behind (settle()) after unlocking.
    QBasicMutex m_passLock;
    std::atomic<Qt::HANDLE> m_passOwner { nullptr }; // the holder's thread, for nested passes
    // Calls taken from m_incoming and admitted by a wake-up's fence, not yet delivered, oldest
    // first; guarded by m_passLock. m_last is valid only while m_first is not null (popping a
    // call never updates it).
    QFunnelCall *m_first = nullptr;
    QFunnelCall *m_last = nullptr;
    // Calls taken from m_incoming beyond every fence handled so far; guarded by m_passLock.
    QFunnelHeldCalls m_held;
    // While a pass that yielded has its Resume wake-up pending, a Normal wake-up handled
    // before it leaves its calls to it (raising m_resumeFence, guarded by m_passLock), so that
    // a receiver's thread runs one budgeted pass per event loop iteration however many
    // wake-ups are queued. The count is changed by whoever posts, handles or discards one.
    std::atomic<int> m_resumesPending { 0 }; // posted and not handled or discarded; relaxed
    quint64 m_resumeFence = 0;
    QFunnelPassBudget m_budget; // guarded by m_passLock
    // RateLimitCalls: calls waiting for their connection's interval (guarded by m_passLock),
    // and the steady clock as the running pass first read it, or 0.
    QFunnelParkedCalls m_parked;
    qint64 m_passNowNs = 0;

    QFunnelCore *const m_core;
    // The funnel stopped: set by dropPendingOnStop() (QFunnelCore::stop() reaches every inbox
    // before it returns) or at construction. The delivery loop reads this instead of the
    // core's flag: one load from the inbox it already holds.
    std::atomic<bool> m_stopped;
    QFunnelReceiverGuard *const m_guard;
    std::atomic<Qt::HANDLE> m_threadId;
    QThreadData *m_registeredThread = nullptr; // pass lock holder only; see runPass()
    // The dispatcher this inbox's passes last saw hooked, and the hook's epoch then (pass lock
    // holder only; see runPass()).
    QAbstractEventDispatcher *m_hookedDispatcher = nullptr;
    quint32 m_hookedEpoch = 0;

    // Whether the receiver's thread stalled, and how many calls hold no credit (releaseIfStalled():
    // a producer waiting for room checks; the next pass ends it).
    QFunnelStallState m_stall;
    // DropOldest: calls admitted beyond this receiver's share whose eviction of an older call
    // is still owed (oweEviction(); the pass lock's holder pays it).
    std::atomic<qsizetype> m_owedEvictions { 0 };

    std::atomic<quint64> m_delivered { 0 };
    std::atomic<quint64> m_discarded { 0 };
    std::atomic<quint64> m_coalesced { 0 };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELINBOX_P_H
