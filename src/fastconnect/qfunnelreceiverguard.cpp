// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelreceiverguard_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelinbox_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qhash.h>
#include <QtCore/qmutex.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qthread_p.h>

#include <utility>

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

// The guard's hook on its receiver's destroyed(): Qt's slot object of a direct connection, so
// that it runs in the destroying thread before ~QObject tears down the receiver's connections.
// Its own slot object rather than a lambda's, so that it knows when Qt destroys it unfired: a
// disconnect of all the receiver's signals (receiver->disconnect(), a common idiom) cut it, and
// the guard installs a new one (QFunnelReceiverGuard::hookLost()).
class QFunnelDestroyedHook : public QtPrivate::QSlotObjectBase
{
public:
    explicit QFunnelDestroyedHook(QFunnelReceiverGuard *guard)
        : QSlotObjectBase(&impl), m_guard(guard)
    {
        m_guard->ref();
    }

private:
    static void impl(int which, QSlotObjectBase *self, QObject *, void **, bool *ret)
    {
        auto *that = static_cast<QFunnelDestroyedHook *>(self);
        switch (which) {
        case Call:
            that->m_guard->receiverDestroyed();
            break;
        case Destroy:
            that->m_guard->hookLost(); // nothing to do if the hook ran
            that->m_guard->deref();
            delete that;
            break;
        case Compare:
            *ret = false; // no disconnect() by slot can name it
            break;
        }
    }

    QFunnelReceiverGuard *const m_guard; // holds a reference
};

QFunnelThreadState QFunnelThreadState::of(QObject *object)
{
    QFunnelThreadState state;
    // The object's thread data, read under its posted-event lock: the object's own thread may
    // move it to another thread meanwhile (and that could free the old data). The lock
    // QObject::moveToThread() holds while it swaps the data, taken the way
    // QCoreApplication::postEvent() takes it: lock the data read, retry if it changed
    // meanwhile. (Not Qt's own locker: it locks inside Qt, where ThreadSanitizer cannot see it.)
    // Acquire loads, as Qt's own readers make them: the thread and its dispatcher are seen
    // constructed (see P29).
    for (;;) {
        QThreadData *td = QObjectPrivate::get(object)->threadData.loadAcquire(); // [P29 read]
        if (!td)
            return state; // being destroyed
        QMutexLocker locker(&td->postEventList.mutex);
        if (td != QObjectPrivate::get(object)->threadData.loadAcquire()) // [P29 read]
            continue;
        state.thread = td->thread.loadAcquire(); // [P29 read]
        state.running = td->eventDispatcher.loadAcquire() != nullptr; // [P29 read]
        state.threadId = td->threadId.loadRelaxed();
        return state;
    }
}

QFunnelReceiverGuard::QFunnelReceiverGuard(QObject *receiver)
    : m_receiver(receiver), m_weak(receiver)
{}

void QFunnelReceiverGuard::deref() noexcept
{
    // [P23 guard] QAtomicInt's ordered decrement: the last owner sees the others' writes.
    if (!m_ref.deref())
        delete this;
}

QFunnelReceiverGuard *QFunnelReceiverGuard::acquire(QObject *receiver)
{
    GuardRegistry &reg = registry();
    QMutexLocker locker(&reg.lock);
    // The common case, a receiver connected before whose guard is alive: a look-up alone,
    // which does not detach or insert.
    if (QFunnelReceiverGuard *known = std::as_const(reg.guards).value(receiver);
        known && !known->m_weak.isNull()) {
        known->ref();
        return known;
    }
    QFunnelReceiverGuard *&slot = reg.guards[receiver];
    QFunnelReceiverGuard *lost = nullptr;
    if (slot && slot->m_weak.isNull()) {
        // A dead object's guard whose hook never ran (it was lost while another thread emitted
        // one of the receiver's signals, see hookLost()): the address now belongs to a new
        // object. The old guard keeps answering "dead"; the calls that waited for its hook
        // are dropped where a destroying thread is unknown (below, with the registry's
        // reference).
        lost = slot;
        slot = nullptr;
    }
    if (!slot) {
        slot = new QFunnelReceiverGuard(receiver);
        slot->installHook(receiver);
    }
    slot->ref();
    QFunnelReceiverGuard *const guard = slot;
    locker.unlock();
    if (lost) {
        lost->dropCallsAwaitingHook(); // user code (argument destructors): not under the lock
        lost->releaseRetainedInbox();
        lost->deref();
    }
    return guard;
}

bool QFunnelReceiverGuard::dropWhenDestroyed(QFunnelInbox *inbox)
{
    std::lock_guard<std::mutex> locker(m_lock);
    // The hook stores the null before it takes m_lock to take the list: under the lock,
    // either this sees the null (lastThread() is known), or the hook sees the inbox listed.
    // Relaxed: the lock orders it.
    if (!m_receiver.load(std::memory_order_relaxed))
        return false;
    inbox->ref();
    m_dropsAwaitingHook.append(inbox);
    return true;
}

void QFunnelReceiverGuard::dropCallsAwaitingHook()
{
    QList<QFunnelInbox *> inboxes;
    {
        std::lock_guard<std::mutex> locker(m_lock);
        inboxes.swap(m_dropsAwaitingHook);
    }
    for (QFunnelInbox *inbox : std::as_const(inboxes)) {
        inbox->dropWhereDestroyed();
        inbox->deref();
    }
}

void QFunnelReceiverGuard::retainInbox(QFunnelInbox *inbox)
{
    std::lock_guard<std::mutex> locker(m_lock);
    // Not while the receiver is being destroyed: its inboxes go with their routes.
    if (m_capturesTaken || m_retainedInbox)
        return;
    inbox->ref();
    m_retainedInbox = inbox;
}

QFunnelInbox *QFunnelReceiverGuard::retainedInbox(const QFunnelCore *core)
{
    std::lock_guard<std::mutex> locker(m_lock);
    QFunnelInbox *const inbox = m_retainedInbox;
    if (!inbox || inbox->core() != core)
        return nullptr;
    inbox->ref();
    return inbox;
}

bool QFunnelReceiverGuard::forgetRetainedInbox(QFunnelInbox *inbox)
{
    std::lock_guard<std::mutex> locker(m_lock);
    if (m_retainedInbox != inbox)
        return false;
    m_retainedInbox = nullptr;
    return true;
}

void QFunnelReceiverGuard::releaseRetainedInbox()
{
    QFunnelInbox *inbox;
    {
        std::lock_guard<std::mutex> locker(m_lock);
        m_capturesTaken = true; // and retains no more
        inbox = std::exchange(m_retainedInbox, nullptr);
    }
    // Not under the lock: the last reference's QFunnelInboxRegistry::forget() takes the
    // registry's.
    if (inbox)
        inbox->deref();
}

void QFunnelReceiverGuard::installHook(QObject *receiver)
{
    // Direct: destroyed() is emitted in whichever thread deletes the receiver, and the hook
    // must run before ~QObject disconnects the captures and frees the memory.
    static const int destroyedIndex =
            QObject::staticMetaObject.indexOfSignal("destroyed(QObject*)");
    QObjectPrivate::connect(receiver, destroyedIndex, receiver, new QFunnelDestroyedHook(this),
                            Qt::DirectConnection);
}

void QFunnelReceiverGuard::addCapture(const QObject *receiver,
                                      const QMetaObject::Connection &capture)
{
    QFunnelReceiverGuard *guard;
    {
        GuardRegistry &reg = registry();
        QMutexLocker locker(&reg.lock);
        guard = reg.guards.value(receiver);
        if (!guard)
            return; // destroyed meanwhile: ~QObject cut the capture already
        guard->ref();
    }
    guard->addCapture(capture);
    guard->deref();
}

void QFunnelReceiverGuard::addCapture(const QMetaObject::Connection &capture)
{
    std::lock_guard<std::mutex> locker(m_lock);
    if (m_capturesTaken)
        return; // the receiver is being destroyed: ~QObject cuts the capture
    // Captures cut since (disconnected, single-shot) go when the list has doubled since the
    // last sweep, so that it stays within twice the receiver's live connections at an
    // amortized constant cost per connect (a sweep per connect made a receiver's n connects
    // quadratic).
    if (m_captures.size() >= m_capturesSweepAt) {
        m_captures.removeIf([](const QMetaObject::Connection &c) { return !c; });
        m_capturesSweepAt = qMax<qsizetype>(8, 2 * m_captures.size());
    }
    m_captures.append(capture);
}

bool QFunnelReceiverGuard::post(QEvent *event)
{
    // [P11 enter] seq_cst on both sides: either this load sees the hook's null, or the hook sees
    // this reader and waits until the event is posted. ~QObject removes (and deletes) the posted
    // events after destroyed(), so a posted event never reaches a freed receiver.
    m_readers.fetch_add(1, std::memory_order_seq_cst);
    QObject *r = m_receiver.load(std::memory_order_seq_cst); // [P11 read]
    const bool alive = r && !m_weak.isNull();
    // Like a queued call, also to a receiver whose thread has not started, has finished (it
    // may be started again) or that has no thread: the event waits in its posted-event list,
    // and moves with it when it is moved to a thread.
    if (Q_LIKELY(alive))
        QCoreApplication::postEvent(r, event);
    endRead();
    return alive;
}

QFunnelThreadState QFunnelReceiverGuard::receiverThread()
{
    // [P11 enter] The same handshake as post(): the hook waits for this reader before the
    // receiver goes.
    m_readers.fetch_add(1, std::memory_order_seq_cst);
    QObject *r = m_receiver.load(std::memory_order_seq_cst); // [P11 read]
    QFunnelThreadState state;
    if (r && !m_weak.isNull())
        state = QFunnelThreadState::of(r);
    endRead();
    return state;
}

void QFunnelReceiverGuard::endRead() noexcept
{
    // [P12 leave] [P12 look] seq_cst, with receiverDestroyed()'s store of m_hookWaiting and load
    // of m_readers: either the hook sees this reader gone, or this load sees the hook waiting
    // and wakes it.
    if (m_readers.fetch_sub(1, std::memory_order_seq_cst) == 1
        && Q_UNLIKELY(m_hookWaiting.load(std::memory_order_seq_cst))) {
        std::lock_guard<std::mutex> locker(m_lock); // orders the notify after the hook's wait
        m_readersDone.notify_all();
    }
}

void QFunnelReceiverGuard::receiverDestroyed()
{
    QObject *const receiver = m_receiver.load(std::memory_order_relaxed);
    if (!receiver)
        return; // a second hook (one re-installed while the lost one waited to be freed)
    {
        GuardRegistry &reg = registry();
        QMutexLocker locker(&reg.lock);
        auto it = reg.guards.constFind(receiver);
        if (it != reg.guards.cend() && it.value() == this)
            reg.guards.erase(it);
    }
    // The captures go through Qt's disconnect, which leaves them to an emission running in
    // another thread until it returns; ~QObject's own teardown would destroy them under it.
    // Calls they make from now on are dropped: the receiver reads as dead below.
    QList<QMetaObject::Connection> captures;
    {
        std::lock_guard<std::mutex> locker(m_lock);
        captures.swap(m_captures);
        m_capturesTaken = true;
    }
    for (const QMetaObject::Connection &c : std::as_const(captures))
        QObject::disconnect(c);

    // Where the calls that reach the receiver from now on are dropped (deferDrop()).
    m_lastThread = QFunnelLastThread::current();
    // [P11 clear] seq_cst: with the readers' increment, then load of m_receiver (post()).
    m_receiver.store(nullptr, std::memory_order_seq_cst);
    // [P12 wait] A reader that got the receiver before the store is posting to it: the object
    // must outlive that. Blocked, not spinning: the reader may be a preempted low-priority
    // thread.
    m_hookWaiting.store(true, std::memory_order_seq_cst);
    if (m_readers.load(std::memory_order_seq_cst)) { // [P11 drain] [P12 drain]
        std::unique_lock<std::mutex> locker(m_lock);
        m_readersDone.wait(locker, // [P11 drain] [P12 drain]
                           [this] { return m_readers.load(std::memory_order_seq_cst) == 0; });
    }
    // Calls that found the receiver dying before the store above: dropped here, the
    // destroying thread, as Qt's queued calls to it are (~QObject deletes their events).
    dropCallsAwaitingHook();
    releaseRetainedInbox();
    deref(); // the registry's reference
}

void QFunnelReceiverGuard::hookLost()
{
    // Relaxed: the hook's own thread wrote it, or the receiver is alive (see below).
    QObject *const receiver = m_receiver.load(std::memory_order_relaxed);
    if (!receiver)
        return; // the hook ran
    // Qt destroys a cut connection's slot object where the disconnect happened, or at the end
    // of an emission of one of the receiver's signals that was running then: either way the
    // receiver is alive (an object may not be deleted while it emits), unless this is its own
    // ~QObject tearing down a lost hook that waited for that emission to end.
    if (QObjectPrivate::get(receiver)->wasDeleted) {
        // Late (the captures already went through ~QObject's teardown), but before the memory
        // is freed: the handshake still holds for posts.
        receiverDestroyed();
        return;
    }
    installHook(receiver);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
