// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELPARKEDCALLS_P_H
#define QFUNNELPARKEDCALLS_P_H

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

#include "qfunnelroute_p.h"

#include <QtCore/qlist.h>

#include <atomic>
#include <limits>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// RateLimitCalls: the calls of a receiver's inbox that wait for their connection's interval,
// kept per connection (route), each connection's in their order, guarded by the inbox's pass
// lock. A pass puts back only the connections that are due: the others' calls are not walked
// again, which matters for a batched connection, whose calls of a whole interval wait here (a
// pass per relay round would otherwise walk them all each time). The order between two
// connections' parked calls is not kept: each waits for an interval of its own.
class QFunnelParkedCalls
{
    Q_DISABLE_COPY_MOVE(QFunnelParkedCalls)
public:
    QFunnelParkedCalls() = default;

    bool isEmpty() const noexcept { return m_chains.isEmpty(); }
    // How many calls are parked (the stall check's count).
    qsizetype size() const noexcept
    {
        qsizetype n = 0;
        for (const Chain &c : m_chains)
            n += c.n;
        return n;
    }

    // Appends the n calls first..last (linked oldest to newest) of route, due at dueNs (steady
    // clock; the same for all of a route's parked calls, its notBeforeNs). Returns true if a
    // timer must be armed for dueNs: none is, or the armed one fires later.
    bool park(QFunnelRoute *route, QFunnelCall *first, QFunnelCall *last, qsizetype n,
              qint64 dueNs) noexcept
    {
        last->next = nullptr;
        if (const qsizetype i = indexOf(route); i >= 0) {
            Chain *chain = &m_chains[i];
            chain->last->next = first;
            chain->last = last;
            chain->n += n;
            chain->dueNs = dueNs;
        } else {
            m_chains.append(
                    Chain { route, first, last, n, dueNs, bool(route->mode & QFunnelBatchedBit) });
        }
        return needsTimerFor(dueNs);
    }
    // Whether a timer must be armed for dueNs; if so, counts it as armed.
    bool needsTimerFor(qint64 dueNs) noexcept
    {
        // [P18 arm] Relaxed: see the store below.
        if (m_timerArmed.load(std::memory_order_relaxed) && dueNs >= m_timerDueNs)
            return false;
        // [P18 arm] Relaxed: the pass lock orders this with the next park(); the timer thread
        // only clears the flag, before the wake-up it posts (whose pass then arms again if
        // needed): a stale value costs one extra timer or pass.
        m_timerArmed.store(true, std::memory_order_relaxed);
        m_timerDueNs = dueNs;
        return true;
    }
    // The timer fired, or went away unfired (the funnel stopped): the next park() arms a new
    // one. [P18 gone]
    void timerGone() noexcept { m_timerArmed.store(false, std::memory_order_relaxed); }

    // Takes route's parked calls out (linked oldest to newest, the last one's link null); sets
    // *n to how many. nullptr if none wait.
    QFunnelCall *take(const QFunnelRoute *route, qsizetype *n) noexcept
    {
        const qsizetype i = indexOf(route);
        if (i < 0) {
            *n = 0;
            return nullptr;
        }
        QFunnelCall *first = m_chains.at(i).first;
        *n = m_chains.at(i).n;
        m_chains.remove(i);
        return first;
    }
    // Whether calls of route wait here (its newer calls must wait behind them).
    bool holds(const QFunnelRoute *route) const noexcept { return indexOf(route) >= 0; }

    // Puts the parked calls of the connections due at nowNs in front of the chain first..last
    // (they are older than it), and returns how many. Batched connections come due in groups:
    // those due within one interval (the earliest one's) of the earliest wait for the last of
    // them, so that their batches run in one pass, and are due together again an interval later
    // (a view lays out once for all of them). Waiting only delays a batch, none runs earlier
    // than its interval allows; the other connections' latest calls wait for no one.
    // *nextDueNs: when the next of those left is due, or 0.
    qsizetype unparkDueInto(QFunnelCall *&first, QFunnelCall *&last, qint64 nowNs,
                            qint64 *nextDueNs) noexcept
    {
        const bool groupDue = nowNs >= batchGroupDue();
        qsizetype n = 0;
        // Backwards, each in front of the last: the connections keep the order they parked in.
        for (qsizetype i = m_chains.size(); i-- > 0;) {
            const Chain c = m_chains.at(i);
            if (c.dueNs > nowNs || (c.batched && !groupDue))
                continue;
            if (!first)
                last = c.last;
            c.last->next = first;
            first = c.first;
            n += c.n;
            m_chains.remove(i);
        }
        qint64 next = batchGroupDue();
        for (const Chain &c : m_chains) {
            if (!c.batched && (!next || c.dueNs < next))
                next = c.dueNs;
        }
        *nextDueNs = next;
        return n;
    }
    // All of them, due or not (the calls are dropped).
    void unparkAllInto(QFunnelCall *&first, QFunnelCall *&last) noexcept
    {
        qint64 next;
        unparkDueInto(first, last, std::numeric_limits<qint64>::max(), &next);
    }

    // When the batched connections' earliest group is due (0: none is parked): the last due
    // time within one interval of the earliest.
    qint64 batchGroupDue() const noexcept
    {
        const Chain *earliest = nullptr;
        for (const Chain &c : m_chains) {
            if (c.batched && (!earliest || c.dueNs < earliest->dueNs))
                earliest = &c;
        }
        if (!earliest)
            return 0;
        const qint64 windowEndNs = earliest->dueNs + earliest->route->rateLimitNs;
        qint64 due = earliest->dueNs;
        for (const Chain &c : m_chains) {
            if (c.batched && c.dueNs < windowEndNs)
                due = qMax(due, c.dueNs);
        }
        return due;
    }

private:
    struct Chain
    {
        QFunnelRoute *route;
        QFunnelCall *first;
        QFunnelCall *last;
        qsizetype n;
        qint64 dueNs;
        bool batched; // connectBatched(): comes due with its group
    };
    // The chain of route, or -1 (a connection has one at most).
    qsizetype indexOf(const QFunnelRoute *route) const noexcept
    {
        for (qsizetype i = 0; i < m_chains.size(); ++i) {
            if (m_chains.at(i).route == route)
                return i;
        }
        return -1;
    }

    // A list, empty (no allocation) in the inboxes of the connections that are not rate-limited,
    // nearly all of them: every receiver of a funnel carries an inbox.
    QList<Chain> m_chains;
    qint64 m_timerDueNs = 0;
    std::atomic<bool> m_timerArmed { false };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPARKEDCALLS_P_H
