// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELPASSBUDGET_P_H
#define QFUNNELPASSBUDGET_P_H

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

#include <QtCore/qglobal.h>

#include <chrono>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The steady clock, in ns: the rate limit's due times and the pass budget's measure.
inline qint64 steadyClockNs() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

// Delivery stage: how long an inbox's delivery pass may run before it yields to the event loop.
// Guarded by the inbox's pass lock.
//
// A pass stops after Calls calls or Base of time (checked at most every CheckEvery calls, see
// QFunnelInbox::runPass()), then posts a resuming wake-up, which Qt delivers after the events
// already waiting. The time budget is what keeps a GUI's frame rate under a flood: while posted
// events are always pending, Qt's glib event dispatcher runs due timers at most every other
// event-loop iteration (a timer source that fired waits at idle priority until posted events
// were sent), so a repaint timer can wait for two passes, and a pass must stay well within half
// a 60 Hz frame (measured: the report's section 7, benchmarks/responsiveness). Passes of
// wake-ups handled together share the budget (spend(), usedUp()).
//
// That budget grows when the rest of the event loop is expensive: a pass that continues a
// backlog (a Resume) lasts Share times what the thread spent on everything else since the
// previous pass yielded, between Base and Max. A view's deferred work (the relayout and repaint
// that rowsInserted() schedules, whose cost grows with the model) runs once per yield: with
// fixed 1 ms passes the thread spent most of its time on it (the report's section 8), while
// Qt's flood simply starves it. So a backlog gets at least Share / (Share + 1) of its receiver's
// thread, and the view lays out once per pass, about once a frame at most; a loop whose other
// work is cheap (a repaint) still runs every millisecond (benchmarks/modelview).
class QFunnelPassBudget
{
public:
    static constexpr int Calls = 8192; // per Base of the budget
    static constexpr std::chrono::nanoseconds Base = std::chrono::milliseconds(1);
    static constexpr int Share = 3;
    static constexpr std::chrono::nanoseconds Max = std::chrono::milliseconds(8);
    static constexpr int CheckEvery = 128;

    // The budget of passes now: time, and calls.
    qint64 ns() const noexcept { return m_budgetNs; }
    qint64 calls() const noexcept { return Calls * (m_budgetNs / Base.count()); }

    // A Resume's pass starts: its budget, from what the event loop did since the pass before
    // it yielded. The clock is read only on this path, a backlog's: a pass of an idle funnel's
    // call reads none.
    void resume() noexcept
    {
        m_spentNs = 0;
        const qint64 restNs = steadyClockNs() - m_yieldedAtNs;
        // A decaying peak: a view lays out in one iteration and only paints in the next, and
        // the budget should follow the expensive ones.
        m_restOfLoopNs = qMax(restNs, m_restOfLoopNs - m_restOfLoopNs / 4);
        m_budgetNs = qBound(Base.count(), Share * m_restOfLoopNs, Max.count());
    }
    // A pass timed itself (one of a single call does not).
    void spend(qint64 ns) noexcept { m_spentNs += ns; }
    // Whether the passes since the last Resume used the budget: passes of wake-ups handled in
    // one go by Qt's sendPostedEvents() would add up beyond one budget between two paints.
    bool usedUp() const noexcept { return m_spentNs >= m_budgetNs; }
    // Caught up: the next backlog starts from the shortest budget.
    void caughtUp() noexcept
    {
        m_budgetNs = Base.count();
        m_restOfLoopNs = 0;
    }
    // A pass yielded, leaving calls to a Resume.
    void yielded() noexcept { m_yieldedAtNs = steadyClockNs(); }

private:
    qint64 m_spentNs = 0; // by the passes since the last Resume
    qint64 m_budgetNs = Base.count();
    qint64 m_yieldedAtNs = 0;
    // A decaying peak of the time the rest of the event loop took between a yield and its Resume.
    qint64 m_restOfLoopNs = 0;
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPASSBUDGET_P_H
