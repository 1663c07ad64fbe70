// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELRECEIVERGUARD_P_H
#define QFUNNELRECEIVERGUARD_P_H

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
#include <QtCore/qatomic.h>
#include <QtCore/qmutex.h>
#include <QtCore/qpointer.h>

#include <atomic>

QT_BEGIN_NAMESPACE

class QThreadData;

namespace QtFastConnectPrivate {

// Tells the delivery stage whether a receiver still exists, and which thread it lives in,
// without racing its destruction. One guard per receiver object, shared by all its funnel
// connections. ~QObject emits destroyed() before freeing the object; the guard's hook takes the
// guard's lock there, so a reader holding the lock can safely look at the receiver.
class QFunnelReceiverGuard
{
public:
    // Returns the guard of receiver with a reference for the caller; any thread.
    static QFunnelReceiverGuard *acquire(QObject *receiver);

    void ref() noexcept { m_ref.ref(); }
    void deref() noexcept;

    // The receiver and its thread data if it is alive, else {nullptr, nullptr}. The answer
    // stays true while the caller runs in that receiver's thread.
    struct State { QObject *receiver; QThreadData *threadData; };
    State state();

    // Whether receiver is this guard's receiver and alive, without the lock; any thread. Exact
    // unless the receiver is being destroyed concurrently (then either answer may come back).
    bool isAlive(const QObject *receiver) const noexcept
    {
        return m_receiver.load(std::memory_order_acquire) == receiver && !m_weak.isNull();
    }

private:
    explicit QFunnelReceiverGuard(QObject *receiver);
    void receiverDestroyed();

    QBasicMutex m_lock;
    std::atomic<QObject *> m_receiver;  // written under m_lock; nulled by the destroyed() hook
    QPointer<QObject> m_weak;     // second line: holds even if the hook was disconnected
    QAtomicInt m_ref { 1 };       // the registry's reference
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELRECEIVERGUARD_P_H
