// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelinboxregistry_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelcore_p.h"

#include <QtCore/qlist.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelInbox *QFunnelInboxRegistry::inboxFor(QFunnelCore *core, QFunnelReceiverGuard *guard,
                                             Qt::HANDLE threadId)
{
    QMutexLocker locker(&m_lock);
    QFunnelInbox *&inbox = m_inboxes[guard];
    // An inbox whose last reference is being dropped right now is replaced; its forget() then
    // leaves the new one in place.
    if (!inbox || !inbox->tryRef())
        inbox = new QFunnelInbox(core, guard, threadId);
    return inbox;
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

void QFunnelInboxRegistry::deferDrop(QFunnelCore *core, QFunnelInbox *inbox)
{
    inbox->ref();
    bool first;
    {
        QMutexLocker locker(&m_lock);
        first = m_deferred.isEmpty();
        m_deferred.append(inbox);
        m_hasDeferred.store(true, std::memory_order_relaxed); // [P16] a hint
    }
    // The application's main thread drops them soon, unless a producer gets there first. With
    // no application left (shutdown), no thread runs user code any more: the relay does it.
    if (first
        && !runInApplicationThread(core, [](QFunnelCore *c) { c->inboxes().dropDeferred(); })) {
        dropDeferredNow();
    }
}

void QFunnelInboxRegistry::dropDeferredNow()
{
    QList<QFunnelInbox *> inboxes;
    {
        QMutexLocker locker(&m_lock);
        inboxes.swap(m_deferred);
        m_hasDeferred.store(false, std::memory_order_relaxed);
    }
    // Not under the lock: dropping runs user code, and the last reference's forget() takes it.
    for (QFunnelInbox *inbox : std::as_const(inboxes)) {
        inbox->dropWhileUndeliverable();
        inbox->deref();
    }
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
