// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelcore_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelinbox_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qthread.h>
#include <QtCore/private/qthread_p.h>

#include <algorithm>
#include <chrono>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelCore::QFunnelCore()
    : m_capacity(65536), m_credits(65536), m_relay(m_queue)
{
    m_relay.start();
}

QFunnelCore::~QFunnelCore()
{
    // No slot object, lane, inbox or call exists any more: each holds a reference.
    stop();
}

void QFunnelCore::stop()
{
    if (m_stopped.exchange(true, std::memory_order_seq_cst))
        return;
    wakeBlockedProducers();
    m_relay.stopAndJoin();
    sweepStoppedQueue();
    // Dropping runs argument and functor destructors (user code, which may connect): not
    // under the inbox lock. The references keep the copied inboxes alive meanwhile.
    QList<QFunnelInbox *> inboxes;
    {
        QMutexLocker locker(&m_inboxLock);
        inboxes.reserve(m_inboxes.size());
        for (QFunnelInbox *inbox : std::as_const(m_inboxes)) {
            if (inbox->tryRef())
                inboxes.append(inbox);
        }
    }
    for (QFunnelInbox *inbox : std::as_const(inboxes)) {
        inbox->dropPendingOnStop();
        inbox->deref();
    }
}

void QFunnelCore::sweepStoppedQueue()
{
    ref(); // dropping the last call may release the last slot object, and with it this core
    {
        QMutexLocker locker(&m_sweepLock);
        quint64 dropped = 0;
        bool tookStopToken = false;
        for (QFunnelBatch *b = nullptr; m_queue.tryPop(b);) {
            if (!b) {
                // A producer sweeping while stop() waits for the relay may get here first; the
                // relay has not seen the token then (it exits on it), so it goes back below.
                tookStopToken = true;
                continue;
            }
            if (QFunnelFlushMarker::is(b)) {
                static_cast<QFunnelFlushMarker *>(b)->complete();
                continue;
            }
            // The relay's protocol, minus the delivery: its producer may still be appending.
            quint32 done = 0;
            for (;;) {
                const quint32 s = b->load();
                const quint32 n = QFunnelBatch::count(s);
                for (; done < n; ++done, ++dropped)
                    b->calls[done]->slotObject->destroyCall(b->calls[done]);
                if (n == QFunnelBatch::Capacity || (s & QFunnelBatch::Abandoned)) {
                    delete b;
                    break;
                }
                if (b->trySeal(s))
                    break;
            }
        }
        if (dropped) {
            countDropped(dropped);
            releaseCredits(qsizetype(dropped));
        }
        if (tookStopToken)
            m_queue.push(nullptr);
    }
    deref();
}

void QFunnelCore::setCapacity(qsizetype calls)
{
    const qsizetype old = m_capacity.exchange(calls, std::memory_order_relaxed);
    // Credits move by the difference; a shrink below what is pending just makes producers wait
    // until enough calls have been delivered.
    m_credits.fetch_add(calls - old, std::memory_order_seq_cst);
    if (calls > old)
        wakeBlockedProducers();
}

void QFunnelCore::addReservation(Reservation *r)
{
    QMutexLocker locker(&m_reservationsLock);
    m_reservations.append(r);
}

void QFunnelCore::removeReservation(Reservation *r)
{
    qsizetype held;
    {
        QMutexLocker locker(&m_reservationsLock);
        m_reservations.removeOne(r);
        held = r->exchange(0, std::memory_order_relaxed);
    }
    releaseCredits(held);
}

bool QFunnelCore::reclaimReservations()
{
    qsizetype reclaimed = 0;
    {
        QMutexLocker locker(&m_reservationsLock);
        // A lane's owner may be between its fetch_sub and the undo; whatever this exchange
        // sees (even -1) keeps pool + reservations + pending equal to the capacity.
        for (Reservation *r : std::as_const(m_reservations))
            reclaimed += r->exchange(0, std::memory_order_relaxed);
    }
    if (reclaimed)
        m_credits.fetch_add(reclaimed, std::memory_order_seq_cst);
    return reclaimed > 0;
}

qsizetype QFunnelCore::pendingCalls()
{
    QMutexLocker locker(&m_reservationsLock);
    qsizetype free = m_credits.load(std::memory_order_relaxed);
    // A lane between its fetch_sub and the undo reads -1 while holding nothing: count it as 0.
    for (Reservation *r : std::as_const(m_reservations))
        free += std::max<qsizetype>(r->load(std::memory_order_relaxed), 0);
    return capacity() - free;
}

bool QFunnelCore::refillCredit(Reservation &r)
{
    // Up to 1/64 of the capacity at a time (at most 64): exact for tiny capacities, and at most
    // a 63-call reservation idling per producer thread for the default one.
    const qsizetype cap = capacity();
    const qsizetype chunk = std::clamp<qsizetype>(cap / 64, 1, 64);
    for (int attempt = 0; attempt < 2; ++attempt) {
        qsizetype available = m_credits.load(std::memory_order_relaxed);
        while (available > 0) {
            const qsizetype take = qMin(available, chunk);
            if (m_credits.compare_exchange_weak(available, available - take,
                                                std::memory_order_relaxed)) {
                r.fetch_add(take - 1, std::memory_order_relaxed);
                // Once per chunk, not per call: the depth counts this call but not the rest
                // of the chunk, which is still only reserved.
                noteDepth(cap - (available - take) - (take - 1));
                return true;
            }
        }
        if (attempt == 0 && !reclaimReservations())
            break;
    }

    // Full. A thread that receives from this funnel must not wait for room: the calls that
    // would make room may be waiting for this very thread. It goes over capacity, counted.
    if (isReceiverThread(QThread::currentThread())) {
        noteDepth(cap - m_credits.fetch_sub(1, std::memory_order_relaxed) + 1);
        m_overCapacity.fetch_add(1, std::memory_order_relaxed);
        return true;
    }

    switch (policy()) {
    case DropNewest:
        return false;   // the caller drops this call and counts it
    case DropOldest: {
        // Admitted beyond the capacity (at most once more the capacity, then the newest call
        // is dropped after all); receiver threads discard their oldest waiting calls until the
        // funnel is back within its capacity (tryEvictOne()).
        qsizetype available = m_credits.load(std::memory_order_relaxed);
        while (available > -cap) {
            if (m_credits.compare_exchange_weak(available, available - 1,
                                                std::memory_order_relaxed)) {
                noteDepth(cap - available + 1);
                return true;
            }
        }
        return false;
    }
    default:
        return waitForCredit();
    }
}

bool QFunnelCore::waitForCredit()
{
    const int timeoutMs = blockTimeoutMs();
    QDeadlineTimer deadline(timeoutMs < 0 ? QDeadlineTimer::Forever : QDeadlineTimer(timeoutMs));
    QDeadlineTimer warnAt(StallWarningMs);
    std::unique_lock<std::mutex> locker(m_waitLock);
    // seq_cst on m_waiters and m_credits: either this thread sees the credits a receiver
    // returned, or that receiver sees this waiter and wakes it.
    m_waiters.fetch_add(1, std::memory_order_seq_cst);
    bool ok = false;
    bool warned = false;
    while (!isStopped()) {
        if (const qsizetype a = m_credits.fetch_sub(1, std::memory_order_seq_cst); a > 0) {
            noteDepth(capacity() - a + 1);
            ok = true;
            break;
        }
        m_credits.fetch_add(1, std::memory_order_seq_cst);
        // Idle threads may have reserved credits since this thread last looked. (Lock order:
        // m_waitLock, then m_reservationsLock; nothing takes them the other way round.)
        if (reclaimReservations())
            continue;
        if (deadline.hasExpired())
            break;      // the caller drops this call and counts it
        // Woken by releaseCredits() when room is made; the timeout only serves the deadline and
        // the one stall warning. (A Forever deadline's remainingTime() is -1: not a timeout.)
        if (deadline.isForever() && warned) {
            m_roomAvailable.wait(locker);
        } else {
            qint64 waitMs = warned ? deadline.remainingTime() : warnAt.remainingTime();
            if (!deadline.isForever())
                waitMs = std::min<qint64>(waitMs, deadline.remainingTime());
            m_roomAvailable.wait_for(locker,
                                     std::chrono::milliseconds(std::max<qint64>(waitMs, 1)));
        }
        if (!warned && warnAt.hasExpired()) {
            // Not an error by itself (a receiver may just be slow), but the classic deadlock
            // of a bounded queue: the receiver thread waiting for this producer.
            warned = true;
            qWarning("QFunnel: a producer thread has waited %d ms for room in a full funnel "
                     "(capacity %lld calls). Is every receiver thread running its event loop, "
                     "and none of them waiting for this thread?",
                     StallWarningMs, static_cast<long long>(capacity()));
        }
    }
    m_waiters.fetch_sub(1, std::memory_order_relaxed);
    return ok;
}

void QFunnelCore::setBlockTimeoutMs(int ms) noexcept
{
    m_blockTimeoutMs.store(ms, std::memory_order_relaxed);
    wakeBlockedProducers();    // waiters re-read the deadline only when they start waiting
}

bool QFunnelCore::tryEvictOne() noexcept
{
    qsizetype available = m_credits.load(std::memory_order_relaxed);
    while (available < 0) {
        if (m_credits.compare_exchange_weak(available, available + 1,
                                            std::memory_order_relaxed)) {
            countDropped();
            return true;
        }
    }
    return false;
}

void QFunnelCore::noteDepth(qsizetype pending) noexcept
{
    qsizetype high = m_highWater.load(std::memory_order_relaxed);
    while (pending > high
           && !m_highWater.compare_exchange_weak(high, pending, std::memory_order_relaxed)) {
    }
}

void QFunnelCore::addEmittedCounter(const std::atomic<quint64> *c)
{
    QMutexLocker locker(&m_reservationsLock);
    m_emittedCounters.append(c);
}

void QFunnelCore::removeEmittedCounter(const std::atomic<quint64> *c)
{
    QMutexLocker locker(&m_reservationsLock);
    m_emittedCounters.removeOne(c);
    m_retiredEmitted += c->load(std::memory_order_relaxed);
}

quint64 QFunnelCore::emittedCalls()
{
    QMutexLocker locker(&m_reservationsLock);
    quint64 n = m_retiredEmitted + m_emittedWithoutLane.load(std::memory_order_relaxed);
    for (const std::atomic<quint64> *c : std::as_const(m_emittedCounters))
        n += c->load(std::memory_order_relaxed);
    return n;
}

QFunnelCore::InboxTotals QFunnelCore::inboxTotals()
{
    QMutexLocker locker(&m_inboxLock);
    InboxTotals t = m_retiredTotals;
    for (const QFunnelInbox *inbox : std::as_const(m_inboxes)) {
        t.delivered += inbox->deliveredCalls();
        t.discarded += inbox->discardedCalls();
        t.coalesced += inbox->coalescedCalls();
    }
    return t;
}

void QFunnelCore::releaseCredits(qsizetype calls) noexcept
{
    if (!calls)
        return;
    m_credits.fetch_add(calls, std::memory_order_seq_cst);
    if (m_waiters.load(std::memory_order_seq_cst) > 0)
        wakeBlockedProducers();
}

void QFunnelCore::wakeBlockedProducers()
{
    // Taking the lock orders this wake-up after a waiter's last look at the credits.
    std::lock_guard<std::mutex> locker(m_waitLock);
    m_roomAvailable.notify_all();
}

QFunnelInbox *QFunnelCore::inboxFor(QFunnelReceiverGuard *guard, Qt::HANDLE threadId)
{
    QMutexLocker locker(&m_inboxLock);
    QFunnelInbox *&inbox = m_inboxes[guard];
    // An inbox whose last reference is being dropped right now is replaced; its forgetInbox()
    // then leaves the new one in place.
    if (!inbox || !inbox->tryRef())
        inbox = new QFunnelInbox(this, guard, threadId);
    return inbox;
}

void QFunnelCore::forgetInbox(QFunnelInbox *inbox)
{
    QMutexLocker locker(&m_inboxLock);
    auto it = m_inboxes.constFind(inbox->guard());
    if (it != m_inboxes.cend() && it.value() == inbox)
        m_inboxes.erase(it);
    m_retiredTotals.delivered += inbox->deliveredCalls();
    m_retiredTotals.discarded += inbox->discardedCalls();
    m_retiredTotals.coalesced += inbox->coalescedCalls();
}

void QFunnelCore::addReceiverThread(QThread *thread)
{
    QMutexLocker locker(&m_inboxLock);
    m_receiverThreads.removeIf([](const QPointer<QThread> &t) { return t.isNull(); });
    for (const QPointer<QThread> &t : std::as_const(m_receiverThreads)) {
        if (t.data() == thread)
            return;
    }
    m_receiverThreads.append(thread);
}

bool QFunnelCore::isReceiverThread(QThread *thread)
{
    QMutexLocker locker(&m_inboxLock);
    for (const QPointer<QThread> &t : std::as_const(m_receiverThreads)) {
        if (t.data() == thread)
            return true;
    }
    return false;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
