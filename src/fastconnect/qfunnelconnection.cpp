// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Connection set-up: the one validation path of every connect and invoke, and the routes it
// creates.

#include "qfunnelconnection_p.h"
#include "qfunnel_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelprocessinghook_p.h"
#include "qfunnelqtcompat_p.h"
#include "qfunnelreceiverguard_p.h"

#include <QtCore/private/qmetaobject_p.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qobject_p_p.h>
#include <QtCore/private/qthread_p.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

void QFunnelRoute::attachSlot(void *slot, QFunnelSlotImpl impl) noexcept
{
    Q_ASSERT(!m_inBlock || slot == m_slot); // allocateRoute() placed it
    m_slot = slot;
    m_impl = impl;
    // A slot function built against an older qfastconnect_impl.h ignores Describe and leaves
    // the defaults: Run for every call.
    m_impl(QFunnelSlotOp::Describe, m_slot, nullptr, reinterpret_cast<QFunnelCall *>(&m_traits));
    m_delivery = m_traits.runInPlace ? Delivery::InPlace : Delivery::Run;
}

QFunnelRoute::~QFunnelRoute()
{
    if (m_impl) // not when released unused (allocateRoute())
        m_impl(QFunnelSlotOp::DestroySlot, m_slot, nullptr, nullptr);
    if (inbox)
        inbox->deref();
    if (guard)
        guard->deref();
    if (core)
        core->deref();
}

namespace {
// Counts thread finishes for QFunnelReceiverStamp: Qt's slot object of our own type, connected
// to QThread::finished, so that ThreadSanitizer sees that Qt destroys it (with the QThread, in
// any thread) after it was made.
class QFunnelFinishWatch : public QtPrivate::QSlotObjectBase
{
public:
    QFunnelFinishWatch() : QSlotObjectBase(&impl) { qfcAnnotateRelease(this); } // [P22 watch]

private:
    static void impl(int which, QSlotObjectBase *self, QObject *, void **, bool *ret)
    {
        switch (which) {
        case Call:
            // [P26 bump] relaxed: QThread::finished runs after Qt set isInFinish under the thread's
            // mutex and before it wakes QThread::wait(): those order it.
            qfcThreadsFinishing.fetch_add(1, std::memory_order_relaxed);
            break;
        case Destroy:
            qfcAnnotateAcquire(self); // [P22 unwatch]
            delete static_cast<QFunnelFinishWatch *>(self);
            break;
        case Compare:
            *ret = false; // no disconnect() by slot can name it
            break;
        }
    }
};
} // namespace

// Connected once per thread, in any thread; runs in the finishing thread.
static void watchThreadFinish(QThread *thread)
{
    static const int finishedIndex = QMetaMethod::fromSignal(&QThread::finished).methodIndex();
    QObjectPrivate::connect(thread, finishedIndex, thread, new QFunnelFinishWatch,
                            Qt::DirectConnection);
}

// Whether a route checked now may be reused unchecked: not while the thread is finishing (its
// QThread::finished may have run already, and no later bump would undo the stamp).
static bool reusableFor(QThread *thread)
{
    QThreadPrivate *d = static_cast<QThreadPrivate *>(QObjectPrivate::get(thread));
    QMutexLocker locker(&d->mutex);
    return !qfcThreadIsFinishing(d, 0);
}

QByteArray QFunnelWhere::toByteArray() const
{
    if (text)
        return QByteArray(text);
    return QByteArray("QtFastConnect::connect(") + classNameOf(sender)
            + "::" + signal->methodSignature() + ", " + classNameOf(receiver) + ")";
}

bool routeToReceiver(QFunnelCore *core, const QObject *receiver, QFunnelRoute *route,
                     const QFunnelWhere &where, QFunnelReceiverStamp *stamp)
{
    // [P26 read] relaxed, before the thread's state is read: see QFunnelReceiverStamp::holds().
    const quint32 finishing = qfcThreadsFinishing.load(std::memory_order_relaxed);
    if (core->isStopped()) {
        qWarning("%s: the funnel has stopped (its QFunnel was destroyed, or the application is "
                 "shutting down)",
                 where.toByteArray().constData());
        return false;
    }
    QObject *r = const_cast<QObject *>(receiver);
    const QFunnelThreadState state = QFunnelThreadState::of(r);
    QThread *const thread = state.thread;
    const bool running = state.running;
    const Qt::HANDLE threadId = state.threadId;
    if (!thread) {
        qWarning("%s: receiver %p has no thread affinity, so no thread could run its calls",
                 where.toByteArray().constData(), static_cast<const void *>(receiver));
        return false;
    }
    // A thread without an event dispatcher has not started yet, or has finished: only then
    // ask which (QThread::isFinished() takes a lock).
    if (!running && thread->isFinished()) {
        // Its thread ran and returned: no event loop will run the slot (unless the thread is
        // started again), so refuse instead of letting calls wait for ever.
        qWarning("%s: receiver %p lives in a thread that has finished, so no event loop could "
                 "run its calls",
                 where.toByteArray().constData(), static_cast<const void *>(receiver));
        return false;
    }
    if (core->admission().addReceiverThread(thread)) {
        watchThreadFinish(thread);
        QFunnelProcessingHook::watch(thread);
    }
    if (stamp) {
        stamp->threadsFinishing = finishing;
        stamp->reusable = reusableFor(thread);
    }
    core->ref();
    route->core = core;
    route->guard = QFunnelReceiverGuard::acquire(r);
    route->inbox = core->inboxes().inboxFor(core, route->guard, threadId);
    return true;
}

// The ConnectionMode bits accepted so far; everything else is refused, never ignored.
static constexpr int SupportedModeBits =
        (QtFastConnect::FunnelConnection | QtFastConnect::MoveArguments
         | QtFastConnect::CoalesceCalls | QtFastConnect::RateLimitCalls | Qt::UniqueConnection
         | Qt::SingleShotConnection)
                .toInt()
        | QFunnelBatchedBit;

static bool checkMode(const QObject *sender, const QObject *receiver, int mode, qint64 rateLimitMs)
{
    // Qt::AutoConnection (0) in the Qt::ConnectionType part means "the funnel decides".
    const int qtType = mode & 0xf;
    if (qtType != Qt::AutoConnection) {
        qWarning("QtFastConnect::connect(%s, %s): unsupported connection type 0x%x; a funnel "
                 "connection cannot also be Qt::DirectConnection, Qt::QueuedConnection or "
                 "Qt::BlockingQueuedConnection",
                 classNameOf(sender), classNameOf(receiver), unsigned(qtType));
        return false;
    }
    if (const int unsupported = mode & ~(SupportedModeBits | 0xf)) {
        qWarning("QtFastConnect::connect(%s, %s): unsupported connection flags 0x%x",
                 classNameOf(sender), classNameOf(receiver), unsigned(unsupported));
        return false;
    }
    if ((mode & QFunnelBatchedBit) && (mode & QtFastConnect::CoalesceCalls)) {
        qWarning("QtFastConnect::connectBatched(%s, %s): a batched connection delivers every "
                 "call; CoalesceCalls is not supported with it (RateLimitCalls is)",
                 classNameOf(sender), classNameOf(receiver));
        return false;
    }
    if ((mode & QtFastConnect::RateLimitCalls) && rateLimitMs < 1) {
        qWarning("QtFastConnect::connect(%s, %s): the rate-limit interval must be 1 ms to 1 hour",
                 classNameOf(sender), classNameOf(receiver));
        return false;
    }
    return true;
}

// The index of signal's connection list, as QObjectPrivate::connect() computes it from a method
// index: a signal's clones (its declarations without their default arguments,
// QMetaMethod::Cloned, which follow it) share the list of the signal itself.
static int connectionListIndex(const QMetaMethod &signal)
{
    if (Q_LIKELY(!(signal.attributes() & QMetaMethod::Cloned)))
        return QMetaObjectPrivate::signalIndex(signal);
    const QMetaObject *mo = signal.enclosingMetaObject();
    int index = signal.methodIndex();
    while (mo->method(index).attributes() & QMetaMethod::Cloned)
        --index;
    return QMetaObjectPrivate::signalIndex(mo->method(index));
}

// The checks of prepareConnection(); the route only takes what passed them.
static bool checkConnection(QFunnel *funnel, const QObject *sender, const QMetaMethod &signal,
                            const QObject *receiver, int mode, qint64 rateLimitMs)
{
    if (!sender || !receiver) {
        qWarning("QtFastConnect::connect(%s, %s): invalid nullptr parameter (%s)",
                 classNameOf(sender), classNameOf(receiver), !sender ? "sender" : "receiver");
        return false;
    }
    if (!funnel) {
        qWarning("QtFastConnect::connect(%s, %s): invalid nullptr funnel", classNameOf(sender),
                 classNameOf(receiver));
        return false;
    }
    if (!checkMode(sender, receiver, mode, rateLimitMs))
        return false;
    if (!signal.isValid() || signal.methodType() != QMetaMethod::Signal) {
        qWarning("QtFastConnect::connect(%s, %s): signal not found in %s", classNameOf(sender),
                 classNameOf(receiver), classNameOf(sender));
        return false;
    }
    if ((mode & QtFastConnect::MoveArguments)
        && QObjectPrivate::get(const_cast<QObject *>(sender))
                   ->isSignalConnected(connectionListIndex(signal), false)) {
        qWarning("QtFastConnect::connect(%s::%s, %s): MoveArguments needs the only connection of "
                 "the signal, and it already has one",
                 classNameOf(sender), signal.methodSignature().constData(), classNameOf(receiver));
        return false;
    }
    return true;
}

QFunnelRoute *allocateRoute(std::size_t slotBytes, std::size_t captureBytes, void **slot,
                            void **capture)
{
    // Each part starts where operator new's alignment allows.
    constexpr std::size_t Aligned = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    constexpr auto rounded = [](std::size_t n) { return (n + Aligned - 1) / Aligned * Aligned; };
    const std::size_t routeAt = rounded(slotBytes);
    const std::size_t captureAt = routeAt + rounded(sizeof(QFunnelRoute));
    char *memory = static_cast<char *>(::operator new(captureAt + captureBytes));
    *slot = memory;
    *capture = memory + captureAt;
    return ::new (memory + routeAt) QFunnelRoute(*slot);
}

QFunnelRoute *prepareConnection(QFunnel *funnel, const QObject *sender, const QMetaMethod &signal,
                                const QObject *receiver, void *slot, QFunnelSlotImpl impl, int mode,
                                qint64 rateLimitMs)
{
    auto *route = new QFunnelRoute;
    if (!prepareRoute(route, funnel, sender, signal, receiver, slot, impl, mode, rateLimitMs))
        return nullptr;
    return route;
}

bool prepareRoute(QFunnelRoute *route, QFunnel *funnel, const QObject *sender,
                  const QMetaMethod &signal, const QObject *receiver, void *slot,
                  QFunnelSlotImpl impl, int mode, qint64 rateLimitMs)
{
    route->attachSlot(slot, impl);
    if (!checkConnection(funnel, sender, signal, receiver, mode, rateLimitMs)) {
        route->deref(); // destroys the slot
        return false;
    }
    // The bit and the slot come together from connectBatched(); either alone is a bad call
    // (ConnectionMode::fromInt(), or a batch slot's template misused).
    if (bool(mode & QFunnelBatchedBit) != route->describesBatch()) {
        qWarning("QtFastConnect::connect(%s, %s): a batched connection needs "
                 "QtFastConnect::connectBatched() and a slot that takes a batch",
                 classNameOf(sender), classNameOf(receiver));
        route->deref();
        return false;
    }
    if (route->describesBatch())
        route->setDelivery(QFunnelRoute::Delivery::Batch);
    const QFunnelWhere where { nullptr, sender, &signal, receiver };
    if (!routeToReceiver(QFunnelPrivate::get(funnel)->core, receiver, route, where)) {
        route->deref();
        return false;
    }
    route->sender = const_cast<QObject *>(sender);
    route->signalIndex = connectionListIndex(signal);
    route->mode = mode | QtFastConnect::FunnelConnection;
    route->notesArenas = route->describesBatch() && route->isPooled();
    if (mode & QtFastConnect::RateLimitCalls)
        route->rateLimitNs = rateLimitMs * 1000 * 1000;
    return true;
}

void releaseRoute(QFunnelRoute *route) noexcept
{
    route->deref();
}

const char QFunnelSlotQuery::queryTag = 0;

void **compareTarget(void **a, char kind, bool *any) noexcept
{
    // Qt's compare hands the address of a member function pointer, whose first word is never
    // the query's tag (see QFunnelSlotQuery).
    if (*a != &QFunnelSlotQuery::queryTag)
        return kind == 'P' ? a : nullptr;
    const auto *query = reinterpret_cast<const QFunnelSlotQuery *>(a);
    if (!query->key) {
        *any = true;
        return nullptr;
    }
    return query->kind == kind ? static_cast<void **>(const_cast<void *>(query->key)) : nullptr;
}

QMetaObject::Connection connectCapture(const QObject *sender, const QMetaMethod &signal,
                                       const QObject *receiver, QtPrivate::QSlotObjectBase *capture,
                                       QFunnelRoute *route, int type, void **uniqueSlot)
{
    const Qt::ConnectionType connectionType = Qt::ConnectionType(Qt::DirectConnection | type);
    QMetaObject::Connection c;
    // Once connected, the capture and its route are Qt's: another thread may destroy them at
    // once (it deletes the sender, disconnects, or a single-shot emission ran). The guard is
    // held apart for the capture's registration below.
    QFunnelReceiverGuard *const guard = route->guard;
    guard->ref();
    qfcAnnotateRelease(capture); // [P22 publish] the capture and its route, for the emitters
    if (!(type & Qt::UniqueConnection)) {
        // As in the overload below, by the index of the signal's connection list, which the
        // route has already computed.
        c = QObjectPrivate::connectImpl(sender, route->signalIndex, receiver, nullptr, capture,
                                        connectionType, nullptr, signal.enclosingMetaObject());
    } else if (!uniqueSlot) {
        qWarning("QtFastConnect::connect(%s, %s): unique connections require a pointer to member "
                 "function of a QObject subclass, or a method given by name or by QMetaMethod",
                 classNameOf(sender), classNameOf(receiver));
        capture->destroyIfLastRef();
        guard->deref();
        return c;
    } else {
        // Qt's check and insertion, one step under the sender's and receiver's signal-slot
        // locks: a connection whose slot object compares equal to uniqueSlot (a funnel
        // capture's, or any other slot object's, as QObject::connect() checks) refuses it.
        c = QObjectPrivate::connectImpl(sender, route->signalIndex, receiver, uniqueSlot, capture,
                                        connectionType, nullptr, signal.enclosingMetaObject());
    }
    if (c)
        guard->addCapture(c);
    guard->deref();
    return c;
}

QMetaObject::Connection connectCapture(const QObject *sender, const QMetaMethod &signal,
                                       const QObject *receiver, QtPrivate::QSlotObjectBase *capture,
                                       int type)
{
    // Qt's own connect with our slot object (QObject::connect() would wrap a functor in one
    // whose Compare operation never matches): QObjectPrivate::connect() takes a method index.
    // The receiver stays Qt's receiver of the connection, so that QObject::disconnect() with
    // the receiver and sender() behave as for a queued connection; its guard cuts the capture
    // safely before ~QObject would (QFunnelReceiverGuard::receiverDestroyed()).
    qfcAnnotateRelease(capture); // [P22 publish] the capture and its route, for the emitters
    QMetaObject::Connection c =
            QObjectPrivate::connect(sender, signal.methodIndex(), receiver, capture,
                                    Qt::ConnectionType(Qt::DirectConnection | type));
    if (c)
        QFunnelReceiverGuard::addCapture(receiver, c);
    return c;
}

// Reads the sender's connection lists the way QMetaObject::activate() does while it calls us:
// atomic links, no lock. The vector is loaded with acquire (see P28): newer Qt publishes it with
// a release store, and a relaxed load would not order the reads of its contents. A disconnected
// entry not yet cleaned up has a null receiver and does not count.
bool mayMoveArguments(QFunnelRoute *route)
{
    using Connection = QObjectPrivate::Connection;
    const QObjectPrivate::ConnectionData *cd =
            QObjectPrivate::get(route->sender)->connections.loadRelaxed();
    // [P28 vector] acquire, as above.
    const QObjectPrivate::SignalVector *vector = cd ? cd->signalVector.loadAcquire() : nullptr;
    int live = 0;
    if (vector && route->signalIndex < vector->count()) {
        for (const Connection *c = vector->at(route->signalIndex).first.loadRelaxed(); c;
             c = c->nextConnectionList.loadRelaxed()) {
            if (c->receiver.loadRelaxed())
                ++live;
        }
    }
    const bool sole = live == 1 && !(vector && vector->at(-1).first.loadRelaxed());
    if (Q_UNLIKELY(!sole) && !route->warnedShared.exchange(true, std::memory_order_relaxed)) {
        const QMetaMethod signal =
                QMetaObjectPrivate::signal(route->sender->metaObject(), route->signalIndex);
        qWarning("QtFastConnect: %s::%s has other connections besides a MoveArguments funnel "
                 "connection; its arguments are copied instead of moved",
                 route->sender->metaObject()->className(), signal.methodSignature().constData());
    }
    qfcAnnotateRelease(&qfcConnectionListReaders); // [P22 read] done with Qt's lists
    return sole;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
