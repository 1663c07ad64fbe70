// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELINBOXREGISTRY_P_H
#define QFUNNELINBOXREGISTRY_P_H

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

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qhash.h>
#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>

#include <atomic>
#include <memory>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelInbox;
class QFunnelLastThread;
class QFunnelReceiverGuard;

// A funnel's inboxes, one per receiver, keyed by the receiver's guard (which lives as long as
// any inbox holds it, so a key is never reused while its entry exists), and the delivery
// statistics of inboxes already gone. Admission reaches the stalled ones through it.
class QFunnelInboxRegistry final : public QFunnelStalledReceivers
{
    Q_DISABLE_COPY_MOVE(QFunnelInboxRegistry)
public:
    QFunnelInboxRegistry() = default;

    // The inbox of the receiver guard watches, created on first use and kept while the
    // receiver lives or until the funnel stops, with a reference for the caller (any thread).
    // threadId: the receiver's thread now.
    QFunnelInbox *inboxFor(QFunnelCore *core, QFunnelReceiverGuard *guard, Qt::HANDLE threadId);
    // An inbox's last reference is gone: it leaves the registry, its statistics stay here.
    void forget(QFunnelInbox *inbox);
    // The funnel stopped: every inbox drops what it holds (QFunnelInbox::dropPendingOnStop()).
    void dropAllPending();
    // The funnel stopped: the receivers' guards give back the inboxes they kept for their next
    // connects (QFunnelReceiverGuard::retainInbox()), which then go with their last route.
    void releaseRetained();
    // flush(), after the calling thread's calls reached their inboxes: each inbox that may hold
    // calls not run yet posts a barrier wake-up (QFunnelInbox::postBarrier()), from this thread.
    void postBarriers();
    // A producer waits for room: every stalled receiver's calls stop counting against the
    // capacity (QFunnelInbox::releaseIfStalled()). Returns the credits given back.
    qsizetype releaseStalled() override;
    // Calls reached inbox after its receiver died, in a thread that does not drop them itself
    // (the relay, the rate-limit timer, a thread other than the receiver's last): they are
    // dropped in the receiver's last thread (QFunnelReceiverGuard::lastThread()), or the
    // application's main thread if that is unknown or gone, soon. Takes a reference on inbox.
    void deferDrop(QFunnelCore *core, QFunnelInbox *inbox);
    // Drops what deferDrop() left for the calling thread: its receivers' last thread's task, a
    // producer (when it refills its credits or waits for room), a statistics reader, flush().
    // Any thread but a relay.
    void dropDeferred()
    {
        // [P16 read] Relaxed: a hint; the lock in dropDeferredNow() orders the list itself.
        if (Q_UNLIKELY(m_hasDeferred.load(std::memory_order_relaxed)))
            dropDeferredHere();
    }
    // Drops all of it, in the calling thread (stop()).
    void dropAllDeferred();

    struct Totals
    {
        quint64 delivered = 0, discarded = 0, coalesced = 0;
    };
    Totals totals();

private:
    struct Deferred
    {
        QFunnelInbox *inbox; // with a reference
        std::shared_ptr<QFunnelLastThread> thread; // null: the application's
        qint64 sinceMs; // m_clock
    };
    QList<QFunnelInbox *> referencedInboxes();
    void dropDeferredHere();
    template<typename Which>
    void dropDeferredNow(Which which);

    const QElapsedTimer m_clock = [] {
        QElapsedTimer t;
        t.start();
        return t;
    }(); // the stall checks' clock (QFunnelInbox::releaseIfStalled())
    QMutex m_lock;
    QHash<QFunnelReceiverGuard *, QFunnelInbox *> m_inboxes; // guarded by m_lock
    Totals m_retired; // guarded by m_lock
    QList<Deferred> m_deferred; // guarded by m_lock
    std::atomic<bool> m_hasDeferred { false };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELINBOXREGISTRY_P_H
