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
    // (hasBatchesInRelay()).
    void pushBatch(QFunnelBatch *batch)
    {
        // [P32 count] Relaxed: a read-modify-write, so it continues the release sequence of the
        // relay's decrements; what the count orders is only the emission before it, which
        // happens before the receiver thread's read (QFunnelProcessingHook) by other means.
        m_inRelay.fetch_add(1, std::memory_order_relaxed);
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
    std::mutex m_sparesLock;
    std::vector<QFunnelBatch *> m_spares; // guarded by m_sparesLock
    bool m_keepSpares = true; // guarded by m_sparesLock
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELQUEUE_P_H
