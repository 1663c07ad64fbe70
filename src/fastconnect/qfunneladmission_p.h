// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELADMISSION_P_H
#define QFUNNELADMISSION_P_H

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

#include <QtFastConnect/qfunnel.h>
#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>
#include <QtCore/qpointer.h>
#include <QtCore/qthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// What a producer waiting for room asks of the receivers' side: that receivers whose thread does
// not run its events give back the credits of their calls. The delivery stage implements it
// (QFunnelInboxRegistry) and is registered with admission when the funnel is made (QFunnelCore),
// so that admission, which owns the capacity, knows no inbox.
class QFunnelStalledReceivers
{
public:
    // Every stalled receiver's calls stop counting against the capacity; their credits come back
    // through QFunnelAdmission::releaseCredits(). Returns how many came back.
    virtual qsizetype releaseStalled() = 0;

protected:
    ~QFunnelStalledReceivers() = default;
};

// Admission: the funnel's capacity as credits, and what a producer does when none is left
// (QFunnel::OverflowPolicy). A call holds one credit from capture until it ran or was dropped.
// Producers block without credit (backpressure); threads that receive from the funnel never do.
class QFunnelAdmission
{
    Q_DISABLE_COPY_MOVE(QFunnelAdmission)
public:
    // A producer blocked this long on a full funnel prints one warning.
    static constexpr int StallWarningMs = 5000;

    // How often a producer waiting for room looks for stalled receivers holding it
    // (QFunnelStalledReceivers).
    static constexpr int StallCheckMs = 100;

    // stopped: the funnel's stop flag; a waiting producer gives up once it is set. stalled: the
    // funnel's receivers, which a waiting producer asks for the room that stalled ones hold.
    QFunnelAdmission(const std::atomic<bool> &stopped, QFunnelStalledReceivers &stalled);

    qsizetype capacity() const noexcept { return m_capacity.load(std::memory_order_relaxed); }
    // The most credits a thread reserves at a time: 1/64 of the capacity, at most 64, so that
    // tiny capacities stay exact and at most 63 credits idle per producer thread.
    qsizetype chunkSize() const noexcept { return std::clamp<qsizetype>(capacity() / 64, 1, 64); }
    void setCapacity(qsizetype calls);
    // The low-water mark: producers blocked on a full funnel are woken once this many credits
    // are free (a quarter of the capacity), not whenever a pass returns some. Each wake-up is
    // a futex call and puts a producer back on a CPU beside the receiver's thread: eight
    // producers flooding a GUI thread on two cores, woken every 512 calls, kept it waiting for
    // a CPU, which raised its paint interval's p99 (benchmarks/responsiveness); woken at the
    // mark, it fell at the same throughput. A waiter takes whatever room it finds
    // when it wakes for another reason (StallCheckMs, its block timeout).
    qsizetype resumeLevel() const noexcept { return capacity() / 4; }

    // Each producer lane reserves credits in chunks, so that producers do not all hit one
    // shared counter per call; a producer that finds the pool empty reclaims the reservations
    // of idle lanes before it waits, so the capacity stays exact. A reservation is stored in its
    // lane (its own cache line, read on every call) but only admission moves credits in and out.
    using Reservation = std::atomic<qsizetype>;
    void addReservation(Reservation *r);
    void removeReservation(Reservation *r); // returns what it still holds
    // r is the calling thread's reservation for this funnel from now on, where its delivery
    // passes may keep credits (releaseCreditsHere()): set and cleared with the thread's lane
    // cache (QFunnelLane::forCurrentThread()), whose lane holds a reference on the funnel, so
    // that it names a live funnel and reservation whenever a pass reads it.
    void setThreadReservation(Reservation *r) noexcept;
    // The calling thread has no reservation any more (its lanes are going: thread exit).
    static void clearThreadReservation() noexcept;
    // How many calls a receiver holds (see ShareOfRoomLeft), or -1 if producers must not wait for
    // it (its thread stalled, or it was destroyed), for the receiver side's context.
    using HeldCalls = qsizetype (*)(const void *receiverSide) noexcept;
    // DropOldest: a call admitted beyond its receiver's share, without a credit; the receiver
    // side's oldest pending call makes way for it (QFunnelInbox::oweEviction()).
    using OweEviction = void (*)(const void *receiverSide) noexcept;
    // The receiver a producer's calls go to, whose share a refill keeps; none: no share.
    struct Share
    {
        HeldCalls held = nullptr;
        const void *receiverSide = nullptr;
        OweEviction oweEviction = nullptr;
    };
    bool acquireCredit(Reservation &r, Share share) // false: drop the call (policy, or stopped)
    {
        return takeReserved(r) || refillCredit(r, share);
    }
    // acquireCredit() in two steps, for a caller that keeps the common case free of calls:
    // one credit from r, if it holds one; otherwise refillCredit() (which may wait).
    static bool takeReserved(Reservation &r) noexcept
    {
        // Relaxed: credits publish nothing; the call itself travels through the queue.
        if (r.fetch_sub(1, std::memory_order_relaxed) > 0)
            return true;
        r.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    bool refillCredit(Reservation &r, Share share);

    // Isolation: a receiver's calls hold at most ShareOfRoomLeft times the room the funnel has
    // left, so that one slow receiver holds at most 3/4 of the capacity; k of them filling it
    // together 3/(3k+1) each, leaving 1/(3k+1); each one that comes when others hold theirs at
    // most 3/4 of the room they left, so that k of them leave about 1/4^k of the capacity.
    // That room stays for the producers of other receivers, which do not wait (as HTTP/2's
    // per-stream flow-control windows share the connection's). Three, not one (half of the
    // capacity): a funnel's one busy receiver keeps most of the capacity as its buffer, which
    // covers the time its producers are not scheduled (see QFunnel::DefaultCapacity). held:
    // that receiver's calls admitted and not yet run or dropped. Checked once per chunk of
    // credits, by the refill that takes them (takeChunk()), so that producers of different
    // receivers racing for the last credits cannot take them all. A receiver's calls can
    // exceed it by up to a chunk per producer thread (the run another lane has not charged
    // yet, the credits it holds reserved); the capacity bounds everything. A Block producer
    // over the share waits in waitForCredit() until its receiver holds at most half of it (a
    // hysteresis of 3/20 of the capacity for one slow receiver), as long as it would for room
    // and with the same checks: the block timeout, the stall checks, the warning. The drop
    // policies keep the share too, without waiting: DropNewest drops a call beyond it,
    // DropOldest admits it without a credit and evicts the receiver's oldest pending call for
    // it (admitBeyondShare()). Threads that receive from any funnel keep no share.
    static constexpr int ShareOfRoomLeft = 3;
    // Delivery gives credits back only through these two; admission decides where they go.
    // releaseCredits(): to the shared counter, as calls run (every CreditReturnCalls calls, see
    // QFunnelInbox) or are dropped.
    void releaseCredits(qsizetype calls) noexcept;
    // The same at the end of a delivery pass, in the receiver's thread: while no producer
    // waits, up to a chunk of the credits goes into the calling thread's own reservation, if it
    // has one for this funnel (setThreadReservation()), so that a thread that receives and emits
    // (a ping-pong, a request and its reply) takes its next credit from its own cache line
    // instead of the shared counter's.
    void releaseCreditsHere(qsizetype calls) noexcept;
    qsizetype pendingCalls();
    // Releases every blocked producer (the funnel stopped, or a setting changed).
    void wakeBlockedProducers();

    // Threads that receiver objects of any funnel live in (at connect time, or at a delivery
    // pass): they are admitted over capacity instead of blocking. One set for the process.
    // Returns true if thread was not in it yet.
    static bool addReceiverThread(QThread *thread);
    static bool isReceiverThread(QThread *thread);

    QFunnel::OverflowPolicy policy() const noexcept
    {
        return QFunnel::OverflowPolicy(m_policy.load(std::memory_order_relaxed));
    }
    void setPolicy(QFunnel::OverflowPolicy policy) noexcept
    {
        m_policy.store(int(policy), std::memory_order_relaxed);
    }
    int blockTimeoutMs() const noexcept { return m_blockTimeoutMs.load(std::memory_order_relaxed); }
    void setBlockTimeoutMs(int ms) noexcept;
    // DropOldest: a receiver thread discards its oldest waiting calls while the funnel is over
    // capacity; each discard returns the credit its producer took beyond the capacity. Returns
    // true if the caller may discard one call (and must count it as dropped).
    bool tryEvictOne() noexcept;
    // DropOldest, once per call admitted beyond its receiver's share (see ShareOfRoomLeft): such
    // calls are bounded by the capacity, funnel-wide, beyond which the newest is dropped; the
    // receiver side settles them as its evictions make way for them, or as they finish.
    void settleBeyondShare(qsizetype calls) noexcept
    {
        m_beyondShare.fetch_sub(calls, std::memory_order_relaxed); // a bound, publishes nothing
    }
    bool evicting() const noexcept
    {
        return policy() == QFunnel::OverflowPolicy::DropOldest
                && m_credits.load(std::memory_order_relaxed) < 0;
    }

    qsizetype highWaterMark() const noexcept { return m_highWater.load(std::memory_order_relaxed); }
    quint64 overCapacityCalls() const noexcept
    {
        return m_overCapacity.load(std::memory_order_relaxed);
    }
    // Calls that no longer count against the capacity: a stalled receiver's.
    void countOverCapacity(quint64 n) noexcept
    {
        m_overCapacity.fetch_add(n, std::memory_order_relaxed);
    }

private:
    enum class Take { Taken, NoRoom, OverShare };
    Take takeChunk(Reservation &r, Share share, qsizetype *left = nullptr, bool halfShare = false);
    bool admitBeyondShare(Share share) noexcept;
    bool waitForCredit(Reservation &r, Share share);
    void noteDepth(qsizetype pending) noexcept;
    bool reclaimReservations();
    // [P10 check] seq_cst: as QFunnelCore::isStopped().
    bool isStopped() const noexcept { return m_stopped.load(std::memory_order_seq_cst); }

    const std::atomic<bool> &m_stopped;
    QFunnelStalledReceivers &m_stalled;
    std::atomic<qsizetype> m_capacity { QFunnel::DefaultCapacity };
    alignas(64) std::atomic<qsizetype> m_credits { QFunnel::DefaultCapacity }; // capacity - pending
    alignas(64) std::atomic<int> m_waiters { 0 };
    std::atomic<int> m_shareWaiters { 0 }; // producers waiting for their receiver's share
    QMutex m_reservationsLock;
    QList<Reservation *> m_reservations; // guarded by m_reservationsLock
    // The standard library's, not Qt's: sanitizers see its locking (Qt is not instrumented).
    std::mutex m_waitLock;
    std::condition_variable m_roomAvailable;

    std::atomic<int> m_policy { int(QFunnel::OverflowPolicy::Block) };
    std::atomic<int> m_blockTimeoutMs { -1 };
    std::atomic<qsizetype> m_beyondShare { 0 }; // DropOldest: see settleBeyondShare()
    std::atomic<qsizetype> m_highWater { 0 };
    std::atomic<quint64> m_overCapacity { 0 };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELADMISSION_P_H
