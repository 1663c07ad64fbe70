// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCORE_P_H
#define QFUNNELCORE_P_H

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

#include "qfunnelqueue_p.h"
#include "qfunnelrelay_p.h"

#include <QtCore/qhash.h>
#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>
#include <QtCore/qpointer.h>
#include <QtCore/qthread.h>

#include <atomic>
#include <condition_variable>
#include <mutex>

QT_BEGIN_NAMESPACE

class QThreadData;

namespace QtFastConnectPrivate {

class QFunnelInbox;
class QFunnelReceiverGuard;

// What a funnel is, apart from its QObject face: the queue, the relay, the receivers' inboxes
// and the capacity. Reference counted, because slot objects, producer lanes and inboxes may
// outlive the QFunnel that made them; after stop() it accepts nothing.
class QFunnelCore
{
    Q_DISABLE_COPY_MOVE(QFunnelCore)
public:
    // A producer blocked this long on a full funnel prints one warning.
    static constexpr int StallWarningMs = 5000;

    // QFunnel::OverflowPolicy, as an int (no public header dependency here).
    enum Policy { Block = 0, DropNewest = 1, DropOldest = 2 };

    QFunnelCore();

    void ref() noexcept { m_ref.fetch_add(1, std::memory_order_relaxed); }
    void deref() noexcept
    {
        if (m_ref.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }

    // Stops the relay (joined), releases blocked producers and drops every pending call in the
    // calling thread. Idempotent.
    void stop();
    // seq_cst (a plain load on x86): orders a producer's re-check after queueing a call against
    // stop()'s exchange, so that one of the two sweeps the call.
    bool isStopped() const noexcept { return m_stopped.load(std::memory_order_seq_cst); }
    // Drops the calls of batches queued after the relay stopped; called by stop() and by a
    // producer that finds the funnel stopped right after it queued a call.
    void sweepStoppedQueue();

    // Capacity, counted in calls: a call holds one credit from capture until it ran or was
    // dropped. Producers block without credit; threads that receive from this funnel never do.
    qsizetype capacity() const noexcept { return m_capacity.load(std::memory_order_relaxed); }
    void setCapacity(qsizetype calls);
    // Each producer lane reserves credits in chunks, so that producers do not all hit one
    // shared counter per call; a producer that finds the pool empty reclaims the reservations
    // of idle lanes before it waits, so the capacity stays exact.
    using Reservation = std::atomic<qsizetype>;
    void addReservation(Reservation *r);
    void removeReservation(Reservation *r);     // returns what it still holds
    bool acquireCredit(Reservation &r)          // false: the funnel stopped while waiting
    {
        // Relaxed: credits publish nothing; the call itself travels through the queue.
        if (r.fetch_sub(1, std::memory_order_relaxed) > 0)
            return true;
        r.fetch_add(1, std::memory_order_relaxed);
        return refillCredit(r);
    }
    void releaseCredits(qsizetype calls) noexcept;
    qsizetype pendingCalls();

    // The inbox of the receiver guard watches, created on first use, with a reference for the
    // caller (any thread). threadId: the receiver's thread now.
    QFunnelInbox *inboxFor(QFunnelReceiverGuard *guard, Qt::HANDLE threadId);
    // An inbox's last reference is gone: it leaves the registry, its statistics stay here.
    void forgetInbox(QFunnelInbox *inbox);
    // Threads that receiver objects of this funnel live in (at connect time, or at a delivery
    // pass). Held as QPointers: a deleted QThread's address reused by a new one never matches.
    void addReceiverThread(QThread *thread);
    bool isReceiverThread(QThread *thread);

    QFunnelQueue &queue() noexcept { return m_queue; }
    QFunnelRelay &relay() noexcept { return m_relay; }

    // What a producer does when the funnel is full; see QFunnel::OverflowPolicy.
    int policy() const noexcept { return m_policy.load(std::memory_order_relaxed); }
    void setPolicy(int policy) noexcept { m_policy.store(policy, std::memory_order_relaxed); }
    int blockTimeoutMs() const noexcept { return m_blockTimeoutMs.load(std::memory_order_relaxed); }
    void setBlockTimeoutMs(int ms) noexcept;
    // DropOldest: a receiver thread discards its oldest waiting calls while the funnel is over
    // capacity; each discard returns the credit its producer took beyond the capacity. Returns
    // true if the caller may discard one call (and counts it as dropped).
    bool tryEvictOne() noexcept;
    bool evicting() const noexcept
    {
        return policy() == DropOldest && m_credits.load(std::memory_order_relaxed) < 0;
    }

    // Statistics, summed on read from per-lane and per-inbox counters (QFunnel::statistics()).
    void addEmittedCounter(const std::atomic<quint64> *c);
    // An emission from a thread whose lanes thread exit already destroyed.
    void countEmittedWithoutLane() noexcept
    {
        m_emittedWithoutLane.fetch_add(1, std::memory_order_relaxed);
    }
    void removeEmittedCounter(const std::atomic<quint64> *c);
    quint64 emittedCalls();
    qsizetype highWaterMark() const noexcept { return m_highWater.load(std::memory_order_relaxed); }
    struct InboxTotals { quint64 delivered = 0, discarded = 0, coalesced = 0; };
    InboxTotals inboxTotals();

    void countDropped(quint64 n = 1) noexcept { m_dropped.fetch_add(n, std::memory_order_relaxed); }
    quint64 droppedCalls() const noexcept { return m_dropped.load(std::memory_order_relaxed); }
    quint64 overCapacityCalls() const noexcept
    {
        return m_overCapacity.load(std::memory_order_relaxed);
    }

private:
    ~QFunnelCore();
    bool refillCredit(Reservation &r);
    bool waitForCredit();
    void noteDepth(qsizetype pending) noexcept;
    bool reclaimReservations();
    void wakeBlockedProducers();

    std::atomic<int> m_ref { 1 };
    std::atomic<bool> m_stopped { false };

    std::atomic<qsizetype> m_capacity;
    alignas(64) std::atomic<qsizetype> m_credits;  // capacity - pending; contended: own line
    alignas(64) std::atomic<int> m_waiters { 0 };
    QMutex m_reservationsLock;
    QList<Reservation *> m_reservations;
    // The standard library's, not Qt's: sanitizers see its locking (Qt is not instrumented).
    std::mutex m_waitLock;
    std::condition_variable m_roomAvailable;

    QMutex m_sweepLock;
    QMutex m_inboxLock;
    QHash<QFunnelReceiverGuard *, QFunnelInbox *> m_inboxes;   // guarded by m_inboxLock
    QList<QPointer<QThread>> m_receiverThreads;                // guarded by m_inboxLock
    InboxTotals m_retiredTotals;                               // guarded by m_inboxLock

    std::atomic<int> m_policy { Block };
    std::atomic<int> m_blockTimeoutMs { -1 };
    std::atomic<qsizetype> m_highWater { 0 };
    QList<const std::atomic<quint64> *> m_emittedCounters;   // guarded by m_reservationsLock
    quint64 m_retiredEmitted = 0;                             // guarded by m_reservationsLock

    std::atomic<quint64> m_emittedWithoutLane { 0 };
    std::atomic<quint64> m_dropped { 0 };
    std::atomic<quint64> m_overCapacity { 0 };

    QFunnelQueue m_queue;
    QFunnelRelay m_relay;
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCORE_P_H
