// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELDELIVERY_P_H
#define QFUNNELDELIVERY_P_H

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

#include "qfunnelreceiverguard_p.h"

#include <QtFastConnect/qfastconnect_impl.h>
#include <QtCore/qmutex.h>
#include <QtCore/qobject.h>
#include <QtCore/qthread.h>
#include <QtCore/private/qthread_p.h>

#include <atomic>

QT_BEGIN_NAMESPACE

class QThreadData;

namespace QtFastConnectPrivate {

class QFunnelCore;

// Delivery stage: one inbox per receiver thread and funnel, a QObject living in that thread.
// Producers (directly, when the funnel is idle) and the relay push chains of calls; the first
// push into an idle inbox posts one wake-up event; the inbox's thread then runs the calls in its
// event loop, a bounded pass at a time, so paint and input events interleave with a flood.
// Passes may nest (a slot that runs an event loop), like Qt's sendPostedEvents().
class QFunnelInbox final : public QObject
{
public:
    // Delivery passes stop after this many calls or this long (checked every 128 calls), then
    // re-post themselves.
    static constexpr int PassBudgetCalls = 8192;
    static constexpr int PassBudgetMs = 4;

    QFunnelInbox(QFunnelCore *core, QThreadData *threadData);
    ~QFunnelInbox() override;

    // Any thread.
    bool isIdle() const noexcept { return m_head.load(std::memory_order_relaxed) == nullptr; }
    // Pushes a chain linked newest → oldest (top->next ... bottom), keeping its order.
    void push(QFunnelCall *top, QFunnelCall *bottom);

    QThreadData *receiverThreadData() const noexcept { return m_threadData; }
    // True in the thread this inbox delivers in. Inline: the capture asks on every call.
    bool isCurrentThread() const noexcept
    {
        return m_threadData->threadId.loadRelaxed() == QThread::currentThreadId();
    }

    // Statistics, any thread: calls run, calls not run because their receiver was destroyed,
    // calls skipped because a newer one of their connection was pending (CoalesceCalls).
    quint64 deliveredCalls() const noexcept { return m_delivered.load(std::memory_order_relaxed); }
    quint64 discardedCalls() const noexcept { return m_discarded.load(std::memory_order_relaxed); }
    quint64 coalescedCalls() const noexcept { return m_coalesced.load(std::memory_order_relaxed); }

    // Called by QFunnelCore::stop(), in the stopping thread: drops what is pending now, unless
    // a delivery pass is running (then that pass drops it when it ends). Qt delivers no events
    // once the application is gone, so the stopping thread cannot leave this to the receiver's.
    void dropPendingOnStop();
    // The core is going away: no more calls can exist.
    void detach() noexcept { m_core = nullptr; }

protected:
    bool event(QEvent *e) override;

private:
    void deliver();
    void runPass();
    void takeAll();
    void postWake();
    void dropAll();
    qsizetype deliverOne(QFunnelCall *call);
    qsizetype deliverSpecial(QFunnelCall *call, QFunnelReceiverGuard::State st);
    void run(QFunnelCall *call, QObject *receiver);
    void evictOldest();
    // Single writer (the pass lock's holder); no locked instruction.
    static void bump(std::atomic<quint64> &c) noexcept
    {
        c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    // Calls pushed and not yet taken, newest first. The push that finds it empty posts the
    // wake-up; every pass takes it all, so a non-empty m_head always has a wake-up on its way.
    std::atomic<QFunnelCall *> m_head { nullptr };

    // Held for a whole delivery pass (uncontended but for stop()); guards the list below.
    QBasicMutex m_passLock;
    bool m_inPass = false;        // owner thread only: a pass is running (maybe nested)
    // Calls taken from m_head and not yet delivered, oldest first.
    QFunnelCall *m_first = nullptr;
    QFunnelCall *m_last = nullptr;

    QFunnelCore *m_core;
    QThreadData *const m_threadData;

    std::atomic<quint64> m_delivered { 0 };
    std::atomic<quint64> m_discarded { 0 };
    std::atomic<quint64> m_coalesced { 0 };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELDELIVERY_P_H
