// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelinboxregistry_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelreceiverguard_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qlist.h>
#include <QtCore/qthread.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelInbox *QFunnelInboxRegistry::inboxFor(QFunnelCore *core, QFunnelReceiverGuard *guard,
                                             Qt::HANDLE threadId)
{
    // The receiver's inbox usually outlives its connections (retained by its guard): found
    // there, under the guard's lock alone.
    if (QFunnelInbox *inbox = guard->retainedInbox(core))
        return inbox;
    QMutexLocker locker(&m_lock);
    QFunnelInbox *&inbox = m_inboxes[guard];
    // An inbox whose last reference is being dropped right now is replaced; its forget() then
    // leaves the new one in place.
    if (!inbox || !inbox->tryRef()) {
        inbox = new QFunnelInbox(core, guard, threadId);
        // Kept while the receiver lives, until the funnel stops: stop() sets its flag before
        // it takes this lock to forget the retained ones (releaseRetained()), so that either
        // it finds this one or this reads the flag.
        if (!core->isStopped())
            guard->retainInbox(inbox);
    }
    return inbox;
}

void QFunnelInboxRegistry::releaseRetained()
{
    QList<QFunnelInbox *> released;
    {
        QMutexLocker locker(&m_lock);
        for (QFunnelInbox *inbox : std::as_const(m_inboxes)) {
            // An inbox being destroyed (not retained, then) stays valid until its forget(),
            // which waits for this lock.
            if (inbox->guard()->forgetRetainedInbox(inbox))
                released.append(inbox);
        }
    }
    // Not under the lock: the last reference's forget() takes it.
    for (QFunnelInbox *inbox : std::as_const(released))
        inbox->deref();
}

void QFunnelInboxRegistry::forget(QFunnelInbox *inbox)
{
    QMutexLocker locker(&m_lock);
    auto it = m_inboxes.constFind(inbox->guard());
    if (it != m_inboxes.cend() && it.value() == inbox)
        m_inboxes.erase(it);
    m_retired.delivered += inbox->deliveredCalls();
    m_retired.discarded += inbox->discardedCalls();
    m_retired.coalesced += inbox->coalescedCalls();
}

QList<QFunnelInbox *> QFunnelInboxRegistry::referencedInboxes()
{
    QList<QFunnelInbox *> inboxes;
    QMutexLocker locker(&m_lock);
    inboxes.reserve(m_inboxes.size());
    for (QFunnelInbox *inbox : std::as_const(m_inboxes)) {
        if (inbox->tryRef())
            inboxes.append(inbox);
    }
    return inboxes;
}

void QFunnelInboxRegistry::dropAllPending()
{
    // Dropping runs argument and functor destructors (user code, which may connect): not
    // under the lock. The references keep the copied inboxes alive meanwhile.
    const QList<QFunnelInbox *> inboxes = referencedInboxes();
    for (QFunnelInbox *inbox : inboxes) {
        inbox->dropPendingOnStop();
        inbox->deref();
    }
}

namespace {
// Whether the calling thread drops what goes to no receiver's thread: the application's.
bool isApplicationThread()
{
    const QCoreApplication *app = QCoreApplication::instance();
    return app && app->thread() == QThread::currentThread();
}
} // namespace

void QFunnelInboxRegistry::deferDrop(QFunnelCore *core, QFunnelInbox *inbox)
{
    inbox->ref();
    // The receiver's last thread, as Qt destroys a dead receiver's queued calls in the thread
    // that destroyed it; the application's main thread where that is unknown or gone.
    std::shared_ptr<QFunnelLastThread> target = inbox->guard()->lastThread();
    bool first = true;
    {
        QMutexLocker locker(&m_lock);
        for (const Deferred &d : std::as_const(m_deferred))
            first = first && d.thread != target;
        m_deferred.append(Deferred { inbox, target, m_clock.elapsed() });
        m_hasDeferred.store(true, std::memory_order_relaxed); // [P16 set] a hint
    }
    if (!first)
        return; // a task for that thread is on its way
    const auto dropHere = [](QFunnelCore *c) { c->inboxes().dropDeferred(); };
    if (target && target->run(core, dropHere))
        return;
    if (target) {
        // Its thread is exiting: the application's thread takes the calls.
        QMutexLocker locker(&m_lock);
        for (Deferred &d : m_deferred) {
            if (d.thread == target)
                d.thread = nullptr;
        }
    }
    // With no application left (shutdown), no thread runs user code any more: the relay does.
    if (!runInApplicationThread(core, dropHere))
        dropAllDeferred();
}

void QFunnelInboxRegistry::dropDeferredHere()
{
    const bool application = isApplicationThread();
    dropDeferredNow([application](const Deferred &d) {
        return d.thread ? d.thread->isCurrent() : application;
    });
}

template<typename Which>
void QFunnelInboxRegistry::dropDeferredNow(Which which)
{
    QList<QFunnelInbox *> inboxes;
    {
        QMutexLocker locker(&m_lock);
        m_deferred.removeIf([&](const Deferred &d) {
            if (!which(d))
                return false;
            inboxes.append(d.inbox);
            return true;
        });
        m_hasDeferred.store(!m_deferred.isEmpty(), std::memory_order_relaxed); // [P16 set]
    }
    // Not under the lock: dropping runs user code, and the last reference's forget() takes it.
    for (QFunnelInbox *inbox : std::as_const(inboxes)) {
        inbox->dropWhileUndeliverable();
        inbox->deref();
    }
}

void QFunnelInboxRegistry::dropAllDeferred()
{
    dropDeferredNow([](const Deferred &) { return true; });
}

void QFunnelInboxRegistry::postBarriers()
{
    // Not under the lock: posting may drop a dead receiver's calls (user code).
    const QList<QFunnelInbox *> inboxes = referencedInboxes();
    for (QFunnelInbox *inbox : inboxes) {
        inbox->postBarrier();
        inbox->deref();
    }
}

qsizetype QFunnelInboxRegistry::releaseStalled()
{
    dropDeferred();
    // A dead receiver's calls whose thread has not run its events for StalledMs hold capacity
    // that producers wait for: dropped here, as the last resort.
    const qint64 stalledSinceMs = m_clock.elapsed() - QFunnelInbox::StalledMs;
    if (m_hasDeferred.load(std::memory_order_relaxed)) // [P16 read] a hint
        dropDeferredNow(
                [stalledSinceMs](const Deferred &d) { return d.sinceMs <= stalledSinceMs; });
    // Not under the lock either: a check may settle a wake-up, and releasing the last reference
    // on an inbox takes the lock (forget()).
    const QList<QFunnelInbox *> inboxes = referencedInboxes();
    const qint64 nowMs = m_clock.elapsed();
    qsizetype released = 0;
    for (QFunnelInbox *inbox : inboxes) {
        released += inbox->releaseIfStalled(nowMs);
        inbox->deref();
    }
    return released;
}

QFunnelInboxRegistry::Totals QFunnelInboxRegistry::totals()
{
    QMutexLocker locker(&m_lock);
    Totals t = m_retired;
    for (const QFunnelInbox *inbox : std::as_const(m_inboxes)) {
        t.delivered += inbox->deliveredCalls();
        t.discarded += inbox->discardedCalls();
        t.coalesced += inbox->coalescedCalls();
    }
    return t;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
