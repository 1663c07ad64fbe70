// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelinbox_p.h"
#include "qfunnelprocessinghook_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelqtcompat_p.h"
#include "qfunnelreceiverguard_p.h"
#include "qfunnelrelay_p.h"
#include "qfunnelroute_p.h"
#include "qfunneltrace_p.h"
#include "pool/qpoolchunkbatch_p.h"

#include <QtFastConnect/qfastinvoke.h>

#include <QtCore/qelapsedtimer.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qthread_p.h>

#include <cstddef>
#include <limits>
#include <utility>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

inline bool QFunnelInbox::mustEvict() const noexcept
{
    return m_owedEvictions.load(std::memory_order_relaxed) != 0 // a hint; see evictOldest()
            || m_core->admission().evicting();
}

QFunnelInbox::QFunnelInbox(QFunnelCore *core, QFunnelReceiverGuard *guard, Qt::HANDLE threadId)
    : m_core(core), m_stopped(core->isStopped()), m_guard(guard), m_threadId(threadId)
{
    m_core->ref();
    m_guard->ref();
}

QFunnelInbox::~QFunnelInbox()
{
    // Every call holds a reference on a route, which holds one on this inbox: none is
    // left here. The registry keeps the statistics (QFunnelInboxRegistry::forget()).
    Q_ASSERT(!m_first && m_held.isEmpty() && m_parked.isEmpty() && m_incoming.isEmpty());
    // The calls admitted beyond the share whose evictions were still owed are gone too.
    if (const qsizetype owed = m_owedEvictions.load(std::memory_order_acquire)) // [P37 pay]
        m_core->admission().settleBeyondShare(owed);
    m_guard->deref();
    m_core->deref();
}

bool QFunnelInbox::tryRef() noexcept
{
    int n = m_ref.load(std::memory_order_relaxed);
    while (n > 0) {
        if (m_ref.compare_exchange_weak(n, n + 1, std::memory_order_relaxed))
            return true;
    }
    return false;
}

void QFunnelInbox::deref() noexcept
{
    // [P23 last] acq_rel: the last owner sees every other owner's writes before destroying.
    if (m_ref.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        m_core->inboxes().forget(this);
        delete this;
    }
}

void QFunnelInbox::dropPendingOnStop()
{
    // [P9 stop] seq_cst, as the core's own flag: a delivery loop that reads it after this store
    // (in the single order of seq_cst operations) starts no further slot.
    m_stopped.store(true, std::memory_order_seq_cst);
    // Only if the pass lock is free: a running pass may be in a slot that waits for this very
    // thread (that pass drops the rest when it ends).
    dropWhileUndeliverable();
}

void QFunnelInbox::putBack(QFunnelCall *call)
{
    if (!m_first)
        m_last = call;
    call->next = m_first;
    m_first = call;
}

// A pass of what admit() let in; barrier: without yielding to the event loop.
void QFunnelInbox::runPass(QObject *receiver, bool barrier)
{
    QFunnelCore *core = m_core;
    QObjectPrivate *const d = QObjectPrivate::get(receiver);
    // The receiver's thread data: this thread's, as the receiver's event is delivered here.
    QThreadData *const here = d->threadData.loadRelaxed();
    if (Q_UNLIKELY(here != m_registeredThread)) {
        // The first pass in this thread: producers running here must not block on a full
        // funnel (QFunnelAdmission::isReceiverThread()), and emissions from here go straight here.
        core->admission().addReceiverThread(here->thread.loadRelaxed());
        m_registeredThread = here;
        m_threadId.store(QThread::currentThreadId(), std::memory_order_relaxed);
    }
    if (Q_UNLIKELY(here->eventDispatcher.loadRelaxed() != m_hookedDispatcher
                   || QFunnelProcessingHook::epoch() != m_hookedEpoch)) {
        // The first pass with this dispatcher: this thread's event processings wait for the
        // relay's calls (a thread adopted, or an application made again, after the connect).
        m_hookedEpoch = QFunnelProcessingHook::epoch();
        m_hookedDispatcher = here->eventDispatcher.loadRelaxed();
        QFunnelProcessingHook::hookCurrentThread();
    }
    m_stall.notePass();
    Q_TRACE(qfunnel_pass_begin, this, m_budget.ns());
    m_passNowNs = 0; // read when first needed (deliverRateLimitedBatch())
    // A pass delivers what its wake-up admitted (a slot that emits again is served by the
    // next wake-up), within a budget; then it yields to the event loop.
    // Rate-limited calls that came due run before the pass yields: with a view, one layout for
    // the batches of a group (see QFunnelParkedCalls).
    const qsizetype due = Q_UNLIKELY(!m_parked.isEmpty()) ? unparkDue() : 0;
    qsizetype handled = 0;
    if (Q_UNLIKELY(mustEvict()))
        evictOldest();
    // Started after the first call, and only if more follow: a pass of one call (an idle
    // funnel's) never reads it. Then read after calls 2, 4, 8, ... up to CheckEvery, and every
    // CheckEvery calls from there: slow slots are timed closely, fast ones cheaply.
    constexpr int CheckEvery = QFunnelPassBudget::CheckEvery;
    QElapsedTimer clock;
    const qint64 budgetNs = m_budget.ns();
    const qint64 callBudget = m_budget.calls();
    qsizetype settled = 0;
    int count = 0;
    int nextCheck = 1;
    while (QFunnelCall *c = m_first) {
        QFunnelRoute *route = c->route;
        // Checked before every call (here, and inside runCallsOf()): stop() does not wait for a
        // running pass (its slot may wait for stop()'s thread), so once stop() has returned no
        // slot starts whose check came after it (one whose check raced with stop() may still
        // start: a guarantee without that window would cost every call a locked instruction);
        // and a slot may destroy the receiver or move it to another thread.
        if (Q_UNLIKELY(core->isStopped() || !m_guard->isAliveHere()
                       || d->threadData.loadRelaxed() != here
                       || (route->mode & QFunnelRoute::SpecialModes))) {
            m_first = c->next;
            const qsizetype n = deliverSpecial(c, receiver, here, handled >= due);
            if (n < 0)
                break; // moved: the rest goes to the receiver's new thread
            settled += n;
            handled += n;
            ++count;
        } else {
            // A run of this route's calls, up to the next check.
            const int n = runCalls(route, receiver, here, nextCheck - count);
            settled += n;
            handled += n;
            count += n;
        }
        if (count >= nextCheck) { // beyond it only after a batch (runBatch())
            nextCheck = count < CheckEvery ? 2 * count : count + CheckEvery;
            // Room for blocked producers as calls run, not in one burst at the end.
            if (settled >= CreditReturnCalls) {
                bump(m_finished, quint64(settled));
                core->admission().releaseCredits(m_stall.creditsOf(settled));
                settled = 0;
            }
            if ((count >= callBudget || (clock.isValid() && clock.nsecsElapsed() >= budgetNs))
                && !barrier && handled >= due) {
                break;
            }
            if (!clock.isValid() && m_first)
                clock.start();
            if (Q_UNLIKELY(mustEvict()))
                evictOldest();
        }
    }
    Q_TRACE(qfunnel_pass_end, this, handled, m_first != nullptr);
    if (clock.isValid())
        m_budget.spend(clock.nsecsElapsed()); // see passFor()
    bump(m_finished, quint64(settled));
    core->admission().releaseCreditsHere(m_stall.creditsOf(settled));
    if (Q_UNLIKELY(m_owedEvictions.load(std::memory_order_relaxed))) // a hint, read again there
        settleOwedEvictions(0);
    if (core->isStopped())
        dropAll(Drop::Stopped); // stop() found this pass running and left the rest to it
    else if (!m_guard->isAliveHere())
        dropAll(Drop::Dead); // a slot destroyed the receiver
}

void QFunnelInbox::run(QFunnelCall *call, QObject *receiver)
{
    QFunnelRoute *route = call->route;
    bump(m_delivered);
    {
        // What sender() and senderSignalIndex() read; they check that the sender is still
        // connected, exactly as for Qt's own queued calls. QObject::event() made sure the
        // receiver has connection data before it called the wake-up event.
        QFunnelSenderScope senderScope(receiver, route->sender, route->signalIndex,
                                       QObjectPrivate::get(receiver)->connections.loadRelaxed());
        route->run(receiver, call);
    }
    // After the sender scope's last look at the receiver: destroying the receiver cuts the
    // connection, which releases this route too, so the reference orders the two for
    // ThreadSanitizer (which cannot see Qt's own locks do it as well).
    route->deref();
}

// Runs the calls at the front of the pending list while they are route's, at most limit of
// them, and returns how many ran (at least the first, which the caller checked).
int QFunnelInbox::runCalls(QFunnelRoute *route, QObject *receiver, QThreadData *here, int limit)
{
    using Delivery = QFunnelRoute::Delivery;
    switch (route->delivery()) {
    case Delivery::InPlace:
        if (Q_LIKELY(route->acceptsReceiver(receiver)))
            return runCallsOf<int(Delivery::InPlace)>(route, receiver, here, limit);
        // A receiver whose subclass is already destroyed: Run's own check skips the slot.
        return runCallsOf<int(Delivery::Run)>(route, receiver, here, limit);
    case Delivery::Invoke:
        return runCallsOf<int(Delivery::Invoke)>(route, receiver, here, limit);
    case Delivery::Batch:
        if (Q_LIKELY(route->acceptsReceiver(receiver)))
            return runBatch(route, receiver, MaxBatchCalls);
        break; // as for InPlace: Run's own check skips the slot
    case Delivery::Run:
        break;
    }
    return runCallsOf<int(Delivery::Run)>(route, receiver, here, limit);
}

// The delivery loop. What a run of one route's calls shares is paid once per run, not per
// call: the sender scope (which sender() reads), the receiver class check (for invokes, its
// metaObject() lookup), the statistics, the references on the route, and the frees to the pool
// (one compare-exchange per run and arena, QPoolChunkBatch). Per call: pop it, run it, and see
// whether the slot destroyed the receiver (its sender scope tells), moved it to another thread,
// or stopped the funnel; then runPass()'s checks take over.
template<int Delivery>
int QFunnelInbox::runCallsOf(QFunnelRoute *route, QObject *receiver, QThreadData *here, int limit)
{
    using D = QFunnelRoute::Delivery;
    QObjectPrivate *const d = QObjectPrivate::get(receiver);
    QPoolChunkBatch freed;
    int left = limit; // counted down: one register, no compare with limit per call
    {
        // QObject::event() made sure the receiver has connection data before it called the
        // wake-up event.
        QFunnelSenderScope scope(receiver, route->sender, route->signalIndex,
                                 d->connections.loadRelaxed());
        // An invoke checks the receiver's class against its member function's. The class cannot
        // change within a run: a subclass destructor that pumps events runs a pass of its own,
        // and it returns only after that pass has ended.
        const QMetaObject *receiverClass = nullptr;
        if constexpr (Delivery == int(D::Invoke))
            receiverClass = receiver->metaObject();
        QFunnelCall *c = m_first;
        for (;;) {
            // Popped before the slot runs: a slot that runs an event loop may start a nested
            // pass, which takes the calls from m_first on.
            m_first = c->next;
            --left;
            if constexpr (Delivery == int(D::InPlace)) {
                route->runInPlace(receiver, c);
                freed.add(c);
            } else if constexpr (Delivery == int(D::Invoke)) {
                auto *call = static_cast<QFunnelInvokeCall *>(c);
                call->receiverClass = receiverClass;
                call->fn(receiver, call);
            } else {
                route->run(receiver, c);
            }
            if (Q_UNLIKELY(scope.receiverDestroyed()) || d->threadData.loadRelaxed() != here)
                break;
            c = m_first;
            // [P9 check] seq_cst: with dropPendingOnStop()'s store.
            if (!left || !c || c->route != route || m_stopped.load(std::memory_order_seq_cst))
                break;
        }
    }
    const int n = limit - left;
    bump(m_delivered, quint64(n));
    freed.flush();
    // After the sender scope's last look at the receiver: destroying the receiver cuts the
    // connection, which releases this route too, so the references order the two for
    // ThreadSanitizer (which cannot see that Qt's own locks do it as well).
    route->deref(n);
    return n;
}

// A batched connection: its slot runs once for the run of its calls at the front of the pending
// list (up to limit), in their order (with latestPerKey(), the newest of each key). A
// run, not every call of the connection pending: gathering those from between other
// connections' calls would cost a walk of the whole list per batch; the relay hands over each
// emitting thread's calls together, so a run is what one thread emitted since the relay's last
// round. Returns how many calls ran (at least one).
//
// The calls are walked twice: here, to find the run, and by the slot type's runBatch(), which
// moves their arguments into the batch. Pooled calls then go back to the pool as the list they
// form if one arena holds them all: known for a connection emitted from one thread
// (QFunnelRoute::hasOneArena()), checked call by call here otherwise.
int QFunnelInbox::runBatch(QFunnelRoute *route, QObject *receiver, int limit)
{
    static_assert(offsetof(QFunnelCall, next) == 0, "a call's link is its chunk's free-list link");
    QFunnelCall *const first = m_first;
    QFunnelCall *last = first;
    int left = limit - 1; // counted down: no compare with limit per call
    const bool pooled = route->isPooled();
    bool oneArena = pooled && route->hasOneArena();
    if (pooled && !oneArena) {
        const QPoolArenaHead *const arena = qPoolArenaOf(first);
        oneArena = true;
        for (QFunnelCall *c; left && (c = last->next) && c->route == route; --left) {
            if (Q_UNLIKELY(qPoolArenaOf(c) != arena))
                oneArena = false;
            last = c;
        }
    } else {
        for (QFunnelCall *c; left && (c = last->next) && c->route == route; --left)
            last = c;
    }
    const int n = limit - left;
    // Popped before the slot runs, as in runCallsOf().
    m_first = last->next;
    Q_TRACE(qfunnel_batch, route, n);
    qsizetype superseded;
    {
        QFunnelSenderScope scope(receiver, route->sender, route->signalIndex,
                                 QObjectPrivate::get(receiver)->connections.loadRelaxed());
        superseded = route->runBatch(receiver, first, n);
    }
    bump(m_delivered, quint64(n - superseded));
    if (superseded)
        bump(m_coalesced, quint64(superseded));
    if (pooled) {
        // The calls' headers outlived their arguments, and so did their links.
        QPoolChunkBatch freed;
        if (oneArena) {
            freed.addLinked(first, last);
        } else {
            QFunnelCall *c = first;
            for (int i = 0; i < n; ++i)
                freed.add(std::exchange(c, c->next));
        }
    }
    route->deref(n); // after the sender scope's last look at the receiver, as in runCallsOf()
    return n;
}

// Out of line, so that runPass() saves no registers for these: the funnel stopped, the
// receiver was destroyed or moved to another thread, or the connection coalesces its calls.
// Returns the credits the call gives back, or -1 if the pass must stop (the call is put back).
Q_NEVER_INLINE qsizetype QFunnelInbox::deliverSpecial(QFunnelCall *call, QObject *receiver,
                                                      QThreadData *here, bool pastUnparked)
{
    QFunnelRoute *route = call->route;
    if (m_core->isStopped()) {
        dropCall(call, Drop::Stopped);
        return 1;
    }
    if (!m_guard->isAliveHere()) {
        // The receiver was destroyed: like Qt, never call, just free the arguments.
        dropCall(call, Drop::Dead);
        return 1;
    }
    if (QObjectPrivate::get(receiver)->threadData.loadRelaxed() != here) {
        // A slot moved the receiver to another thread: this call and the rest wait for the
        // wake-up the pass's end posts, which Qt delivers in the receiver's new thread.
        putBack(call);
        return -1;
    }
    if (route->mode & QFunnelBatchedBit)
        return deliverRateLimitedBatch(call, receiver, pastUnparked);
    if (route->mode & QtFastConnect::RateLimitCalls)
        return deliverRateLimited(call, receiver);
    if (claimLatest(call))
        run(call, receiver);
    return 1;
}

// CoalesceCalls and RateLimitCalls: only the latest call of the connection runs. Returns true
// if call is that one (and the connection has no latest call any more); otherwise destroys it
// and counts it as coalesced. The comparison cannot be fooled by a reused address: a newer call
// cannot get this call's memory while this call exists.
bool QFunnelInbox::claimLatest(QFunnelCall *call)
{
    QFunnelCall *expected = call;
    // [P17 claim] Relaxed, like the capture's exchange: only the value matters (see noteLatest() in
    // qfunnelcapture.cpp).
    if (call->route->latest.compare_exchange_strong(expected, nullptr, std::memory_order_relaxed))
        return true;
    call->route->destroyCall(call);
    bump(m_coalesced);
    return false;
}

void QFunnelInbox::oweEviction(const void *inbox) noexcept
{
    auto *self = const_cast<QFunnelInbox *>(static_cast<const QFunnelInbox *>(inbox));
    self->m_stall.markFree(1); // before the call is queued, so before its push (P13)
    // [P37 owe] release: the pass that reads this count sees the mark above.
    self->m_owedEvictions.fetch_add(1, std::memory_order_release);
}

// DropOldest, with m_passLock held. First the calls admitted beyond this receiver's share: each
// holds no credit, and the oldest call waiting here makes way for it (the evicted call's credit
// is the newer one's from then on: none goes back). Then, while the whole funnel is over its
// capacity, the oldest calls make room for the newer ones their producers were admitted with.
void QFunnelInbox::evictOldest()
{
    // [P37 pay] acquire: the marks of the calls counted here are seen below.
    const qsizetype owed = m_owedEvictions.load(std::memory_order_acquire);
    qsizetype paid = 0;
    // While some pending call holds no credit: one that ran since took its mark with it (see
    // settleOwedEvictions()).
    while (paid < owed && m_first && m_stall.hasFreeCalls()) {
        QFunnelCall *c = m_first;
        m_first = c->next;
        dropCall(c, Drop::Evicted);
        bump(m_finished);
        m_core->admission().releaseCredits(m_stall.creditsOf(1)); // none, but for a mark gone
        ++paid;
    }
    if (owed)
        settleOwedEvictions(paid);
    // A stalled receiver's calls hold no credit, so evicting one makes no room.
    if (m_stall.hasFreeCalls() || !m_core->admission().evicting())
        return;
    while (m_first && m_core->admission().tryEvictOne()) {
        QFunnelCall *c = m_first;
        m_first = c->next;
        dropCall(c, Drop::Evicted);
        bump(m_finished);
    }
}

// With m_passLock held: paid owed evictions were made. Once no pending call is without a
// credit any more, every owed one is settled: the calls without one have run or were dropped,
// each returning no credit, which paid for them as an eviction would have.
void QFunnelInbox::settleOwedEvictions(qsizetype paid)
{
    // [P37 pay] acquire, as in evictOldest().
    const qsizetype owed = m_owedEvictions.load(std::memory_order_acquire);
    const qsizetype settled = m_stall.hasFreeCalls() ? qMin(paid, owed) : owed;
    if (settled <= 0)
        return;
    m_owedEvictions.fetch_sub(settled, std::memory_order_relaxed);
    m_core->admission().settleBeyondShare(settled);
}

// With m_passLock held: everything pushed, taken or parked.
void QFunnelInbox::dropAll(Drop why)
{
    admit(std::numeric_limits<quint64>::max()); // past every fence: all that was pushed
    m_parked.unparkAllInto(m_first, m_last);
    dropAdmitted(why);
}

// With m_passLock held: what passes may run now.
void QFunnelInbox::dropAdmitted(Drop why)
{
    qsizetype n = 0;
    while (QFunnelCall *c = m_first) {
        m_first = c->next;
        c->route->destroyCall(c);
        ++n;
    }
    m_completed.store(m_held.admitted(), std::memory_order_relaxed); // see passFor()
    if (!n)
        return;
    count(why, quint64(n));
    bump(m_finished, quint64(n));
    m_core->admission().releaseCredits(m_stall.creditsOf(n));
    if (Q_UNLIKELY(m_owedEvictions.load(std::memory_order_relaxed))) // a hint, read again there
        settleOwedEvictions(0);
}

// With m_passLock held. The caller returns the call's credit (except for an evicted call,
// whose credit went back when tryEvictOne() admitted the eviction).
void QFunnelInbox::dropCall(QFunnelCall *call, Drop why)
{
    call->route->destroyCall(call);
    count(why, 1);
}

void QFunnelInbox::count(Drop why, quint64 n) noexcept
{
    if (why == Drop::Dead)
        bump(m_discarded, n);
    else
        m_core->countDropped(n);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
