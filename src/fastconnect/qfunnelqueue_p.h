// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELQUEUE_P_H
#define QFUNNELQUEUE_P_H

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

#include "qfunnelbatch_p.h"

#include <tbb/concurrent_queue.h>

#include <atomic>
#include <mutex>
#include <vector>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The hand-off between producers and the relay: oneTBB's bounded queue of batches. pop() blocks
// (the relay sleeps when there is nothing to do); a null batch is the stop token.
class QFunnelQueue
{
public:
    QFunnelQueue() { m_queue.set_capacity(1 << 20); }
    ~QFunnelQueue()
    {
        for (QFunnelBatch *b : m_spares)
            delete b;
    }

    // Batches are recycled rather than freed: a 4 KiB malloc/free pair per batch, across
    // threads, costs glibc a consolidation of its small-chunk bins each time. Once per batch, so
    // a plain mutex; a std::vector, so leak checkers can see the spares (oneTBB's containers
    // keep their pages in memory LeakSanitizer does not scan).
    QFunnelBatch *newBatch()
    {
        {
            std::lock_guard<std::mutex> locker(m_sparesLock);
            if (!m_spares.empty()) {
                QFunnelBatch *b = m_spares.back();
                m_spares.pop_back();
                return b;
            }
        }
        return new QFunnelBatch;
    }
    // The funnel stopped: its spares are freed now, not when the last producer thread that
    // still holds the funnel exits, and batches are no longer kept.
    void releaseSpares()
    {
        std::vector<QFunnelBatch *> spares;
        {
            std::lock_guard<std::mutex> locker(m_sparesLock);
            spares.swap(m_spares);
            m_keepSpares = false;
        }
        for (QFunnelBatch *b : spares)
            delete b;
    }
    void recycle(QFunnelBatch *b)
    {
        {
            std::lock_guard<std::mutex> locker(m_sparesLock);
            if (m_keepSpares && m_spares.size() < MaxSpares) {
                m_spares.push_back(b);
                return;
            }
        }
        delete b;
    }

    // A flush marker, or the stop token (null).
    void push(QFunnelBatch *batch) { m_queue.push(batch); }
    // A producer's batch: counted until the relay (or a stopped funnel's sweep) hands it back
    // (handedBack()), so that a receiver thread can tell whether calls may be on their way
    // (hasBatchesInRelay()). owner: the producer's lane (QFunnelLane::serial()).
    void pushBatch(QFunnelBatch *batch, quint32 owner)
    {
        batch->owner = owner; // published by the queue's push
        // [P32 count] Relaxed: a read-modify-write, so it continues the release sequence of the
        // relay's decrements; what the count orders is the emission before it, which happens
        // before the reader's load by other means (the receiver thread's processing,
        // QFunnelProcessingHook; another producer's emission, causally after this one): that
        // load sees this increment or a later value, never the count without it until the
        // relay handed this batch back.
        m_inRelay.fetch_add(1, std::memory_order_relaxed);
        // Relaxed, for the same reason (isSoleProducer()): a load that happens after it sees it.
        m_pushes.fetch_add(1, std::memory_order_relaxed);
        m_queue.push(batch);
    }
    // n batches left the relay's hands, every call they held routed (wake-ups posted).
    void handedBack(qsizetype n) noexcept
    {
        if (n) // [P32 back] release: the wake-ups posted before it
            m_inRelay.fetch_sub(n, std::memory_order_release);
    }
    // Whether a batch is queued for the relay or held by it; any thread.
    bool hasBatchesInRelay() const noexcept
    {
        // [P32 read] acquire: with handedBack()'s release, so that a zero read here follows the
        // postEvent() of every wake-up for the calls those batches held.
        return m_inRelay.load(std::memory_order_acquire) != 0;
    }
    // Causal order's shortcut (QFunnelLane::stamp()): whether owner's batches were the only
    // producer batches queued for or held by the relay when it last looked, and no batch was
    // queued since. Its calls then need no new stamp: a call of another thread emitted before
    // one of them is not on its way (its batch, queued or held, would have made this false).
    // Any thread; relaxed loads: a batch queued by an emission that happened before this one
    // is counted in the load of m_pushes (which the relay's word then does not match), and a
    // stale word only matches nothing.
    bool isSoleProducer(quint32 owner) const noexcept
    {
        const quint64 word = m_sole.load(std::memory_order_relaxed);
        return quint32(word) == owner && owner
                && quint32(word >> 32) == quint32(m_pushes.load(std::memory_order_relaxed));
    }
    // The relay, once a round, after it popped the queue: owner's batches are all it holds (or
    // owner is 0), and it has popped popped producer batches so far. The word says so only if
    // that is every batch queued (the count is read after the pops, which acquired the pushes
    // of the batches they returned: it is at least popped).
    void noteSoleProducer(quint32 owner, quint64 popped) noexcept
    {
        const quint64 pushes = m_pushes.load(std::memory_order_relaxed);
        const quint64 word = owner && pushes == popped ? (pushes << 32) | owner : 0;
        if (m_sole.load(std::memory_order_relaxed) != word) // the relay's own last store
            m_sole.store(word, std::memory_order_relaxed);
    }
    QFunnelBatch *pop()
    {
        QFunnelBatch *b = nullptr;
        m_queue.pop(b);
        return b;
    }
    bool tryPop(QFunnelBatch *&batch) { return m_queue.try_pop(batch); }

private:
    static constexpr std::size_t MaxSpares = 64;
    tbb::concurrent_bounded_queue<QFunnelBatch *> m_queue;
    std::atomic<qsizetype> m_inRelay { 0 }; // producers' batches pushed and not handed back
    // Read by every producer's call (QFunnelLane::stamp()): lines of their own.
    alignas(64) std::atomic<quint64> m_pushes { 0 }; // producers' batches ever queued
    alignas(64) std::atomic<quint64> m_sole { 0 }; // noteSoleProducer()'s word, or 0
    std::mutex m_sparesLock;
    std::vector<QFunnelBatch *> m_spares; // guarded by m_sparesLock
    bool m_keepSpares = true; // guarded by m_sparesLock
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELQUEUE_P_H
