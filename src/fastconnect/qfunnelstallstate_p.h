// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELSTALLSTATE_P_H
#define QFUNNELSTALLSTATE_P_H

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

#include <atomic>
#include <utility>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Delivery stage: what an inbox knows of its receiver's thread stalling (the stall check is
// QFunnelInbox::releaseIfStalled()). A stalled receiver's inbox is detached: its pending calls,
// and those pushed to it until its thread runs a pass again, hold no credit, so that they do not
// hold the capacity other receivers need. Which calls hold none is not recorded per call: the
// next that many calls to finish return none, so that every call returns exactly one credit.
class QFunnelStallState
{
    Q_DISABLE_COPY_MOVE(QFunnelStallState)
public:
    QFunnelStallState() = default;

    // Whether the receiver's thread was found stalled and has not run a pass since; any thread.
    // A hint: a stale answer either leaves a call holding its credit (the next check gives it
    // back) or takes one out of the capacity a little early; the count of calls that hold none
    // keeps every call returning exactly one credit either way.
    bool isDetached() const noexcept
    {
        return m_detached.load(std::memory_order_relaxed); // [P14 read] a hint
    }
    // Before a push of n calls into a detached inbox (any thread): they hold no credit.
    void markFree(qsizetype n) noexcept
    {
        // Relaxed: the push's release publishes it with the calls.
        m_creditFree.fetch_add(n, std::memory_order_relaxed); // [P13 mark] before the push
    }
    // Whether some pending calls hold no credit (DropOldest evicts none then: no room made).
    bool hasFreeCalls() const noexcept { return m_creditFree.load(std::memory_order_relaxed) != 0; }
    // Of n calls that finished (ran or were dropped; the pass lock's holder), how many give a
    // credit back: all, unless some pending calls hold none.
    qsizetype creditsOf(qsizetype n) noexcept
    {
        // [P13 read] relaxed: the calls' push and take order the count with them.
        return Q_LIKELY(m_creditFree.load(std::memory_order_relaxed) == 0) ? n : creditsOfSlow(n);
    }

    // The pass lock's holder, as a pass starts: the receiver's thread runs its events, so its
    // calls hold capacity again.
    void notePass() noexcept
    {
        // Hints (see P14); the pass lock orders the stall check's reads of the pending calls.
        m_passes.store(m_passes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (Q_UNLIKELY(m_detached.load(std::memory_order_relaxed)))
            m_detached.store(false, std::memory_order_relaxed); // [P14 clear]
    }
    // The pass lock's holder, at a stall check at nowMs: since when no pass has started, as far
    // as the checks saw (the check that first saw the current count of passes).
    qint64 noPassSinceMs(qint64 nowMs) noexcept
    {
        const quint32 passes = m_passes.load(std::memory_order_relaxed);
        if (passes != m_seenPasses || !m_seenAtMs) {
            m_seenPasses = passes;
            m_seenAtMs = nowMs;
        }
        return m_seenAtMs;
    }
    // The pass lock's holder: the receiver's thread stalled with `pending` calls waiting; from
    // now on they hold no credit. Returns how many credits that frees.
    qsizetype detach(qsizetype pending) noexcept
    {
        // Free calls may be counted before they are pushed (markFree()): never count more free
        // calls than there will be.
        const qsizetype free = m_creditFree.load(std::memory_order_relaxed);
        const qsizetype released = qMax<qsizetype>(pending - free, 0);
        m_creditFree.fetch_add(released, std::memory_order_relaxed);
        m_detached.store(true, std::memory_order_relaxed); // [P14 set] a hint
        return released;
    }
    // The pass lock's holder: true the first time only (one warning per inbox).
    bool firstStall() noexcept { return !std::exchange(m_stalledBefore, true); }

private:
    qsizetype creditsOfSlow(qsizetype n) noexcept
    {
        // Relaxed: a count, ordered for the pass by the push that published the calls.
        qsizetype free = m_creditFree.load(std::memory_order_relaxed);
        qsizetype take;
        do {
            take = qMin(free, n);
        } while (!m_creditFree.compare_exchange_weak(free, free - take, std::memory_order_relaxed));
        return n - take;
    }

    std::atomic<bool> m_detached { false };
    // How many of the calls pending hold no credit. Added to before those calls are published
    // (the push's release orders it for the pass that takes them).
    std::atomic<qsizetype> m_creditFree { 0 };
    // Passes started (single writer, the pass lock's holder), and what the stall check last saw
    // of them and when (pass lock holder).
    std::atomic<quint32> m_passes { 0 };
    quint32 m_seenPasses = 0;
    qint64 m_seenAtMs = 0;
    bool m_stalledBefore = false; // pass lock holder
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELSTALLSTATE_P_H
