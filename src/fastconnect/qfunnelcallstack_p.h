// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCALLSTACK_P_H
#define QFUNNELCALLSTACK_P_H

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

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qpoolallocator.h>

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Delivery stage: the calls pushed to an inbox and not taken by its pass yet. A lock-free stack
// (a Treiber stack) with many pushers (producers, the relay) and one taker at a time (the
// inbox's pass lock holder), which takes everything at once (takeAll()), so no ABA problem
// arises. An entry is a call, or a segment of calls in order that oldestFirst() made of a
// long chain, so that the taking thread does not reverse the relay's calls one by one.
class QFunnelCallStack
{
    Q_DISABLE_COPY_MOVE(QFunnelCallStack)
public:
    QFunnelCallStack() = default;

    // A chain of calls made ready for push(): top, the entry to push, and below, its link to the
    // entry under it, to be filled.
    struct Chain
    {
        QFunnelCall *top;
        QFunnelCall **below;
    };
    // Calls linked newest → oldest (top->next ... bottom): pushed as they are.
    static Chain newestFirst(QFunnelCall *top, QFunnelCall *bottom) noexcept
    {
        return Chain { top, &bottom->next };
    }
    // n calls linked oldest → newest (first->next ... last; last's link is not read): a long
    // chain becomes one segment entry, a short one is turned newest first here.
    static Chain oldestFirst(QFunnelCall *first, QFunnelCall *last, quint32 n);

    // Whether no call waits to be taken; any thread. A hint for the capture's choice of path,
    // relaxed: either answer is correct (a push lands behind what the inbox holds); a stale one
    // costs a wake-up per call or a relay round.
    bool isEmpty() const noexcept
    {
        return m_head.load(std::memory_order_relaxed) == nullptr; // [P19 empty] a hint
    }
    // Any thread. Once pushed, the calls may be taken, run and freed before this returns.
    void push(const Chain &chain) noexcept
    {
        QFunnelCall *old = m_head.load(std::memory_order_relaxed);
        do {
            *chain.below = old;
            // [P4 push] Publishes the calls (and their arguments) to the delivering thread.
            // [P6 push] seq_cst, not just release (the same instruction on x86): see
            // hasPushesAfterUnlock().
        } while (!m_head.compare_exchange_weak(old, chain.top, std::memory_order_seq_cst,
                                               std::memory_order_relaxed));
    }
    // After unlocking the inbox's pass lock: whether calls were pushed that nobody else will
    // look at (see the .cpp).
    bool hasPushesAfterUnlock() noexcept;

    // The taker (the pass lock's holder): everything pushed so far, linked oldest first
    // (last->next is null), and how many calls; first is null if there were none.
    struct Taken
    {
        QFunnelCall *first = nullptr;
        QFunnelCall *last = nullptr;
        quint64 n = 0;
    };
    Taken takeAll();

private:
    // A segment: the calls of a long chain, oldest first, pushed as one entry. Its pointer is
    // tagged with bit 0 wherever it stands for a call (m_head, a call's link), so that
    // takeAll() tells the two apart.
    struct Segment
    {
        Q_FASTCONNECT_POOLED
        QFunnelCall *first;
        QFunnelCall *last;
        QFunnelCall *older = nullptr; // the entry pushed before it
        quint32 n; // calls in it
    };
    // Chains shorter than this are reversed by the pusher instead: a segment costs an
    // allocation and a free, about what reversing a few calls costs.
    static constexpr quint32 SegmentMinCalls = 8;
    static Segment *segmentOf(QFunnelCall *entry) noexcept
    {
        const quintptr bits = reinterpret_cast<quintptr>(entry);
        return bits & 1 ? reinterpret_cast<Segment *>(bits & ~quintptr(1)) : nullptr;
    }

    // Newest entry first.
    std::atomic<QFunnelCall *> m_head { nullptr };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCALLSTACK_P_H
