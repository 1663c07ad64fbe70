// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELPARKEDTIMER_P_H
#define QFUNNELPARKEDTIMER_P_H

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

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelInbox;

// RateLimitCalls: wakes an inbox when its parked calls are due. A thread of its own, one per
// funnel, started by the first park: a timer of the receiver's thread stays in that thread when
// the receiver moves, and fires only when that thread runs its events again (never, while it is
// blocked). The wake-up it posts is the receiver's own posted event, so it reaches the receiver
// wherever it lives by then. Runs no user code.
class QFunnelParkedTimer
{
    Q_DISABLE_COPY_MOVE(QFunnelParkedTimer)
public:
    QFunnelParkedTimer() = default;
    ~QFunnelParkedTimer() { stop(); }

    // Calls inbox->parkedCallsDue() in the timer's thread once the steady clock reaches dueNs
    // (steadyClockNs()); holds a reference on inbox until then. False once stop() ran: then
    // nothing is armed. Any thread.
    bool arm(QFunnelInbox *inbox, qint64 dueNs);
    // Ends the thread; inboxes still waiting get parkedTimerLost(). Idempotent; any thread but
    // the timer's.
    void stop();
    static bool isTimerThread() noexcept;

private:
    void run();

    std::mutex m_lock;
    std::condition_variable m_changed;
    std::multimap<qint64, QFunnelInbox *> m_due; // guarded by m_lock, with a reference each
    std::thread m_thread; // guarded by m_lock
    bool m_stopped = false; // guarded by m_lock
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPARKEDTIMER_P_H
