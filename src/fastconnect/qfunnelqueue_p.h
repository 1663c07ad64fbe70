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

#include <QtFastConnect/qfastconnectglobal.h>

#include <tbb/concurrent_queue.h>

#include <atomic>
#include <mutex>
#include <vector>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

struct QFunnelCall;

// The unit that travels through the queue: a run of calls from one producer thread, filled by
// that producer while the relay already drains it. Pushing a batch instead of a call is what
// keeps the TBB queue's ticket convoy away when producers outnumber cores: a producer touches the
// shared queue once per batch, and a batch stays open for as long as the relay keeps finding new
// calls in it.
//
// Protocol (one producer, the relay):
// - the producer writes calls[n] and then publishes it with one fetch_add on state;
// - the relay reads state (acquire) and consumes calls[done, count);
// - when the relay has caught up and saw nothing new, it seals the batch with a CAS; a producer
//   whose fetch_add returns Sealed knows the relay has let go and reuses the batch;
// - a full batch belongs to the relay (the producer moved on), an abandoned one too (its
//   producer thread exited).
struct QFunnelBatch
{
    static constexpr quint32 Capacity = 510;             // calls; the batch is ~4 KiB
    static constexpr quint32 Sealed = 1u << 31;
    static constexpr quint32 Abandoned = 1u << 30;
    static constexpr quint32 CountMask = Abandoned - 1;

    std::atomic<quint32> state { 0 };
    QFunnelCall *calls[Capacity];

    // Producer side. Returns false if the relay had sealed the batch before this call was
    // published: the call is not in the batch, and the batch is the producer's to reuse.
    bool append(quint32 index, QFunnelCall *call) noexcept
    {
        calls[index] = call;
        // Release publishes calls[index]; acquire pairs with the relay's sealing CAS, so the
        // relay's reads of this batch happen before the producer reuses it. seq_cst (the same
        // lock xadd on x86) also orders it before the producer's isStopped() re-check.
        return !(state.fetch_add(1, std::memory_order_seq_cst) & Sealed);
    }
    void restart(QFunnelCall *first) noexcept
    {
        calls[0] = first;
        state.store(1, std::memory_order_relaxed); // published by the queue push
    }
    // Producer thread exit. Returns true if the batch is already sealed (the caller frees it);
    // otherwise the relay frees it after draining.
    bool abandon() noexcept
    {
        return state.fetch_or(Abandoned, std::memory_order_acq_rel) & Sealed;
    }

    // Relay side.
    quint32 load() const noexcept { return state.load(std::memory_order_acquire); }
    static quint32 count(quint32 s) noexcept { return s & CountMask; }
    bool trySeal(quint32 seen) noexcept
    {
        return state.compare_exchange_strong(seen, seen | Sealed, std::memory_order_acq_rel,
                                             std::memory_order_relaxed);
    }
};

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
    void recycle(QFunnelBatch *b)
    {
        {
            std::lock_guard<std::mutex> locker(m_sparesLock);
            if (m_spares.size() < MaxSpares) {
                m_spares.push_back(b);
                return;
            }
        }
        delete b;
    }

    void push(QFunnelBatch *batch) { m_queue.push(batch); }
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
    std::mutex m_sparesLock;
    std::vector<QFunnelBatch *> m_spares;
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELQUEUE_P_H
