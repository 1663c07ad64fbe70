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

#include <cstring>

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

/*!
    \fn template <typename Func, typename... Args> bool QtFastConnect::invokeBatched(const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot, Args &&...args)

    Queues \a args as one item for \a slot of \a receiver through QFunnel::globalInstance(),
    and returns \c true. \a slot takes one parameter, the batch: \c{QList<T>} for one argument
    per call, \c{QList<std::tuple<T1, T2, ...>>} for several (by value, const reference or
    rvalue reference). It runs later in the thread \a receiver lives in, once for a run of
    the calling thread's pending invokeBatched() calls of \a slot, as a batched connection's
    slot does (connectBatched()): in the order they were made, at most 4,096 items per batch.

    This is connectBatched() without a signal: a worker that reports rows to a model calls
    \c{invokeBatched(model, &Model::appendRows, std::move(row))} and the model inserts them
    with one \c{beginInsertRows()} per batch. Without the signal, no Qt signal emission
    (QMetaObject::activate()) runs per item: 267 instructions per item in all threads against
    connectBatched()'s 393, and in \c{benchmarks/modelview} four producers move 8 % more rows
    per second (the benchmark report's section 8).

    Each argument is stored once in the calling thread (an rvalue is moved, an lvalue copied)
    and moved into the batch. Each call holds one unit of the funnel's capacity until its
    batch ran, and a batch of n calls counts as n delivered calls in QFunnel::statistics().
    If \a receiver is destroyed first, the calls are discarded unrun; sender() returns
    \nullptr in the slot. Any thread may call it. A null \a receiver, a receiver without
    thread affinity or whose thread has finished, or a stopped funnel print a warning and
    return \c false; a slot that takes no batch, or arguments that make no item of it, fail to
    compile with a message saying so. When the funnel is full the call waits for room
    (backpressure), as an emission does.

    Calls from different threads form separate runs; the batches of one slot from several
    threads interleave as their runs reach the receiver.

    \sa connectBatched(), invoke()
*/

/*!
    \fn template <typename Func, typename... Args> bool QtFastConnect::invokeBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot, Args &&...args)
    \overload

    Delivers through \a funnel instead of the global funnel. A null \a funnel prints a warning
    and returns \c false.
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

// Which calls an invoke route carries: any invoke to the receiver (member null), or the
// invokeBatched() calls of one member function (impl is its batch slot type's function, member
// the pointer, memberSize bytes, compared with equals: a member function pointer has no other
// identity). The same impl means the same pointer type, so the same equals.
struct InvokeKey
{
    QFunnelSlotImpl impl = nullptr;
    const void *member = nullptr;
    std::size_t memberSize = 0;
    QFunnelMemberEquals equals = nullptr;
};

// The key of batchedInvokeTarget(), the earlier entry point: words compared as bytes.
bool memberWordsEqual(const void *a, const void *b)
{
    return std::memcmp(a, b, sizeof(quintptr) * QFunnelMemberKeyWords) == 0;
}

// The calling thread's recently used invoke slot objects, each holding a reference: those of
// plain invokes, and apart from them (so that an invoke compares no more than it did before
// invokeBatched()) those of invokeBatched(). A handful of entries covers the usual "a worker
// reports to one or two receivers"; a miss costs the connect-time set-up (a registry lookup and
// an allocation).
class InvokeSlotCache
{
public:
    ~InvokeSlotCache()
    {
        tlInvokeSlots = nullptr;
        tlInvokeSlotsGone = true;
        m_invokes.releaseAll();
        m_batched.releaseAll();
    }
    // The live slot object for (core, receiver), or for (core, receiver, key), or null; no
    // side effects (the per-call path).
    QFunnelRoute *findInvoke(QFunnelCore *core, const QObject *receiver) const
    {
        return m_invokes.find(core, receiver, InvokeKey());
    }
    QFunnelRoute *findBatched(QFunnelCore *core, const QObject *receiver,
                              const InvokeKey &key) const
    {
        return m_batched.find(core, receiver, key);
    }
    // Releases the entry for (core, receiver, key), if any (it was stale: find() said no).
    void forget(QFunnelCore *core, const QObject *receiver, const InvokeKey &key)
    {
        if (key.member)
            m_batched.forget(core, receiver, key);
        else
            m_invokes.forget(core, receiver, key);
    }
    void insert(QFunnelCore *core, const QObject *receiver, const InvokeKey &key,
                QFunnelRoute *route, const QFunnelReceiverStamp &stamp)
    {
        if (key.member)
            m_batched.insert(core, receiver, key, route, stamp);
        else
            m_invokes.insert(core, receiver, key, route, stamp);
    }

private:
    struct InvokeEntry
    {
        QFunnelCore *core = nullptr;
        const QObject *receiver = nullptr;
        QFunnelRoute *route = nullptr;
        QFunnelReceiverStamp stamp;

        bool matches(QFunnelCore *c, const QObject *r, const InvokeKey &) const noexcept
        {
            return core == c && receiver == r;
        }
        void setKey(const InvokeKey &) noexcept {}
    };
    struct BatchedEntry
    {
        QFunnelCore *core = nullptr;
        const QObject *receiver = nullptr;
        QFunnelRoute *route = nullptr;
        QFunnelReceiverStamp stamp;
        QFunnelSlotImpl impl = nullptr;
        quintptr member[QFunnelMemberKeyWords] = {};

        bool matches(QFunnelCore *c, const QObject *r, const InvokeKey &key) const noexcept
        {
            return receiver == r && core == c && impl == key.impl && key.equals(member, key.member);
        }
        void setKey(const InvokeKey &key) noexcept
        {
            impl = key.impl;
            std::memcpy(member, key.member, key.memberSize);
        }
    };
    // The most recent Size entries; the oldest makes room.
    template<typename Entry>
    class Ring
    {
    public:
        QFunnelRoute *find(QFunnelCore *core, const QObject *receiver, const InvokeKey &key) const
        {
            for (const Entry &e : m_entries) {
                if (!e.matches(core, receiver, key))
                    continue;
                // A dead receiver's address may belong to a new object by now: check the
                // guard. A receiver whose thread finished gets the full check.
                if (!core->isStopped() && e.route->guard->isAlive(receiver) && e.stamp.holds())
                    return e.route;
                return nullptr;
            }
            return nullptr;
        }
        void forget(QFunnelCore *core, const QObject *receiver, const InvokeKey &key)
        {
            for (Entry &e : m_entries) {
                if (e.matches(core, receiver, key))
                    release(e);
            }
        }
        void insert(QFunnelCore *core, const QObject *receiver, const InvokeKey &key,
                    QFunnelRoute *route, const QFunnelReceiverStamp &stamp)
        {
            Entry &e = m_entries[m_next];
            m_next = (m_next + 1) % Size;
            release(e);
            e.core = core;
            e.receiver = receiver;
            e.route = route;
            e.stamp = stamp;
            e.setKey(key);
        }
        void releaseAll()
        {
            for (Entry &e : m_entries)
                release(e);
        }

    private:
        static constexpr int Size = 8;
        static void release(Entry &e)
        {
            if (e.route)
                e.route->deref();
            e = Entry();
        }
        Entry m_entries[Size];
        int m_next = 0;
    };
    Ring<InvokeEntry> m_invokes;
    Ring<BatchedEntry> m_batched;
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

// The first invoke of this thread to a receiver (with this key), or a bad call: out of line,
// so that the per-call path saves no registers for it. newSlot: null for plain invokes.
Q_NEVER_INLINE QFunnelRoute *newInvokeTarget(QFunnel *funnel, const QObject *receiver,
                                             InvokeKey key, void *(*newSlot)(const void *),
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
        cache->forget(core, receiver, key);
    const QByteArray context = QByteArray(where) + "(" + classNameOf(receiver) + ")";
    auto *route = new QFunnelRoute;
    if (newSlot) {
        // invokeBatched(): a batch slot object, delivered as a batched connection's calls are.
        route->attachSlot(newSlot(key.member), key.impl);
        Q_ASSERT(route->describesBatch());
        route->setDelivery(QFunnelRoute::Delivery::Batch);
        route->mode = QtFastConnect::FunnelConnection | QFunnelBatchedBit;
        route->notesArenas = route->isPooled();
    } else {
        route->attachSlot(nullptr, key.impl);
        route->setDelivery(QFunnelRoute::Delivery::Invoke);
    }
    QFunnelReceiverStamp stamp;
    if (!routeToReceiver(core, receiver, route, QFunnelWhere { context.constData() }, &stamp)) {
        route->deref();
        return nullptr;
    }
    if (!cache)
        return route; // thread exit destroyed the cache: the call takes the initial reference
    cache->insert(core, receiver, key, route, stamp); // the cache keeps the initial reference
    route->ref(); // the call's
    return route;
}

} // namespace

QFunnelRoute *invokeTarget(QFunnel *funnel, const QObject *receiver, const char *where)
{
    if (Q_LIKELY(funnel && receiver && tlInvokeSlots)) {
        QFunnelCore *core = QFunnelPrivate::get(funnel)->core;
        if (QFunnelRoute *route = tlInvokeSlots->findInvoke(core, receiver)) {
            route->ref(); // the call's
            return route;
        }
    }
    return newInvokeTarget(funnel, receiver, InvokeKey { &invokeSlotImpl, nullptr }, nullptr,
                           where);
}

QFunnelRoute *batchedInvokeRoute(QFunnel *funnel, const QObject *receiver, QFunnelSlotImpl impl,
                                 const void *member, std::size_t memberSize,
                                 QFunnelMemberEquals equals, void *(*newSlot)(const void *member),
                                 const char *where)
{
    Q_ASSERT(memberSize <= sizeof(quintptr) * QFunnelMemberKeyWords);
    const InvokeKey key { impl, member, memberSize, equals };
    if (Q_LIKELY(funnel && receiver && tlInvokeSlots)) {
        QFunnelCore *core = QFunnelPrivate::get(funnel)->core;
        if (QFunnelRoute *route = tlInvokeSlots->findBatched(core, receiver, key)) {
            route->ref(); // the call's
            return route;
        }
    }
    return newInvokeTarget(funnel, receiver, key, newSlot, where);
}

QFunnelRoute *batchedInvokeTarget(QFunnel *funnel, const QObject *receiver, QFunnelSlotImpl impl,
                                  const quintptr *member, void *(*newSlot)(const void *member),
                                  const char *where)
{
    return batchedInvokeRoute(funnel, receiver, impl, member,
                              sizeof(quintptr) * QFunnelMemberKeyWords, &memberWordsEqual, newSlot,
                              where);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
