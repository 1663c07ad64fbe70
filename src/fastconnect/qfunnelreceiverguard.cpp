// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelreceiverguard_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qhash.h>
#include <QtCore/qmutex.h>
#include <QtCore/private/qobject_p.h>

#include <thread>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {
// Receiver → guard. Touched only at connect time and when a receiver is destroyed.
struct GuardRegistry
{
    QBasicMutex lock;
    QHash<const QObject *, QFunnelReceiverGuard *> guards;
};
GuardRegistry &registry()
{
    // Never destroyed: receivers may die in other threads while static destructors run.
    static GuardRegistry *r = new GuardRegistry;
    return *r;
}
} // namespace

QFunnelReceiverGuard::QFunnelReceiverGuard(QObject *receiver)
    : m_receiver(receiver), m_weak(receiver)
{}

void QFunnelReceiverGuard::deref() noexcept
{
    if (!m_ref.deref())
        delete this;
}

QFunnelReceiverGuard *QFunnelReceiverGuard::acquire(QObject *receiver)
{
    GuardRegistry &reg = registry();
    QMutexLocker locker(&reg.lock);
    QFunnelReceiverGuard *&slot = reg.guards[receiver];
    if (slot && slot->m_weak.isNull()) {
        // A dead object's guard whose hook never ran (someone disconnected destroyed()): the
        // address now belongs to a new object. The old guard keeps answering "dead".
        slot->deref();
        slot = nullptr;
    }
    if (!slot) {
        auto *guard = new QFunnelReceiverGuard(receiver);
        slot = guard;
        // Direct: destroyed() is emitted in whichever thread deletes the receiver, and the hook
        // must run before the memory is freed.
        QObject::connect(
                receiver, &QObject::destroyed, receiver, [guard] { guard->receiverDestroyed(); },
                Qt::DirectConnection);
    }
    slot->ref();
    return slot;
}

bool QFunnelReceiverGuard::post(QEvent *event)
{
    // seq_cst on both sides: either this load sees the hook's null, or the hook sees this
    // reader and waits until the event is posted. ~QObject removes (and deletes) the posted
    // events after destroyed(), so a posted event never reaches a freed receiver.
    m_readers.fetch_add(1, std::memory_order_seq_cst);
    QObject *r = m_receiver.load(std::memory_order_seq_cst);
    const bool alive = r && !m_weak.isNull();
    // Like a queued call, also to a receiver whose thread has not started, has finished (it
    // may be started again) or that has no thread: the event waits in its posted-event list,
    // and moves with it when it is moved to a thread.
    if (Q_LIKELY(alive))
        QCoreApplication::postEvent(r, event);
    m_readers.fetch_sub(1, std::memory_order_release);
    return alive;
}

void QFunnelReceiverGuard::receiverDestroyed()
{
    {
        GuardRegistry &reg = registry();
        QMutexLocker locker(&reg.lock);
        auto it = reg.guards.constFind(m_receiver.load(std::memory_order_relaxed));
        if (it != reg.guards.cend() && it.value() == this)
            reg.guards.erase(it);
    }
    m_receiver.store(nullptr, std::memory_order_seq_cst);
    // A reader that got the receiver before the store is posting to it: the object must
    // outlive that. A few hundred instructions, unless the reader was preempted in between.
    while (m_readers.load(std::memory_order_seq_cst))
        std::this_thread::yield();
    deref(); // the registry's reference
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
