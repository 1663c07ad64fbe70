// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfastinvoke.h"
#include "qfastconnectglobal_p.h"
#include "qfunnel_p.h"
#include "qfunnelconnection_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelplatform_p.h"
#include "qfunnelreceiverguard_p.h"

#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qthread_p.h>

QT_BEGIN_NAMESPACE

/*!
    \fn template <typename Func, typename... Args> bool QtFastConnect::invoke(const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot, Args &&...args)

    Queues a call of \a slot on \a receiver with \a args through QFunnel::globalInstance(), and
    returns \c true; the slot runs later in the thread \a receiver lives in (it follows the
    receiver if that moves to another thread), like QMetaObject::invokeMethod() with
    Qt::QueuedConnection, which Qt 6.4 offers only for functors without arguments.

    Each argument is stored once, in the calling thread, as its decayed type: an rvalue is
    moved, an lvalue copied; the slot then receives the stored argument by move for a by-value
    parameter, by reference for a \c{const T&} one. \c{invoke(r, &R::slot, std::move(msg))}
    therefore makes no copy of \c msg at all, and move-only types such as \c std::unique_ptr
    work (an lvalue of a move-only type fails to compile with a message that asks for
    std::move()). Calls from one thread to one receiver run in the order they were made.

    If \a receiver is destroyed before the call runs, the slot is not called and the arguments
    are destroyed (in the receiver's last thread). sender() returns \nullptr in the slot.

    Any thread may call it. A null \a receiver, a receiver without thread affinity or whose
    thread has finished, or a stopped funnel print a warning and return \c false (no call is
    queued, no capacity is taken); arguments the slot cannot take fail to compile.
    When the funnel is full the call waits for room (backpressure), as an emission does.

    The first invoke from a thread to a receiver sets up a slot object that later invokes from
    that thread to that receiver reuse; each invoke then costs one pooled call node.
*/

/*!
    \fn template <typename Func, typename... Args> bool QtFastConnect::invoke(const QObject *context, Func &&functor, Args &&...args)
    \overload

    Queues a call of \a functor with \a args, run in the thread of \a context. The functor is
    stored with the call (moved if it is an rvalue) and destroyed after it ran, or when
    \a context was destroyed first.
*/

/*!
    \fn template <typename Func, typename... Args> bool QtFastConnect::invoke(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot, Args &&...args)
    \overload

    Delivers through \a funnel instead of the global funnel. A null \a funnel prints a warning
    and returns \c false.
*/

/*!
    \fn template <typename Func, typename... Args> bool QtFastConnect::invoke(QFunnel *funnel, const QObject *context, Func &&functor, Args &&...args)
    \overload

    Queues a call of \a functor with \a args, run in the thread of \a context, through
    \a funnel.
*/

namespace QtFastConnectPrivate {

namespace {

// The slot behind invokes: the callable travels in each call, so there is no slot state.
void invokeSlotImpl(QFunnelSlotOp op, void *, QObject *receiver, QFunnelCall *c)
{
    auto *call = static_cast<QFunnelInvokeCall *>(c);
    switch (op) {
    case QFunnelSlotOp::Run:
        call->receiverClass = receiver->metaObject();
        call->fn(receiver, call);
        break;
    case QFunnelSlotOp::DestroyCall:
        call->fn(nullptr, call);
        break;
    case QFunnelSlotOp::DestroySlot:
    case QFunnelSlotOp::Describe: // the route is marked Delivery::Invoke instead
        break;
    }
}

class InvokeSlotCache;
// This thread's cache once it was set up; null again after thread exit destroyed it.
thread_local InvokeSlotCache *tlInvokeSlots = nullptr;
// Set when thread exit destroyed the cache: an invoke from a later thread_local destructor must
// not set it up again (its storage is gone). Trivially destructible, so it outlives the cache.
thread_local bool tlInvokeSlotsGone = false;

// The calling thread's recently used invoke slot objects, each holding a reference. A handful
// of entries covers the usual "a worker reports to one or two receivers"; a miss costs the
// connect-time set-up (a registry lookup and an allocation).
class InvokeSlotCache
{
public:
    ~InvokeSlotCache()
    {
        tlInvokeSlots = nullptr;
        tlInvokeSlotsGone = true;
        for (Entry &e : m_entries) {
            if (e.route)
                e.route->deref();
        }
    }

    // The live slot object for (core, receiver), or null; no side effects (the per-call path).
    QFunnelRoute *find(QFunnelCore *core, const QObject *receiver) const noexcept
    {
        for (const Entry &e : m_entries) {
            if (e.core != core || e.receiver != receiver)
                continue;
            // A dead receiver's address may belong to a new object by now: check the guard.
            if (!core->isStopped() && e.route->guard->isAlive(receiver))
                return e.route;
            return nullptr;
        }
        return nullptr;
    }

    // Releases the entry for (core, receiver), if any (it was stale: find() said no).
    void forget(QFunnelCore *core, const QObject *receiver)
    {
        for (Entry &e : m_entries) {
            if (e.core == core && e.receiver == receiver)
                release(e);
        }
    }

    void insert(QFunnelCore *core, const QObject *receiver, QFunnelRoute *route)
    {
        Entry &e = m_entries[m_next];
        m_next = (m_next + 1) % Size;
        release(e);
        e = { core, receiver, route };
    }

private:
    static constexpr int Size = 8;
    struct Entry
    {
        QFunnelCore *core = nullptr;
        const QObject *receiver = nullptr;
        QFunnelRoute *route = nullptr;
    };
    static void release(Entry &e)
    {
        if (e.route)
            e.route->deref();
        e = Entry();
    }

    Entry m_entries[Size];
    int m_next = 0;
};

// The owner is destroyed at thread exit; the per-invoke path reads only the trivial pointer.
using InvokeSlotsOwner = QFunnelThreadObject<InvokeSlotCache>;

// Null once thread exit destroyed this thread's cache.
InvokeSlotCache *invokeSlots()
{
    if (Q_UNLIKELY(!tlInvokeSlots) && !tlInvokeSlotsGone)
        tlInvokeSlots = &InvokeSlotsOwner::local();
    return tlInvokeSlots;
}

} // namespace

namespace {
// The first invoke of this thread to a receiver, or a bad call: out of line, so that the
// per-call path saves no registers for it.
Q_NEVER_INLINE QFunnelRoute *newInvokeTarget(QFunnel *funnel, const QObject *receiver,
                                             const char *where)
{
    if (Q_UNLIKELY(!funnel || !receiver)) {
        qWarning("%s(%s): invalid nullptr parameter (%s)", where, classNameOf(receiver),
                 !funnel ? "funnel" : "receiver");
        return nullptr;
    }
    QFunnelCore *core = QFunnelPrivate::get(funnel)->core;
    InvokeSlotCache *cache = invokeSlots();
    if (cache)
        cache->forget(core, receiver);
    const QByteArray context = QByteArray(where) + "(" + classNameOf(receiver) + ")";
    auto *route = new QFunnelRoute(nullptr, &invokeSlotImpl);
    route->setDelivery(QFunnelRoute::Delivery::Invoke);
    if (!routeToReceiver(core, receiver, route, context.constData())) {
        route->deref();
        return nullptr;
    }
    if (!cache)
        return route; // thread exit destroyed the cache: the call takes the initial reference
    cache->insert(core, receiver, route); // the cache keeps the initial reference
    route->ref(); // the call's
    return route;
}
} // namespace

QFunnelRoute *invokeTarget(QFunnel *funnel, const QObject *receiver, const char *where)
{
    if (Q_LIKELY(funnel && receiver && tlInvokeSlots)) {
        QFunnelCore *core = QFunnelPrivate::get(funnel)->core;
        if (QFunnelRoute *route = tlInvokeSlots->find(core, receiver)) {
            route->ref(); // the call's
            return route;
        }
    }
    return newInvokeTarget(funnel, receiver, where);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
