// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Delivery stage, stalled receivers: a receiver whose thread does not run its events (it has
// finished, not started yet, or is blocked) must not hold the capacity that every other
// receiver of the funnel needs. Qt's queued calls wait in such a thread's posted-event list,
// unbounded, for a thread that may start again; the funnel's calls do the same, outside its
// capacity, once a producer waiting for room finds the receiver stalled. And a slow receiver
// holds at most its share of the capacity (QFunnelAdmission::ShareOfRoomLeft): its producers wait
// for it, while those of other receivers find room.

#include "qfunnelinbox_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelreceiverguard_p.h"
#include "qfunnelwarning_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {
qsizetype chainLength(const QFunnelCall *c) noexcept
{
    qsizetype n = 0;
    for (; c; c = c->next)
        ++n;
    return n;
}
} // namespace

qsizetype QFunnelInbox::heldCallsToWaitFor(const void *inbox) noexcept
{
    const auto *self = static_cast<const QFunnelInbox *>(inbox);
    // A hint: a waiting producer reads it again after the next stall check, which sets it.
    if (self->m_stall.isDetached() || !self->m_guard->isAlive() || self->m_core->isStopped()) {
        return -1;
    }
    return self->heldCalls();
}

qsizetype QFunnelInbox::releaseIfStalled(qint64 nowMs)
{
    // Only a receiver whose wake-up waits to be handled can be stalled; the flag is a hint
    // here (the pass lock below orders what matters).
    if (m_stall.isDetached() || m_wakesPending.load(std::memory_order_relaxed) <= 0) {
        return 0;
    }
    if (!m_passLock.tryLock())
        return 0; // a pass is running: not stalled
    qsizetype released = 0;
    const qint64 noPassSinceMs = m_stall.noPassSinceMs(nowMs);
    m_held.take(m_incoming);
    // Calls wait for a wake-up that was posted and not handled.
    if ((m_first || !m_held.isEmpty() || !m_parked.isEmpty())
        && m_wakesPending.load(std::memory_order_relaxed) > 0) {
        const QFunnelThreadState thread = m_guard->receiverThread();
        // A thread without an event dispatcher has finished, or has not started yet (or is
        // starting right now: hence a short grace too).
        const qint64 grace = thread.running ? StalledMs : QFunnelAdmission::StallCheckMs;
        const bool stalled = thread.thread && nowMs - noPassSinceMs >= grace;
        if (stalled) {
            const qsizetype pending =
                    chainLength(m_first) + chainLength(m_held.first()) + m_parked.size();
            released = m_stall.detach(pending);
            // One warning per inbox, and one per cause and window for the process: a flood
            // stalls receivers by the thousand (qfunnelwarning_p.h).
            if (m_stall.firstStall()
                && qfcNoteWarning(thread.running ? QFunnelWarning::ReceiverBlocked
                                                 : QFunnelWarning::ReceiverGone)) {
                qWarning("QFunnel: a receiver's thread (QThread %p) %s; its %lld pending calls, "
                         "and those that follow until its event loop runs again, no longer count "
                         "against the funnel's capacity",
                         static_cast<const void *>(thread.thread),
                         thread.running ? "has not run its events for a second"
                                        : "has finished or not started",
                         static_cast<long long>(pending));
            }
        }
    }
    // A wake-up handled meanwhile found the lock taken and left its calls to this thread (see
    // wake()).
    const bool leftover = m_first || !m_held.isEmpty() || !m_parked.isEmpty();
    m_passLock.unlock();
    if (released)
        releaseCreditFree(released);
    settle(leftover);
    return released;
}

void QFunnelInbox::releaseCreditFree(qsizetype n)
{
    m_core->admission().countOverCapacity(quint64(n));
    m_core->admission().releaseCredits(n);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
