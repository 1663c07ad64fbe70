// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Delivery stage, RateLimitCalls: the thread that wakes inboxes whose parked calls are due.

#include "qfunnelparkedtimer_p.h"
#include "qfunnelinbox_p.h"

#include <chrono>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {
thread_local bool tlTimerThread = false; // trivially destructible: read at any time
} // namespace

bool QFunnelParkedTimer::isTimerThread() noexcept
{
    return tlTimerThread;
}

bool QFunnelParkedTimer::arm(QFunnelInbox *inbox, qint64 dueNs)
{
    std::lock_guard<std::mutex> locker(m_lock);
    if (m_stopped)
        return false;
    inbox->ref();
    const bool earliest = m_due.empty() || dueNs < m_due.begin()->first;
    m_due.emplace(dueNs, inbox);
    if (!m_thread.joinable())
        m_thread = std::thread([this] { run(); });
    else if (earliest)
        m_changed.notify_one();
    return true;
}

void QFunnelParkedTimer::stop()
{
    std::multimap<qint64, QFunnelInbox *> left;
    std::thread thread;
    {
        std::lock_guard<std::mutex> locker(m_lock);
        m_stopped = true;
        left.swap(m_due);
        thread = std::move(m_thread);
        m_changed.notify_one();
    }
    if (thread.joinable()) {
        // QFunnelCore::stop() runs before the core can be released: never in this thread.
        Q_ASSERT(thread.get_id() != std::this_thread::get_id());
        thread.join();
    }
    for (const auto &[dueNs, inbox] : left) {
        Q_UNUSED(dueNs);
        inbox->parkedTimerLost();
        inbox->deref();
    }
}

void QFunnelParkedTimer::run()
{
    tlTimerThread = true;
    std::unique_lock<std::mutex> locker(m_lock);
    while (!m_stopped) {
        if (m_due.empty()) {
            m_changed.wait(locker);
            continue;
        }
        const auto next = m_due.begin();
        const qint64 waitNs = next->first - steadyClockNs();
        if (waitNs > 0) {
            m_changed.wait_for(locker, std::chrono::nanoseconds(waitNs));
            continue;
        }
        QFunnelInbox *const inbox = next->second;
        m_due.erase(next);
        locker.unlock();
        inbox->parkedCallsDue();
        inbox->deref();
        locker.lock();
    }
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
