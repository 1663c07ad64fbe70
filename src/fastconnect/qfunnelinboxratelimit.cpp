// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Delivery stage, RateLimitCalls: which calls of a rate-limited connection run now, which wait
// for its interval (parked: QFunnelParkedCalls), and the timer that wakes the inbox for them.

#include "qfunnelinbox_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelreceiverguard_p.h"
#include "qfunnelroute_p.h"

#include <limits>
#include <utility>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// RateLimitCalls, with m_passLock held: like CoalesceCalls, only the latest call of the
// connection runs, and not before the connection's interval has passed since the last one ran.
// A latest call that comes too early is parked, keeping its credit, and a timer in this thread
// wakes the inbox when it is due; a newer call meanwhile makes it a coalesced one. So the last
// call of a burst always runs, at most one interval late.
qsizetype QFunnelInbox::deliverRateLimited(QFunnelCall *call, QObject *receiver)
{
    QFunnelRoute *route = call->route;
    // [P17 peek] Relaxed, as in claimLatest(). The clock is read only for the latest call.
    const bool latest = route->latest.load(std::memory_order_relaxed) == call;
    const qint64 now = latest ? steadyClockNs() : 0;
    if (latest && now < route->notBeforeNs) {
        // A call parked earlier is superseded by this one: destroyed now, not at its due time,
        // so that it does not hold its credit for an interval.
        qsizetype superseded = 0;
        for (QFunnelCall *c = m_parked.take(route, &superseded); c;)
            route->destroyCall(std::exchange(c, c->next));
        bump(m_coalesced, quint64(superseded));
        park(call, call, 1);
        return superseded;
    }
    if (claimLatest(call)) {
        route->notBeforeNs = now + route->rateLimitNs;
        run(call, receiver);
    }
    return 1;
}

// RateLimitCalls on a batched connection, with m_passLock held: nothing is coalesced; the
// connection's calls wait (parked, keeping their credits) until its interval has passed since
// its last batch, and then its slot gets them as one batch, with the calls that follow them
// (runBatch(), not capped at MaxBatchCalls: the funnel's capacity bounds it). So the slot runs
// at most once per interval with everything since the last one. A run split by other
// connections' calls finds the interval started again: its rest waits for the next one, never
// dropped. Returns the credits given back.
qsizetype QFunnelInbox::deliverRateLimitedBatch(QFunnelCall *call, QObject *receiver,
                                                bool pastUnparked)
{
    QFunnelRoute *route = call->route;
    // Due or not by the clock as the pass first read it (unparkDue() read it too): a call found
    // due later in the pass, after earlier calls of its connection were parked, would overtake
    // them.
    if (!m_passNowNs)
        m_passNowNs = steadyClockNs();
    // Due, but with nothing parked when its group came due (its producer had emitted nothing
    // meanwhile): it joins the group still waiting, if one is due within its own interval,
    // rather than run in a pass (and a view layout) of its own and start a clock of its own.
    // Not the calls this pass put back (pastUnparked: they are the group that came due).
    // Waiting only delays its batch, by less than its interval: a group of slower connections
    // would hold it back by theirs.
    if (pastUnparked && route->notBeforeNs <= m_passNowNs) {
        const qint64 groupDueNs = m_parked.batchGroupDue();
        if (groupDueNs > m_passNowNs && groupDueNs - m_passNowNs < route->rateLimitNs)
            route->notBeforeNs = groupDueNs;
    }
    // Parked calls of its own that wait for their group (unparkDue()): these wait behind them.
    if (m_passNowNs < route->notBeforeNs || Q_UNLIKELY(m_parked.holds(route))) {
        // The whole run at the front waits, walked once (runPass() popped call already).
        QFunnelCall *last = call;
        qsizetype n = 1;
        while (m_first && m_first->route == route) {
            last = m_first;
            m_first = m_first->next;
            ++n;
        }
        park(call, last, n);
        return 0;
    }
    // From the pass's clock, not the slot's: the receiver's connections whose batches run in
    // one pass are due together again, so that their next batches share a pass too (and a view
    // lays out once for them). The interval is between the starts of the passes that run two
    // batches of the connection.
    route->notBeforeNs = m_passNowNs + route->rateLimitNs;
    putBack(call);
    if (Q_UNLIKELY(!route->acceptsReceiver(receiver))) {
        // A receiver no longer of the slot's class: Run's own check skips the slot.
        m_first = call->next;
        run(call, receiver);
        return 1;
    }
    return runBatch(route, receiver, std::numeric_limits<int>::max());
}

// With m_passLock held, in the receiver's thread: the n calls first..last of one connection
// wait until its interval has passed.
void QFunnelInbox::park(QFunnelCall *first, QFunnelCall *last, qsizetype n)
{
    QFunnelRoute *route = first->route;
    if (m_parked.park(route, first, last, n, route->notBeforeNs))
        armParkedTimer(route->notBeforeNs);
}

// With m_passLock held, as a pass starts: the parked calls that are due join the front of the
// pending list (returns how many); a timer is armed for the next of the others to be due.
qsizetype QFunnelInbox::unparkDue()
{
    m_passNowNs = steadyClockNs();
    qint64 nextDueNs = 0;
    const qsizetype n = m_parked.unparkDueInto(m_first, m_last, m_passNowNs, &nextDueNs);
    if (nextDueNs && m_parked.needsTimerFor(nextDueNs))
        armParkedTimer(nextDueNs);
    return n;
}

// With m_passLock held, in the receiver's thread: the funnel's timer thread, not this one's
// event loop, so that the receiver's old thread, blocked after it moved the receiver, holds
// nothing up (QFunnelParkedTimer). A stopped funnel arms none: its calls are dropped.
void QFunnelInbox::armParkedTimer(qint64 dueNs)
{
    m_core->parkedTimer().arm(this, dueNs);
}

void QFunnelInbox::parkedTimerLost()
{
    // The funnel stopped before the calls were due: the next pass, or the stop's sweep, drops
    // them. A dead receiver's are dropped now (no wake-up may be pending for them).
    m_parked.timerGone();
    if (m_guard->isAlive())
        wakeForAll();
    else
        dropWhileUndeliverable();
}

void QFunnelInbox::parkedCallsDue()
{
    // In the timer's thread (see P18). The wake-up below is posted after the flag is cleared: the
    // pass it starts sees it cleared (Qt's posted-event lock orders the two).
    m_parked.timerGone();
    wakeForAll();
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
