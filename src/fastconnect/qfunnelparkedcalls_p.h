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

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// RateLimitCalls, delivery stage: an inbox's calls waiting for their connection's interval,
// oldest first, and the state of the one timer that wakes the inbox for them (the inbox arms it:
// qfunnelinboxratelimit.cpp). Guarded by the inbox's pass lock; the armed flag is also cleared
// by the timer's handler, in the receiver's thread.
class QFunnelParkedCalls
{
    Q_DISABLE_COPY_MOVE(QFunnelParkedCalls)
public:
    QFunnelParkedCalls() = default;

    bool isEmpty() const noexcept { return !m_first; }
    const QFunnelCall *first() const noexcept { return m_first; }

    // Appends call, due at dueNs (steady clock). Returns true if a timer must be armed for
    // dueNs: none is, or the armed one fires later.
    bool park(QFunnelCall *call, qint64 dueNs) noexcept
    {
        call->next = nullptr;
        if (m_last)
            m_last->next = call;
        else
            m_first = call;
        m_last = call;
        if (m_timerArmed.load(std::memory_order_relaxed) && dueNs >= m_timerDueNs)
            return false;
        // [P18] Relaxed: the pass lock orders this with the next park(); the timer's handler
        // only clears the flag, in the same thread.
        m_timerArmed.store(true, std::memory_order_relaxed);
        m_timerDueNs = dueNs;
        return true;
    }
    // The timer fired, or went away unfired: the next park() arms a new one. [P18]
    void timerGone() noexcept { m_timerArmed.store(false, std::memory_order_relaxed); }

    // Puts every parked call in front of the chain first..last (they are older than it).
    void unparkInto(QFunnelCall *&first, QFunnelCall *&last) noexcept
    {
        if (!m_first)
            return;
        if (!first)
            last = m_last;
        m_last->next = first;
        first = m_first;
        m_first = m_last = nullptr;
    }

private:
    QFunnelCall *m_first = nullptr;
    QFunnelCall *m_last = nullptr;
    qint64 m_timerDueNs = 0;
    std::atomic<bool> m_timerArmed { false };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPARKEDCALLS_P_H
