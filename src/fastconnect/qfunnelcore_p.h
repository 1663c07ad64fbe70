// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCORE_P_H
#define QFUNNELCORE_P_H

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

#include "qfunneladmission_p.h"
#include "qfunnelinboxregistry_p.h"
#include "qfunnelqueue_p.h"
#include "qfunnelparkedtimer_p.h"
#include "qfunnelrelay_p.h"

#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>

#include <atomic>
#include <memory>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Runs fn(core) in the application's main thread, soon, holding a reference on core (null: no
// funnel's work) meanwhile: for what the relay must not do itself (user code). False if there
// is no application (it is being destroyed, or was never created). Any thread.
bool runInApplicationThread(QFunnelCore *core, void (*fn)(QFunnelCore *));

// A thread receivers were destroyed in (QFunnelReceiverGuard::lastThread()): the calls that
// reach such a receiver later are dropped there, their arguments' and functors' destructors
// run there, as Qt destroys a dead receiver's queued calls in the thread that destroyed it.
// Shared by the guards of the receivers destroyed in it; open until the thread exits.
class QFunnelLastThread
{
    Q_DISABLE_COPY_MOVE(QFunnelLastThread)
public:
    QFunnelLastThread() = default;
    // The calling thread's, or null if it has no event dispatcher (nothing would run a task).
    static std::shared_ptr<QFunnelLastThread> current();
    // Runs fn(core) in the thread, soon (its event loop), or at its exit at the latest,
    // holding a reference on core meanwhile. False once the thread began to exit. Any thread.
    bool run(QFunnelCore *core, void (*fn)(QFunnelCore *));
    // Whether the calling thread is this thread.
    bool isCurrent() const;
    void close(); // at the thread's exit: runs what is still posted

private:
    void open();

    mutable QMutex m_lock;
    QObject *m_target = nullptr; // guarded by m_lock; lives in the thread
    Qt::HANDLE m_id = nullptr; // guarded by m_lock
};

// The application's thread; while there is no application, Qt's main thread (the first thread
// that used Qt, which is where Qt expects the application). Any thread.
QThread *applicationThread();

// What a funnel is, apart from its QObject face: its stages (queue, relay, admission, the
// receivers' inboxes), its lifetime and its counters. Reference counted, because routes,
// producer lanes and inboxes may outlive the QFunnel that made them; after stop() it accepts
// nothing.
class QFunnelCore
{
    Q_DISABLE_COPY_MOVE(QFunnelCore)
public:
    QFunnelCore();

    // Relaxed: a reference publishes nothing; acq_rel on the last release, so that the
    // destructor sees every other owner's writes.
    void ref() noexcept { m_ref.fetch_add(1, std::memory_order_relaxed); }
    // For a registry's lookup (QFunnelProcessingHook): fails once the last reference went.
    // Relaxed for the same reason as ref().
    bool tryRef() noexcept
    {
        int n = m_ref.load(std::memory_order_relaxed);
        while (n > 0) {
            if (m_ref.compare_exchange_weak(n, n + 1, std::memory_order_relaxed))
                return true;
        }
        return false;
    }
    void deref() noexcept
    {
        // [P23 last] acq_rel: the last owner sees every other owner's writes before destroying.
        if (m_ref.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }

    // Stops the relay (joined), releases blocked producers and drops every pending call in the
    // calling thread. Idempotent.
    void stop();
    // [P10 check] seq_cst (a plain load on x86): orders a producer's re-check after queueing a
    // call against stop()'s exchange, so that one of the two sweeps the call.
    bool isStopped() const noexcept { return m_stopped.load(std::memory_order_seq_cst); }
    // Drops the calls of batches queued after the relay stopped; called by stop() and by a
    // producer that finds the funnel stopped right after it queued a call.
    void sweepStoppedQueue();

    QFunnelQueue &queue() noexcept { return m_queue; }
    QFunnelRelay &relay() noexcept { return m_relay; }
    QFunnelAdmission &admission() noexcept { return m_admission; }
    QFunnelInboxRegistry &inboxes() noexcept { return m_inboxes; }
    QFunnelParkedTimer &parkedTimer() noexcept { return m_parkedTimer; }

    // Statistics, summed on read (QFunnel::statistics()): emissions counted per producer lane,
    // and drops counted wherever a call is dropped.
    void addEmittedCounter(const std::atomic<quint64> *c);
    void removeEmittedCounter(const std::atomic<quint64> *c);
    // An emission from a thread whose lanes thread exit already destroyed.
    void countEmittedWithoutLane() noexcept
    {
        m_emittedWithoutLane.fetch_add(1, std::memory_order_relaxed);
    }
    quint64 emittedCalls();
    void countDropped(quint64 n = 1) noexcept { m_dropped.fetch_add(n, std::memory_order_relaxed); }
    quint64 droppedCalls() const noexcept { return m_dropped.load(std::memory_order_relaxed); }

private:
    ~QFunnelCore();

    std::atomic<int> m_ref { 1 };
    std::atomic<bool> m_stopped { false };

    QMutex m_sweepLock;
    QMutex m_countersLock;
    QList<const std::atomic<quint64> *> m_emittedCounters; // guarded by m_countersLock
    quint64 m_retiredEmitted = 0; // guarded by m_countersLock
    std::atomic<quint64> m_emittedWithoutLane { 0 };
    std::atomic<quint64> m_dropped { 0 };

    QFunnelInboxRegistry m_inboxes;
    QFunnelAdmission m_admission { m_stopped, m_inboxes };
    QFunnelQueue m_queue;
    QFunnelRelay m_relay { m_queue };
    QFunnelParkedTimer m_parkedTimer;
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCORE_P_H
