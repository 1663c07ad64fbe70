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
#include <QtCore/qlist.h>
#include <QtCore/qobjectdefs.h>
#include <QtCore/qpointer.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>

QT_BEGIN_NAMESPACE

class QEvent;
class QThread;

namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelInbox;
class QFunnelLastThread;

// The thread an object lives in, read safely while that thread may move it elsewhere: any
// thread, as long as the object is not being destroyed concurrently. running: the thread has
// an event dispatcher (it has started and not finished).
struct QFunnelThreadState
{
    QThread *thread = nullptr;
    Qt::HANDLE threadId = nullptr;
    bool running = false;
    static QFunnelThreadState of(QObject *object);
};

// Whether a receiver still exists, for threads that are not the receiver's, without racing its
// destruction. One guard per receiver object, shared by all its funnel connections and inboxes.
// ~QObject emits destroyed() before it tears down its connections and frees the object; the
// guard's hook runs there, in the destroying thread, and
//  - cuts the receiver's capture connections through QObject::disconnect(), which leaves an
//    emission running in another thread a valid slot object (~QObject's own teardown of them
//    does not: Qt's direct connections race with it);
//  - clears the receiver and waits, blocked, for the threads that are posting to it right now
//    (a Dekker-style handshake: no lock on the per-wake-up path).
// The hook is re-installed when a disconnect of all the receiver's signals cuts it
// (QFunnelDestroyedHook, in the .cpp).
class QFunnelReceiverGuard
{
public:
    // Returns the guard of receiver with a reference for the caller; any thread.
    static QFunnelReceiverGuard *acquire(QObject *receiver);
    // The capture of a funnel connection to receiver, installed on its signal: cut by the hook
    // before ~QObject reaches it. Any thread; receiver must have a guard (acquire()).
    static void addCapture(const QObject *receiver, const QMetaObject::Connection &capture);
    // The same, for the guard's receiver; the caller holds a reference. Once the hook has taken
    // the captures, ~QObject cuts a late one itself.
    void addCapture(const QMetaObject::Connection &capture);

    void ref() noexcept { m_ref.ref(); } // [P23 guard] QAtomicInt's, ordered
    void deref() noexcept;

    // Posts event to the receiver with QCoreApplication::postEvent() and returns true, unless
    // the receiver was destroyed: then the caller still owns event. Any thread.
    bool post(QEvent *event);

    // Whether the receiver is alive, read in the receiver's own thread (the only thread that
    // may destroy it while it handles events there), or as a hint elsewhere.
    bool isAliveHere() const noexcept
    {
        return m_receiver.load(std::memory_order_relaxed) && !m_weak.isNull();
    }

    // Whether the receiver is alive; any thread. Once its destroyed() hook has run (or it is
    // gone), every thread reads false from here on.
    bool isAlive() const noexcept
    {
        // [P11 read] seq_cst: with receiverDestroyed()'s store.
        return m_receiver.load(std::memory_order_seq_cst) && !m_weak.isNull();
    }

    // The receiver's thread, read with the receiver held alive as post() holds it; any thread.
    // A destroyed receiver's has no thread.
    QFunnelThreadState receiverThread();

    // Called after post() found the receiver dead: if its hook has not run yet (~QObject is
    // between clearing its weak references and emitting destroyed()), keeps a reference on
    // inbox and returns true; the hook then calls inbox->dropWhereDestroyed() in the
    // destroying thread. False once the hook has run (lastThread() is known). Any thread.
    bool dropWhenDestroyed(QFunnelInbox *inbox);

    // Keeps inbox for the receiver's next connects while the receiver lives, so that connecting
    // and cutting in turn does not create and destroy it each time: takes a reference, unless
    // the hook has run or an inbox (of another funnel) is kept already. Under the funnel's
    // QFunnelInboxRegistry lock.
    void retainInbox(QFunnelInbox *inbox);
    // The inbox retained for core, with a reference for the caller, or nullptr; any thread.
    QFunnelInbox *retainedInbox(const QFunnelCore *core);
    // Forgets inbox if it is retained: true if it was, and the caller then owns the reference
    // it held. Under the funnel's QFunnelInboxRegistry lock (the funnel stopped).
    bool forgetRetainedInbox(QFunnelInbox *inbox);

    // The thread the receiver was destroyed in, once isAlive() or post() read it as dead; null
    // if that thread has no event dispatcher, or the receiver went without this guard's hook.
    std::shared_ptr<QFunnelLastThread> lastThread() const
    {
        // [P11 see] acquire: with the hook's store, which follows its write of m_lastThread. (A
        // receiver whose hook was lost reads as dead before the late hook runs: none then.)
        if (m_receiver.load(std::memory_order_acquire))
            return nullptr;
        return m_lastThread;
    }

    // Whether receiver is this guard's receiver and alive, reading no receiver memory; any
    // thread. Exact unless the receiver is being destroyed concurrently (then either answer may
    // come back).
    bool isAlive(const QObject *receiver) const noexcept
    {
        // [P11 see] acquire: with receiverDestroyed()'s store.
        return m_receiver.load(std::memory_order_acquire) == receiver && !m_weak.isNull();
    }

private:
    friend class QFunnelDestroyedHook;
    explicit QFunnelReceiverGuard(QObject *receiver);
    void installHook(QObject *receiver);
    void hookLost();
    void receiverDestroyed();
    void endRead() noexcept;
    void dropCallsAwaitingHook();
    void releaseRetainedInbox();

    std::atomic<QObject *> m_receiver; // nulled by the destroyed() hook
    // Set by the hook before it nulls m_receiver, read after: P11 orders it.
    std::shared_ptr<QFunnelLastThread> m_lastThread;
    QPointer<QObject> m_weak; // second line: holds even if the hook is lost
    QAtomicInt m_ref { 1 }; // the registry's reference
    // The receiver's capture connections, cut by the hook; guarded by m_lock.
    QList<QMetaObject::Connection> m_captures;
    qsizetype m_capturesSweepAt = 8; // guarded by m_lock; see addCapture()
    bool m_capturesTaken = false; // by the hook; guarded by m_lock
    // Inboxes whose calls wait for the hook to learn the destroying thread; guarded by m_lock,
    // each holds a reference.
    QList<QFunnelInbox *> m_dropsAwaitingHook;
    // The inbox kept for the next connects (retainInbox()), with a reference; guarded by m_lock.
    // One: most receivers are connected through one funnel.
    QFunnelInbox *m_retainedInbox = nullptr;
    // The standard library's, not Qt's: sanitizers see its locking (Qt is not instrumented).
    std::mutex m_lock;
    std::condition_variable m_readersDone; // the hook waits on it for m_readers to drain
    // post() calls using the receiver right now, and whether the hook waits for them. On a
    // cache line of their own: the posting thread writes it twice per wake-up, and the
    // receiver's thread reads the fields above at every delivery pass.
    alignas(64) std::atomic<int> m_readers { 0 };
    std::atomic<bool> m_hookWaiting { false };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELRECEIVERGUARD_P_H
