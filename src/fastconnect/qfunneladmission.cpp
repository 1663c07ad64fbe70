// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunneladmission_p.h"
#include "qfunnelwarning_p.h"
#include "pool/qpoolallocator_p.h"

#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qhash.h>
#include <QtCore/qpointer.h>
#include <QtCore/qthread.h>

#include <algorithm>
#include <chrono>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {
// The calling thread's reservation for the funnel whose lane it emitted through last, and that
// funnel's admission (setThreadReservation()). Trivially destructible: a delivery pass in a
// later thread_local destructor reads it safely, cleared.
struct ThreadReservation
{
    const QFunnelAdmission *admission;
    QFunnelAdmission::Reservation *reservation;
};
thread_local ThreadReservation tlThreadReservation = { nullptr, nullptr };

// One producer's wait (waitForCredit()), for room or for its receiver's share: its deadline
// (the block timeout), its one warning, and the trim before its first sleep.
struct ProducerWait
{
    explicit ProducerWait(int timeoutMs)
        : deadline(timeoutMs < 0 ? QDeadlineTimer::Forever : QDeadlineTimer(timeoutMs))
    {}

    // Before this thread's first sleep (true, once): the pages of its calls that already ran
    // pass to whichever thread allocates next, instead of every producer keeping its own peak
    // of calls in flight. Kept resident, so the taker pays no page fault. Not under the wait
    // lock: the walk takes O(free chunks). Room may have come meanwhile: the caller looks again.
    bool trimBeforeFirstSleep(std::unique_lock<std::mutex> &locker)
    {
        if (trimmed)
            return false;
        trimmed = true;
        locker.unlock();
        qPoolTrimCurrentThread();
        locker.lock();
        return true;
    }

    // Sleeps until woken (room was returned) or for at most maxMs, the deadline or the warning,
    // whichever comes first; then warns (warn()) if StallWarningMs have passed. Not an error by
    // itself (a receiver may just be slow), but the classic deadlock of a bounded queue: the
    // receiver thread waiting for this producer. Rate-limited (qfunnelwarning_p.h): producers
    // may wait by the hundred. Not under the wait lock: the message handler is user code. (A
    // Forever deadline's remainingTime() is -1: not a timeout.)
    void sleep(std::unique_lock<std::mutex> &locker, std::condition_variable &roomAvailable,
               qint64 maxMs, void (*warn)(qsizetype capacity), qsizetype capacity)
    {
        qint64 waitMs = maxMs;
        if (!warned)
            waitMs = std::min<qint64>(waitMs, warnAt.remainingTime());
        if (!deadline.isForever())
            waitMs = std::min<qint64>(waitMs, deadline.remainingTime());
        roomAvailable.wait_for(locker, std::chrono::milliseconds(std::max<qint64>(waitMs, 1)));
        if (!warned && warnAt.hasExpired()) {
            warned = true;
            locker.unlock();
            if (qfcNoteWarning(QFunnelWarning::ProducerWaited))
                warn(capacity);
            locker.lock();
        }
    }

    QDeadlineTimer deadline;
    QDeadlineTimer warnAt { QFunnelAdmission::StallWarningMs };
    bool warned = false;
    bool trimmed = false;
};

void warnWaitedForRoom(qsizetype capacity)
{
    qWarning("QFunnel: a producer thread has waited %d ms for room in a full funnel (capacity "
             "%lld calls). Is every receiver thread running its event loop, and none of them "
             "waiting for this thread?",
             QFunnelAdmission::StallWarningMs, static_cast<long long>(capacity));
}

void warnWaitedForShare(qsizetype capacity)
{
    qWarning("QFunnel: a producer thread has waited %d ms for its receiver to run calls it holds "
             "(its share of a funnel of capacity %lld calls). Is that receiver's "
             "thread waiting for this thread?",
             QFunnelAdmission::StallWarningMs, static_cast<long long>(capacity));
}
} // namespace

QFunnelAdmission::QFunnelAdmission(const std::atomic<bool> &stopped,
                                   QFunnelStalledReceivers &stalled)
    : m_stopped(stopped), m_stalled(stalled)
{}

void QFunnelAdmission::setCapacity(qsizetype calls)
{
    const qsizetype old = m_capacity.exchange(calls, std::memory_order_relaxed);
    // [P7 give] Credits move by the difference; a shrink below what is pending just makes
    // producers wait until enough calls have been delivered.
    m_credits.fetch_add(calls - old, std::memory_order_seq_cst);
    if (calls > old)
        wakeBlockedProducers();
}

void QFunnelAdmission::addReservation(Reservation *r)
{
    QMutexLocker locker(&m_reservationsLock);
    m_reservations.append(r);
}

void QFunnelAdmission::removeReservation(Reservation *r)
{
    qsizetype held;
    {
        QMutexLocker locker(&m_reservationsLock);
        m_reservations.removeOne(r);
        held = r->exchange(0, std::memory_order_relaxed);
    }
    releaseCredits(held);
}

void QFunnelAdmission::setThreadReservation(Reservation *r) noexcept
{
    tlThreadReservation = { this, r };
}

void QFunnelAdmission::clearThreadReservation() noexcept
{
    tlThreadReservation = { nullptr, nullptr };
}

bool QFunnelAdmission::reclaimReservations()
{
    qsizetype reclaimed = 0;
    {
        QMutexLocker locker(&m_reservationsLock);
        // Only what a lane holds: its owner may be between takeReserved()'s fetch_sub and the
        // undo, reading -1 while holding nothing. Taking that -1 kept the sum right, but left
        // the pool at -1 until the undo, and pendingCalls() reported more calls than the
        // capacity admits (5 of 4 in tst_qfunnel under qemu-user).
        for (Reservation *r : std::as_const(m_reservations)) {
            // [P8 reclaim] seq_cst, also when the compare fails: see releaseCreditsHere().
            qsizetype held = r->load(std::memory_order_seq_cst);
            while (held > 0
                   && !r->compare_exchange_weak(held, 0, std::memory_order_seq_cst,
                                                std::memory_order_seq_cst)) {} // [P8 reclaim]
            reclaimed += std::max<qsizetype>(held, 0);
        }
    }
    if (reclaimed) // [P7 give] seq_cst: as every change of m_credits
        m_credits.fetch_add(reclaimed, std::memory_order_seq_cst);
    return reclaimed > 0;
}

qsizetype QFunnelAdmission::pendingCalls()
{
    QMutexLocker locker(&m_reservationsLock);
    qsizetype free = m_credits.load(std::memory_order_relaxed);
    // A lane between its fetch_sub and the undo reads -1 while holding nothing: count it as 0.
    for (Reservation *r : std::as_const(m_reservations))
        free += std::max<qsizetype>(r->load(std::memory_order_relaxed), 0);
    // With the calls admitted beyond their receivers' shares, which hold no credit.
    return capacity() - free + m_beyondShare.load(std::memory_order_relaxed);
}

// Takes up to a chunk of credits: one for the caller's call, the rest into r. With a share, no
// more than leaves its receiver within it (see ShareOfRoomLeft); with halfShare (a producer
// that waited for the share), nothing until the receiver holds at most half of it. Returns
// Taken, or why not.
QFunnelAdmission::Take QFunnelAdmission::takeChunk(Reservation &r, Share share, qsizetype *left,
                                                   bool halfShare)
{
    const qsizetype cap = capacity();
    const qsizetype chunk = chunkSize();
    // [P7 take] seq_cst, not relaxed (the same instruction on x86; an ordered load on ARM): a
    // waiter's first look after its increment of m_waiters must not read credits older than
    // that increment, or it and the thread returning them could each miss the other (it
    // would sleep until the stall check's time-out).
    qsizetype available = m_credits.load(std::memory_order_seq_cst);
    // After the credits: a waiter sees the finished calls of the pass whose credits it saw
    // (P7). -1: no share to keep.
    const qsizetype held = share.held ? share.held(share.receiverSide) : -1;
    if (halfShare && held > 0 && 2 * held > ShareOfRoomLeft * available)
        return Take::OverShare;
    while (available > 0) {
        qsizetype take = qMin(available, chunk);
        if (held >= 0) {
            // The receiver's calls with this chunk stay within ShareOfRoomLeft times the room
            // left after it: held + take <= 3 * (available - take), rounded in the receiver's
            // favour so that a tiny capacity stays usable (one receiver gets both calls of a
            // capacity of 2). Against the very count the exchange below takes from, so that
            // producers of different receivers racing for the last credits cannot take them
            // all: one whose receiver holds three calls or more never takes the last one.
            const qsizetype room = ShareOfRoomLeft * available - held;
            take = room > 0 ? qMin(take, (room + ShareOfRoomLeft) / (ShareOfRoomLeft + 1)) : 0;
            if (take <= 0)
                return Take::OverShare;
        }
        // [P7 take] seq_cst (the same instruction on x86 as relaxed): see waitForCredit().
        if (m_credits.compare_exchange_weak(available, available - take, std::memory_order_seq_cst,
                                            std::memory_order_relaxed)) {
            r.fetch_add(take - 1, std::memory_order_relaxed);
            // Once per chunk, not per call: the depth counts this call but not the rest of the
            // chunk, which is still only reserved.
            noteDepth(cap - (available - take) - (take - 1));
            if (left)
                *left = available - take;
            return Take::Taken;
        }
    }
    return Take::NoRoom;
}

bool QFunnelAdmission::refillCredit(Reservation &r, Share share)
{
    const qsizetype cap = capacity();
    Take took = takeChunk(r, share);
    if (took == Take::NoRoom && reclaimReservations())
        took = takeChunk(r, share);
    if (took == Take::Taken)
        return true;

    // Full, or full for this receiver. A thread that receives from any funnel must not wait
    // for room or a share: the calls that would make room may be waiting for this very thread,
    // directly or through a reply that another funnel carries. It takes the room left, or
    // goes over capacity, counted.
    if (isReceiverThread(QThread::currentThread())) {
        if (took == Take::OverShare && takeChunk(r, Share()) == Take::Taken)
            return true;
        noteDepth(cap - m_credits.fetch_sub(1, std::memory_order_relaxed) + 1);
        m_overCapacity.fetch_add(1, std::memory_order_relaxed);
        return true;
    }

    switch (policy()) {
    case QFunnel::OverflowPolicy::DropNewest:
        return false; // the funnel is full, or its receiver holds its share: the caller drops it
    case QFunnel::OverflowPolicy::DropOldest: {
        if (took == Take::OverShare)
            return admitBeyondShare(share);
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
        return waitForCredit(r, share);
    }
}

bool QFunnelAdmission::waitForCredit(Reservation &r, Share share)
{
    ProducerWait wait(blockTimeoutMs());
    QDeadlineTimer stallCheckAt(StallCheckMs);
    std::unique_lock<std::mutex> locker(m_waitLock);
    // [P7 wait] seq_cst on m_waiters and m_credits: either this thread sees the credits a
    // receiver returned, or that receiver sees this waiter and wakes it. [P8 wait] The same for
    // the credits a receiver keeps in its own reservation (reclaimReservations()).
    m_waiters.fetch_add(1, std::memory_order_seq_cst);
    bool shareWaiter = false; // counted in m_shareWaiters
    bool ok = false;
    while (!isStopped()) {
        qsizetype left = 0;
        const Take took = takeChunk(r, share, &left, shareWaiter);
        if (took == Take::Taken) {
            // [P7 pass] Room is returned as calls run, and one waiter is woken once resumeLevel()
            // credits are free; a waiter that leaves room behind wakes the next one. So producers
            // wake in proportion to the room made (each takes a chunk), not all at once, and none
            // sleeps longer than StallCheckMs while room is left.
            if (left > 0 && m_waiters.load(std::memory_order_seq_cst) > 1)
                m_roomAvailable.notify_one();
            ok = true;
            break;
        }
        if (took == Take::OverShare) {
            // Room is left, but not for this receiver: wait for it to run calls until it holds
            // at most half of its share (the hysteresis: takeChunk()'s halfShare), woken by
            // every return of credits.
            if (!shareWaiter) {
                shareWaiter = true;
                // [P7 wait] seq_cst, then the credits, then what the receiver holds (takeChunk()):
                // either this thread sees the room a receiver's pass made (its count of finished
                // calls is written before the credits it returns), or that pass sees this
                // waiter and wakes it (releaseCredits()).
                m_shareWaiters.fetch_add(1, std::memory_order_seq_cst);
                // Credits idle in other threads' reservations count as room left (lock order:
                // m_waitLock, then m_reservationsLock).
                reclaimReservations();
                continue;
            }
        } else if (reclaimReservations()) {
            // Idle threads may have reserved credits since this thread last looked. (Lock
            // order: m_waitLock, then m_reservationsLock; nothing takes them the other way.)
            continue;
        }
        // A receiver whose thread has finished or stalled may hold the room: its calls stop
        // counting against the capacity (this one's included: then it has no share to keep).
        // On every look while the funnel is full; every StallCheckMs while it waits for its
        // share, since every return of credits wakes it (its receiver's thread may have stalled
        // meanwhile: then held() answers -1, no share). Not under
        // m_waitLock: giving credits back takes it.
        if (took == Take::NoRoom || stallCheckAt.hasExpired()) {
            stallCheckAt.setRemainingTime(StallCheckMs);
            locker.unlock();
            const bool released = m_stalled.releaseStalled() > 0;
            locker.lock();
            if (released)
                continue;
        }
        if (wait.deadline.hasExpired())
            break; // the caller drops this call and counts it
        if (wait.trimBeforeFirstSleep(locker))
            continue;
        // Woken by releaseCredits() when room is made; at the latest for the next look for
        // stalled receivers.
        wait.sleep(locker, m_roomAvailable,
                   took == Take::NoRoom ? StallCheckMs : stallCheckAt.remainingTime(),
                   took == Take::NoRoom ? &warnWaitedForRoom : &warnWaitedForShare, capacity());
    }
    if (shareWaiter)
        m_shareWaiters.fetch_sub(1, std::memory_order_relaxed);
    // [P7 pass] Leaving without room (timeout, stop): pass on a wake-up this thread may have
    // taken.
    if (!ok && m_credits.load(std::memory_order_seq_cst) > 0
        && m_waiters.load(std::memory_order_seq_cst) > 1) {
        m_roomAvailable.notify_one();
    }
    m_waiters.fetch_sub(1, std::memory_order_relaxed);
    return ok;
}

void QFunnelAdmission::setBlockTimeoutMs(int ms) noexcept
{
    m_blockTimeoutMs.store(ms, std::memory_order_relaxed);
    wakeBlockedProducers(); // waiters re-read the deadline only when they start waiting
}

// DropOldest, a receiver over its share while the funnel has room: the call is admitted
// without a credit (so that the room stays for other receivers' producers), and the receiver's
// oldest pending call makes way for it. Bounded funnel-wide by the capacity; beyond it the
// newest call is dropped, as beyond twice the capacity when the whole funnel is full.
bool QFunnelAdmission::admitBeyondShare(Share share) noexcept
{
    if (!share.oweEviction)
        return false;
    const qsizetype cap = capacity();
    qsizetype n = m_beyondShare.load(std::memory_order_relaxed);
    do {
        if (n >= cap)
            return false;
        // Relaxed: a bound, which publishes nothing (the call travels through the queue).
    } while (!m_beyondShare.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    noteDepth(cap - m_credits.load(std::memory_order_relaxed) + n + 1);
    share.oweEviction(share.receiverSide);
    return true;
}

bool QFunnelAdmission::tryEvictOne() noexcept
{
    qsizetype available = m_credits.load(std::memory_order_relaxed);
    while (available < 0) {
        if (m_credits.compare_exchange_weak(available, available + 1, std::memory_order_relaxed)) {
            return true;
        }
    }
    return false;
}

void QFunnelAdmission::noteDepth(qsizetype pending) noexcept
{
    qsizetype high = m_highWater.load(std::memory_order_relaxed);
    while (pending > high
           && !m_highWater.compare_exchange_weak(high, pending, std::memory_order_relaxed)) {}
}

void QFunnelAdmission::releaseCredits(qsizetype calls) noexcept
{
    if (!calls)
        return;
    // [P7 give] seq_cst on both: either a waiter sees these credits, or this load sees the waiter.
    const qsizetype free = m_credits.fetch_add(calls, std::memory_order_seq_cst) + calls;
    // [P7 look] seq_cst: with the waiter's increment of m_waiters, or of m_shareWaiters.
    const bool room = free >= resumeLevel() && m_waiters.load(std::memory_order_seq_cst) > 0;
    // [P7 look] Every producer waiting for its receiver's share looks again: each waits for
    // another receiver, and only it can tell whether its receiver has made room.
    const bool shares = m_shareWaiters.load(std::memory_order_seq_cst) > 0;
    if (room || shares) {
        // Otherwise one waiter for room; it wakes the next if it leaves room (see
        // waitForCredit()). Taking the lock orders this wake-up after a waiter's last look at
        // the credits.
        std::lock_guard<std::mutex> locker(m_waitLock);
        if (shares)
            m_roomAvailable.notify_all();
        else
            m_roomAvailable.notify_one();
    }
}

void QFunnelAdmission::releaseCreditsHere(qsizetype calls) noexcept
{
    const ThreadReservation &here = tlThreadReservation; // one TLS address lookup
    Reservation *own = here.admission == this ? here.reservation : nullptr;
    // Relaxed load: it only chooses where the credits go.
    if (own && calls && own->load(std::memory_order_relaxed) + calls <= chunkSize()) {
        // [P8 keep] seq_cst, here and below, with waitForCredit()'s increment of m_waiters and the
        // load in reclaimReservations(): either a producer about to sleep reclaims these credits,
        // or this load sees it waiting and they go to the shared counter with a wake-up.
        own->fetch_add(calls, std::memory_order_seq_cst);
        // [P8 look] Producers waiting for their receiver's share count this room too.
        if (Q_LIKELY(m_waiters.load(std::memory_order_seq_cst) == 0
                     && m_shareWaiters.load(std::memory_order_seq_cst) == 0)) {
            return;
        }
        calls = own->exchange(0, std::memory_order_seq_cst); // [P8 move]
    }
    releaseCredits(calls);
}

void QFunnelAdmission::wakeBlockedProducers()
{
    // Taking the lock orders this wake-up after a waiter's last look at the credits.
    std::lock_guard<std::mutex> locker(m_waitLock);
    m_roomAvailable.notify_all();
}

namespace {
// The threads that receive from any funnel. One set for the process, not one per funnel: a
// thread waiting for room in one funnel may hold up the calls that would make that room while
// it receives from another (requests through one funnel, replies through a second one). Held as
// QPointers: a deleted QThread's address reused by a new one never matches.
struct ReceiverThreads
{
    QMutex lock;
    // By address, looked up at every connect and every refill of a receiver thread's lane: the
    // QPointer tells a live thread from a destroyed one whose address a new thread took.
    // Destroyed threads' entries go once the set has doubled since the last sweep.
    QHash<QThread *, QPointer<QThread>> threads; // guarded by lock
    qsizetype sweepAt = 16; // guarded by lock
};
ReceiverThreads &receiverThreads()
{
    // Never destroyed: producers may still emit while static destructors run.
    static ReceiverThreads *t = new ReceiverThreads;
    return *t;
}
// Whether thread is in t's set and alive; under t.lock.
bool holdsLive(const ReceiverThreads &t, QThread *thread)
{
    const auto known = t.threads.constFind(thread);
    return known != t.threads.cend() && !known->isNull();
}
} // namespace

bool QFunnelAdmission::addReceiverThread(QThread *thread)
{
    ReceiverThreads &t = receiverThreads();
    QMutexLocker locker(&t.lock);
    if (holdsLive(t, thread))
        return false;
    if (t.threads.size() >= t.sweepAt) {
        t.threads.removeIf([](decltype(t.threads)::iterator it) { return it->isNull(); });
        t.sweepAt = qMax<qsizetype>(16, 2 * t.threads.size());
    }
    t.threads.insert(thread, QPointer<QThread>(thread));
    return true;
}

bool QFunnelAdmission::isReceiverThread(QThread *thread)
{
    ReceiverThreads &t = receiverThreads();
    QMutexLocker locker(&t.lock);
    return holdsLive(t, thread);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
