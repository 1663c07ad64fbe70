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
#include <QtCore/qpointer.h>
#include <QtCore/private/qobject_p.h>

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Tells the delivery stage whether a receiver still exists, and which thread it lives in,
// without racing its destruction. One guard per receiver object, shared by all its funnel
// connections. ~QObject emits destroyed() before freeing the object; the guard's hook clears the
// receiver there and then waits for the readers that may still be looking at it (a Dekker-style
// handshake: no lock on the per-call path).
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
    State state() noexcept
    {
        // seq_cst on both sides: either this load sees the hook's null, or the hook sees this
        // reader and waits until it has read the thread data.
        m_readers.fetch_add(1, std::memory_order_seq_cst);
        QObject *r = m_receiver.load(std::memory_order_seq_cst);
        State s { nullptr, nullptr };
        if (Q_LIKELY(r) && Q_LIKELY(!m_weak.isNull()))
            s = { r, QObjectPrivate::get(r)->threadData.loadAcquire() };
        m_readers.fetch_sub(1, std::memory_order_release);
        return s;
    }

    // Whether receiver is this guard's receiver and alive, reading no receiver memory; any
    // thread. Exact unless the receiver is being destroyed concurrently (then either answer may
    // come back).
    bool isAlive(const QObject *receiver) const noexcept
    {
        return m_receiver.load(std::memory_order_acquire) == receiver && !m_weak.isNull();
    }

private:
    explicit QFunnelReceiverGuard(QObject *receiver);
    void receiverDestroyed();

    std::atomic<QObject *> m_receiver;  // nulled by the destroyed() hook
    std::atomic<int> m_readers { 0 };   // state() calls looking at the receiver right now
    QPointer<QObject> m_weak;     // second line: holds even if the hook was disconnected
    QAtomicInt m_ref { 1 };       // the registry's reference
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELRECEIVERGUARD_P_H
