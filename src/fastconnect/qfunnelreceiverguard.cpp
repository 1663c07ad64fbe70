// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelreceiverguard_p.h"

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
{
}

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
        QObject::connect(receiver, &QObject::destroyed, receiver,
                         [guard] { guard->receiverDestroyed(); }, Qt::DirectConnection);
    }
    slot->ref();
    return slot;
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
    // A reader that got the receiver before the store is reading its thread data: the object
    // must outlive that. A few instructions, unless the reader was preempted in between.
    while (m_readers.load(std::memory_order_seq_cst))
        std::this_thread::yield();
    deref(); // the registry's reference
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
