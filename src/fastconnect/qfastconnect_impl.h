// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECT_IMPL_H
#define QFASTCONNECT_IMPL_H

#if 0
#pragma qt_sync_skip_header_check
#pragma qt_sync_stop_processing
#endif

#ifndef QFASTCONNECT_H
#error Do not include qfastconnect_impl.h directly; include <QtFastConnect/qfastconnect.h>
#endif

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtFastConnect/qpoolallocator.h>
#include <QtCore/qhash.h>
#include <QtCore/qlist.h>
#include <QtCore/qmetaobject.h>
#include <QtCore/qobject.h>

#include <functional>
#include <iterator>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

QT_BEGIN_NAMESPACE

class QFunnel;

// Template machinery behind QtFastConnect::connect() and invoke(). Not public API: it may
// change with every release, like Qt's own qobjectdefs_impl.h. What it shares with the library
// is only exported functions, the opaque QFunnelRoute and the two-pointer header of a call:
// no inline code reads the library's data.
namespace QtFastConnectPrivate {

// Where the calls of one connection (or of one thread's invokes to one receiver) go: the
// library's routing state, reference counted. Opaque here.
class QFunnelRoute;

// One emission in flight: a header the library links and routes, followed by the arguments,
// copied (or moved) in the emitting thread. Allocated by the emitting thread, destroyed by the
// receiver's. The header's layout (two pointers) is part of the ABI.
struct QFunnelCall
{
    explicit QFunnelCall(QFunnelRoute *r) noexcept : route(r) {}
    union
    {
        QFunnelCall *next = nullptr; // intrusive link, owned by whichever stage holds the call
        // An invoke's, once the receiver's thread has taken it off its list: the receiver's
        // class (metaObject()), which the library looks up once per run of calls, so that the
        // call's class check is a compare (QFunnelInvokeCallImpl::call()).
        const QMetaObject *receiverClass;
    };
    QFunnelRoute *const route; // holds one reference while the call exists (post() takes it)
};

// What the library asks of a slot, through one function per slot type: run a call with the
// receiver and destroy it (Run), destroy a call unrun (DestroyCall), destroy the slot itself
// once its route is gone (DestroySlot). Added later, and ignored by a slot function built
// against an older header: Describe, once per connection, fills in the QFunnelSlotTraits that
// call points to.
enum class QFunnelSlotOp { Run, DestroyCall, DestroySlot, Describe };
using QFunnelSlotImpl = void (*)(QFunnelSlotOp op, void *slot, QObject *receiver,
                                 QFunnelCall *call);

// Describe's answer. The defaults are what a slot function that predates Describe leaves: Run
// for every call.
struct QFunnelSlotTraits
{
    // The class of a member slot: a receiver that is no longer one (its subclass destructor
    // has run) does not run the slot. nullptr: any receiver.
    const QMetaObject *receiverClass = nullptr;
    // The delivery loop's entry, when the call's memory is a QSizeClassPool chunk: runs the
    // call, without checking the receiver's class (the library does, once per run of calls),
    // and destroys the arguments. The memory stays the library's, which returns a run of calls
    // to the pool at once.
    void (*runInPlace)(void *slot, QObject *receiver, QFunnelCall *call) = nullptr;
    // A batched connection's (connectBatched()): runs the slot once for the n calls linked
    // from first through next, without checking the receiver's class. Pooled calls (runInPlace
    // set) keep their header and memory, which the library frees; the others are deleted.
    // Returns how many of the calls it destroyed unrun, superseded by a newer one of their key
    // (QtFastConnect::latestPerKey()).
    qsizetype (*runBatch)(void *slot, QObject *receiver, QFunnelCall *first, qsizetype n) = nullptr;
};

// The mode bit connectBatched() adds: the library accepts it only with a slot that describes
// runBatch. Not a ConnectionOption: a batched slot differs in type, so it takes its own connect.
inline constexpr int QFunnelBatchedBit = 0x100000;

// ---- The library's entry points for the inline code of this header -------------------------
// Binaries built against this header call these nine by their signatures, so they are part of
// the library's ABI: changing one (its signature or what it expects of its arguments) fails
// scripts/abi-check.sh against the recorded baseline (abi/). qfastinvoke_impl.h has the invoke
// path's two, qpoolallocator.h the pool's.

// Capture stage entry point, emitting thread: queues call (built for route) for its receiver.
// Takes ownership of call and a reference on route for it; never blocks unless the funnel is
// full (see QFunnel::OverflowPolicy).
Q_FASTCONNECT_EXPORT void post(QFunnelRoute *route, QFunnelCall *call);
// Releases the reference a capture holds on its route.
Q_FASTCONNECT_EXPORT void releaseRoute(QFunnelRoute *route) noexcept;
// Under MoveArguments: whether the capture may move from the signal's arguments, i.e. whether
// this connection is still the only one of its signal. When it is not, warns once per
// connection and returns false (the capture then copies). Emitting thread, inside emit.
Q_FASTCONNECT_EXPORT bool mayMoveArguments(QFunnelRoute *route);
// Validates a connection and returns its new route, holding slot and one reference for the
// capture. On a bad call prints a qWarning, destroys slot (impl's DestroySlot) and returns
// nullptr. mode: QtFastConnect::ConnectionMode's bits; rateLimitMs: its rate-limit interval.
Q_FASTCONNECT_EXPORT QFunnelRoute *prepareConnection(QFunnel *funnel, const QObject *sender,
                                                     const QMetaMethod &signal,
                                                     const QObject *receiver, void *slot,
                                                     QFunnelSlotImpl impl, int mode,
                                                     qint64 rateLimitMs);
// A route in one allocation with room for the slot (slotBytes, before it) and the capture
// (captureBytes, after it) of one connection, which the caller constructs there: *slot and
// *capture receive their addresses, aligned for any type of at most
// __STDCPP_DEFAULT_NEW_ALIGNMENT__. The route has no slot yet and one reference, the
// capture's: releaseRoute() frees it unused. Any thread.
Q_FASTCONNECT_EXPORT QFunnelRoute *allocateRoute(std::size_t slotBytes, std::size_t captureBytes,
                                                 void **slot, void **capture);
// prepareConnection() for a route from allocateRoute() whose slot the caller constructed in its
// room: impl's DestroySlot destroys it there, without freeing it. On a bad call prints a
// qWarning, releases the route (which destroys the slot) and returns false.
Q_FASTCONNECT_EXPORT bool prepareRoute(QFunnelRoute *route, QFunnel *funnel, const QObject *sender,
                                       const QMetaMethod &signal, const QObject *receiver,
                                       void *slot, QFunnelSlotImpl impl, int mode,
                                       qint64 rateLimitMs);
// Installs capture on signal as a direct connection to receiver (type: Qt's flags to add, such
// as Qt::SingleShotConnection). Takes ownership of capture. What code built against earlier
// headers calls (their connects are found through the connection registry).
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connectCapture(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
               QtPrivate::QSlotObjectBase *capture, int type);
// The same for capture, whose route is route. Under Qt::UniqueConnection, Qt's own connect
// refuses it if the signal has a connection to receiver whose slot object compares equal to
// uniqueSlot (the address of a member function pointer, as QObject::connect() passes it, or a
// funnel slot query); a null uniqueSlot there is a bad call (a warning, no connection).
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connectCapture(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
               QtPrivate::QSlotObjectBase *capture, QFunnelRoute *route, int type,
               void **uniqueSlot);
// Qt's Compare operation on a capture whose slot is of kind ('P' a member function, 'F' a
// functor, 'M' a method by name): a comes from a disconnect or a unique connect, Qt's (the
// address of a member function pointer) or QtFastConnect's (a funnel slot query). Returns what
// the capture's slot compares itself with (nullptr: nothing of its kind) and sets *any if a
// names every funnel connection. Any thread, under Qt's signal-slot locks.
Q_FASTCONNECT_EXPORT void **compareTarget(void **a, char kind, bool *any) noexcept;
// ---- End of the entry points ---------------------------------------------------------------

// A call carrying the decayed arguments the slot consumes. Allocated by the emitting thread and
// freed by the receiver's: the textbook case for the pool's per-thread arenas, whose
// cross-thread frees go to the owning arena's backlog instead of through malloc's locks.
template<typename... Args>
struct QFunnelCallImpl : QFunnelCall
{
    Q_FASTCONNECT_POOLED
    template<typename... A>
    explicit QFunnelCallImpl(QFunnelRoute *route, A &&...a)
        : QFunnelCall(route), args(std::forward<A>(a)...)
    {}
    std::tuple<Args...> args;
};

// Passes a stored argument to a slot parameter of type P: moved for by-value parameters, bound
// for references (reference collapsing does the work).
template<typename P, typename T>
inline decltype(auto) qfcForward(T &stored)
{
    return static_cast<P &&>(stored);
}

// Whether Q_FASTCONNECT_POOLED serves T from a QSizeClassPool chunk (not ::operator new).
template<typename T>
inline constexpr bool QFunnelIsPooled = sizeof(T) <= QSizeClassPool::largestPooledSize
        && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__;

// QFunnelSlotTraits::runInPlace of every slot type whose calls come from the pool.
template<typename Slot>
void qfcSlotRunInPlace(void *slot, QObject *receiver, QFunnelCall *c)
{
    using CallType = typename Slot::CallNode;
    static_cast<Slot *>(slot)->invoke(receiver, static_cast<CallType *>(c));
    static_cast<CallType *>(c)->~CallType();
}

template<typename Slot, typename = void>
struct QFunnelIsBatchSlot : std::false_type
{};
template<typename Slot>
struct QFunnelIsBatchSlot<Slot, std::void_t<typename Slot::Batch>> : std::true_type
{};

// QFunnelSlotTraits::runBatch of the batch slot types.
template<typename Slot>
qsizetype qfcSlotRunBatch(void *slot, QObject *receiver, QFunnelCall *first, qsizetype n)
{
    return static_cast<Slot *>(slot)->runBatch(receiver, first, n);
}

// The one QFunnelSlotImpl of every slot type: Slot provides call(receiver, call node), which
// checks the receiver's class, invoke(receiver, call node), which does not, and
// receiverClass(). InRouteBlock: the slot lives in its route's allocation (allocateRoute()).
template<typename Slot, bool InRouteBlock = false>
void qfcSlotImpl(QFunnelSlotOp op, void *slot, QObject *receiver, QFunnelCall *c)
{
    using CallType = typename Slot::CallNode;
    switch (op) {
    case QFunnelSlotOp::Run:
        static_cast<Slot *>(slot)->call(receiver, static_cast<CallType *>(c));
        delete static_cast<CallType *>(c);
        break;
    case QFunnelSlotOp::DestroyCall:
        delete static_cast<CallType *>(c);
        break;
    case QFunnelSlotOp::DestroySlot:
        if constexpr (InRouteBlock)
            static_cast<Slot *>(slot)->~Slot(); // the route frees the memory
        else
            delete static_cast<Slot *>(slot);
        break;
    case QFunnelSlotOp::Describe: {
        auto *traits = reinterpret_cast<QFunnelSlotTraits *>(c);
        traits->receiverClass = Slot::receiverClass();
        if constexpr (QFunnelIsPooled<CallType>)
            traits->runInPlace = &qfcSlotRunInPlace<Slot>;
        if constexpr (QFunnelIsBatchSlot<Slot>::value)
            traits->runBatch = &qfcSlotRunBatch<Slot>;
        break;
    }
    }
}

// Whether receiver may run a member slot of class cls (nullptr: any class): as with Qt's queued
// calls, a receiver whose subclass is already destroyed (events pumped from a base class
// destructor) does not run that subclass's slot.
inline bool qfcIsReceiverOf(const QObject *receiver, const QMetaObject *cls)
{
    if (!cls)
        return true;
    const QMetaObject *mo = receiver->metaObject();
    return Q_LIKELY(mo == cls) || mo->inherits(cls);
}

template<typename Func, typename Stored, typename SlotArgs>
class QFunnelMemberSlot;
template<typename Func, typename... Stored, typename... SlotArgs>
class QFunnelMemberSlot<Func, QtPrivate::List<Stored...>, QtPrivate::List<SlotArgs...>>
{
    using Object = typename QtPrivate::FunctionPointer<Func>::Object;
    const Func m_func;

    template<std::size_t... I>
    void invoke(QObject *receiver, [[maybe_unused]] QFunnelCallImpl<Stored...> *c,
                std::index_sequence<I...>)
    {
        (static_cast<Object *>(receiver)->*m_func)(qfcForward<SlotArgs>(std::get<I>(c->args))...);
    }

public:
    using CallNode = QFunnelCallImpl<Stored...>;
    explicit QFunnelMemberSlot(Func f) : m_func(f) {}
    // The class a receiver must still be of (qfcIsReceiverOf()).
    static const QMetaObject *receiverClass()
    {
        if constexpr (QtPrivate::HasQ_OBJECT_Macro<Object>::Value)
            return &Object::staticMetaObject;
        else
            return nullptr;
    }
    void call(QObject *receiver, CallNode *c)
    {
        if (qfcIsReceiverOf(receiver, receiverClass()))
            invoke(receiver, c);
    }
    void invoke(QObject *receiver, CallNode *c)
    {
        invoke(receiver, c, std::index_sequence_for<Stored...> {});
    }
    // Qt's Compare operation: a is the address of the member function pointer to compare with.
    static constexpr char SlotKind = 'P';
    bool isSlot(void **a) const { return *reinterpret_cast<Func *>(a) == m_func; }
};

template<typename Func, typename Stored>
class QFunnelFunctorSlot;
template<typename Func, typename... Stored>
class QFunnelFunctorSlot<Func, QtPrivate::List<Stored...>>
{
    Func m_func;

    template<std::size_t... I>
    void invoke([[maybe_unused]] QFunnelCallImpl<Stored...> *c, std::index_sequence<I...>)
    {
        // Move the stored arguments into by-value parameters when the functor accepts rvalues;
        // otherwise (non-const lvalue reference parameters) pass them as lvalues.
        if constexpr (std::is_invocable_v<Func &, Stored &&...>)
            std::invoke(m_func, std::move(std::get<I>(c->args))...);
        else
            std::invoke(m_func, std::get<I>(c->args)...);
    }

public:
    using CallNode = QFunnelCallImpl<Stored...>;
    explicit QFunnelFunctorSlot(Func &&f) : m_func(std::move(f)) {}
    static const QMetaObject *receiverClass() { return nullptr; }
    void call(QObject *receiver, CallNode *c) { invoke(receiver, c); }
    void invoke(QObject *, CallNode *c) { invoke(c, std::index_sequence_for<Stored...> {}); }
    // A functor compares equal to nothing, as with QObject::connect().
    static constexpr char SlotKind = 'F';
    bool isSlot(void **) const { return false; }
};

// Batched connections: what the slot receives, a QList of the signal's argument (of a tuple of
// its arguments, for several). A QList, not a span: the slot owns the items and may move them
// on (into a model's storage), and Qt 6.4 has no QSpan.
template<typename... Stored>
struct QFunnelBatchItem
{
    using Type = std::tuple<Stored...>;
};
template<typename T>
struct QFunnelBatchItem<T>
{
    using Type = T;
};
template<typename... Stored>
using QFunnelBatchList = QList<typename QFunnelBatchItem<Stored...>::Type>;

template<typename... Stored>
inline auto &&qfcBatchItemOf(QFunnelCallImpl<Stored...> *c)
{
    if constexpr (sizeof...(Stored) == 1)
        return std::move(std::get<0>(c->args));
    else
        return std::move(c->args);
}

// Walks the n calls linked from first, giving each one's argument (a tuple of its arguments,
// for several) as an rvalue: QList's range constructor moves them straight into its storage.
template<typename CallType, typename Item>
class QFunnelBatchMover
{
    QFunnelCall *m_call = nullptr;
    qsizetype m_left = 0; // calls from here to the end: equal iterators have as many left

public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Item;
    using difference_type = qsizetype;
    using pointer = Item *;
    using reference = Item &&;

    QFunnelBatchMover() = default;
    QFunnelBatchMover(QFunnelCall *first, qsizetype n) : m_call(first), m_left(n) {}
    Item &&operator*() const { return qfcBatchItemOf(static_cast<CallType *>(m_call)); }
    QFunnelBatchMover &operator++()
    {
        m_call = m_call->next;
        --m_left;
        return *this;
    }
    QFunnelBatchMover operator++(int)
    {
        QFunnelBatchMover old = *this;
        ++*this;
        return old;
    }
    friend bool operator==(const QFunnelBatchMover &a, const QFunnelBatchMover &b)
    {
        return a.m_left == b.m_left;
    }
    friend bool operator!=(const QFunnelBatchMover &a, const QFunnelBatchMover &b)
    {
        return a.m_left != b.m_left;
    }
};

// Moves the arguments of the n calls linked from first into one list, in order, and destroys
// them: only their arguments if the call is pooled (the library frees the memory, reading each
// header's link), the whole call otherwise.
template<typename... Stored>
QFunnelBatchList<Stored...> qfcTakeBatch(QFunnelCall *first, qsizetype n)
{
    using CallType = QFunnelCallImpl<Stored...>;
    using Mover = QFunnelBatchMover<CallType, typename QFunnelBatchItem<Stored...>::Type>;
    QFunnelBatchList<Stored...> items(Mover(first, n), Mover());
    if constexpr (QFunnelIsPooled<CallType>) {
        if constexpr (!std::is_trivially_destructible_v<std::tuple<Stored...>>) {
            for (QFunnelCall *c = first; n; --n, c = c->next)
                std::destroy_at(&static_cast<CallType *>(c)->args);
        }
    } else {
        while (n--)
            delete static_cast<CallType *>(std::exchange(first, first->next));
    }
    return items;
}

// A batch of one call, whose arguments stay for the caller to destroy (a call delivered on
// its own: QFunnelSlotOp::Run, or runInPlace).
template<typename... Stored>
QFunnelBatchList<Stored...> qfcBatchOfOne(QFunnelCallImpl<Stored...> *c)
{
    QFunnelBatchList<Stored...> items;
    items.emplaceBack(qfcBatchItemOf(c));
    return items;
}

// A batched connection's coalescing: none (every call in the batch), or the newest call per key
// (QtFastConnect::latestPerKey()). take() moves the batch out of the n calls linked from first
// and returns how many calls it destroyed unrun as superseded.
struct QFunnelNoKey
{
    template<typename... Stored>
    qsizetype take(QFunnelCall *first, qsizetype n, QFunnelBatchList<Stored...> &items) const
    {
        items = qfcTakeBatch<Stored...>(first, n);
        return 0;
    }
};

template<typename KeyFn>
struct QFunnelKeyOf
{
    KeyFn key;

    // The key function takes the signal's arguments (const references), as a slot would.
    template<bool Several, typename Item>
    auto keyOf(const Item &item) const
    {
        if constexpr (Several)
            return std::apply(key, item);
        else
            return std::invoke(key, item);
    }

    template<typename... Stored>
    qsizetype take(QFunnelCall *first, qsizetype n, QFunnelBatchList<Stored...> &items) const
    {
        constexpr bool Several = sizeof...(Stored) > 1;
        QFunnelBatchList<Stored...> all = qfcTakeBatch<Stored...>(first, n);
        using Key = std::decay_t<decltype(keyOf<Several>(all.constFirst()))>;
        QHash<Key, qsizetype> newest; // key -> index of its newest call
        newest.reserve(n);
        for (qsizetype i = 0; i < n; ++i)
            newest.insert(keyOf<Several>(all.at(i)), i);
        if (newest.size() == n) {
            items = std::move(all);
            return 0;
        }
        // The survivors keep their order; the superseded are destroyed with all.
        items.reserve(newest.size());
        for (qsizetype i = 0; i < n; ++i) {
            if (newest.value(keyOf<Several>(all.at(i))) == i)
                items.emplaceBack(std::move(all[i]));
        }
        return n - items.size();
    }
};

template<typename Func, typename Stored, typename Keying = QFunnelNoKey>
class QFunnelBatchMemberSlot;
template<typename Func, typename... Stored, typename Keying>
class QFunnelBatchMemberSlot<Func, QtPrivate::List<Stored...>, Keying>
{
    using Object = typename QtPrivate::FunctionPointer<Func>::Object;
    const Func m_func;
    const Keying m_keying;

public:
    using CallNode = QFunnelCallImpl<Stored...>;
    using Batch = QFunnelBatchList<Stored...>;
    explicit QFunnelBatchMemberSlot(Func f, Keying keying = {})
        : m_func(f), m_keying(std::move(keying))
    {}
    static const QMetaObject *receiverClass()
    {
        return QFunnelMemberSlot<Func, QtPrivate::List<>, QtPrivate::List<>>::receiverClass();
    }
    void call(QObject *receiver, CallNode *c)
    {
        if (qfcIsReceiverOf(receiver, receiverClass()))
            invoke(receiver, c);
    }
    void invoke(QObject *receiver, CallNode *c)
    {
        (static_cast<Object *>(receiver)->*m_func)(qfcBatchOfOne(c));
    }
    qsizetype runBatch(QObject *receiver, QFunnelCall *first, qsizetype n)
    {
        Batch batch;
        const qsizetype superseded = m_keying.template take<Stored...>(first, n, batch);
        (static_cast<Object *>(receiver)->*m_func)(std::move(batch));
        return superseded;
    }
    static constexpr char SlotKind = 'P';
    bool isSlot(void **a) const { return *reinterpret_cast<Func *>(a) == m_func; }
};

template<typename Func, typename Stored, typename Keying = QFunnelNoKey>
class QFunnelBatchFunctorSlot;
template<typename Func, typename... Stored, typename Keying>
class QFunnelBatchFunctorSlot<Func, QtPrivate::List<Stored...>, Keying>
{
    Func m_func;
    const Keying m_keying;

public:
    using CallNode = QFunnelCallImpl<Stored...>;
    using Batch = QFunnelBatchList<Stored...>;
    explicit QFunnelBatchFunctorSlot(Func &&f, Keying keying = {})
        : m_func(std::move(f)), m_keying(std::move(keying))
    {}
    static const QMetaObject *receiverClass() { return nullptr; }
    void call(QObject *receiver, CallNode *c) { invoke(receiver, c); }
    void invoke(QObject *, CallNode *c) { std::invoke(m_func, qfcBatchOfOne(c)); }
    qsizetype runBatch(QObject *, QFunnelCall *first, qsizetype n)
    {
        Batch batch;
        const qsizetype superseded = m_keying.template take<Stored...>(first, n, batch);
        std::invoke(m_func, std::move(batch));
        return superseded;
    }
    static constexpr char SlotKind = 'F';
    bool isSlot(void **) const { return false; }
};

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void *addr);
extern "C" void __tsan_release(void *addr);
#endif
// A hand-off that Qt orders with its own atomics and locks, which ThreadSanitizer cannot see
// when Qt is not instrumented: what a thread did before qfcAnnotateRelease(addr) happens before
// what another does after qfcAnnotateAcquire(addr). No code without ThreadSanitizer.
inline void qfcAnnotateRelease([[maybe_unused]] void *addr)
{
#if defined(__SANITIZE_THREAD__)
    __tsan_release(addr);
#endif
}
inline void qfcAnnotateAcquire([[maybe_unused]] void *addr)
{
#if defined(__SANITIZE_THREAD__)
    __tsan_acquire(addr);
#endif
}

// Capture stage, template half: Qt's slot object of a funnel connection, installed on the
// signal as a direct connection to the receiver, so it runs inside emit in the emitting thread.
// Derived::makeCall(argv) copies the arguments the slot consumes into a call (or moves the
// by-value ones), which is posted; no Qt lock is held and the receiver's thread is not touched.
// Derived::isSlot(a) answers Qt's Compare for the funnel slot (of kind Derived::SlotKind, see
// compareTarget()), so that QObject::disconnect(sender, &Sender::signal, receiver,
// &Receiver::slot) finds the connection as it finds a queued one, and so that Qt's own
// connection list answers Qt::UniqueConnection and QtFastConnect::disconnect().
template<typename Derived>
class QFunnelCapture : public QtPrivate::QSlotObjectBase
{
    static void impl(int which, QSlotObjectBase *self, QObject *, void **argv, bool *ret)
    {
        auto *that = static_cast<Derived *>(self);
        switch (which) {
        case Destroy: {
            // Qt counts the references on its slot objects inside QMetaObject::activate(): an
            // emitting (or comparing) thread's last look at the capture happens before its
            // destruction. [P22 destroy]
            qfcAnnotateAcquire(that);
            QFunnelRoute *const route = that->m_route;
            if constexpr (Derived::InRouteBlock) {
                that->~Derived(); // in the route's memory, which the release may free
                releaseRoute(route);
            } else {
                releaseRoute(route);
                delete that;
            }
            break;
        }
        case Call:
            // Qt publishes a new connection to emitting threads with its own atomics, which
            // ThreadSanitizer cannot see: pairs with connectCapture()'s release. [P22 call]
            qfcAnnotateAcquire(that);
            post(that->m_route, that->makeCall(argv));
            qfcAnnotateRelease(that); // [P22 done] before the capture's destruction
            break;
        case Compare: {
            // A disconnect by slot reads the capture in any thread; the thread that releases
            // the last reference destroys it (Destroy's acquire).
            bool any = false;
            void **slot = compareTarget(argv, Derived::SlotKind, &any);
            *ret = any || (slot && that->isSlot(slot));
            qfcAnnotateRelease(that); // [P22 done]
            break;
        }
        }
    }

protected:
    // Takes over the caller's reference on route.
    explicit QFunnelCapture(QFunnelRoute *route) : QSlotObjectBase(&impl), m_route(route) {}
    // Whether the capture lives in its route's memory (allocateRoute()): Derived may say so.
    static constexpr bool InRouteBlock = false;
    QFunnelRoute *const m_route; // holds a reference, which keeps the route's slot alive
};

// The capture of a typed connection: Move moves the by-value arguments (MoveArguments);
// InBlock: it lives in its route's allocation, with the slot (allocateRoute()).
template<typename Slot, typename SignalArgs, typename Stored, bool Move, bool InBlock>
class QFunnelCaptureSlot;
template<typename Slot, typename... SignalArgs, typename... Stored, bool Move, bool InBlock>
class QFunnelCaptureSlot<Slot, QtPrivate::List<SignalArgs...>, QtPrivate::List<Stored...>, Move,
                         InBlock>
    : public QFunnelCapture<QFunnelCaptureSlot<Slot, QtPrivate::List<SignalArgs...>,
                                               QtPrivate::List<Stored...>, Move, InBlock>>
{
    const Slot *const m_slot; // the route's

    // argv[I + 1] points at signal argument I: const for const T& parameters, non-const for
    // by-value ones (moc passes the signal function's own parameter).
    template<std::size_t I>
    static auto &argument(void **argv)
    {
        using Arg = std::remove_reference_t<std::tuple_element_t<I, std::tuple<SignalArgs...>>>;
        return *reinterpret_cast<Arg *>(argv[I + 1]);
    }
    template<std::size_t... I>
    QFunnelCall *makeCall([[maybe_unused]] void **argv, std::index_sequence<I...>)
    {
        QFunnelRoute *route = this->m_route;
        // std::move of a const argument still copies, as it must.
        if (Move && mayMoveArguments(route))
            return new typename Slot::CallNode(route, std::move(argument<I>(argv))...);
        return new typename Slot::CallNode(route, std::as_const(argument<I>(argv))...);
    }

public:
    QFunnelCaptureSlot(QFunnelRoute *route, const Slot *slot)
        : QFunnelCapture<QFunnelCaptureSlot>(route), m_slot(slot)
    {}
    static constexpr char SlotKind = Slot::SlotKind;
    static constexpr bool InRouteBlock = InBlock;
    QFunnelCall *makeCall(void **argv)
    {
        return makeCall(argv, std::index_sequence_for<Stored...> {});
    }
    bool isSlot(void **a) const { return m_slot->isSlot(a); }
};

// Constructs a T in mem, or on the heap when mem is null: a connection's slot and capture, in
// their route's allocation or apart (connectSlot()).
template<typename T, typename... A>
T *qfcNewIn(void *mem, A &&...a)
{
    if (mem)
        return new (mem) T(std::forward<A>(a)...);
    return new T(std::forward<A>(a)...);
}

template<typename Slot, typename SignalArgs, typename Stored, bool InBlock>
QtPrivate::QSlotObjectBase *qfcNewCapture(void *mem, QFunnelRoute *route, const Slot *slot,
                                          bool move)
{
    if (move)
        return qfcNewIn<QFunnelCaptureSlot<Slot, SignalArgs, Stored, true, InBlock>>(mem, route,
                                                                                     slot);
    return qfcNewIn<QFunnelCaptureSlot<Slot, SignalArgs, Stored, false, InBlock>>(mem, route, slot);
}

// Every typed connect and connectBatched(): makeSlot(mem) constructs the slot (qfcNewIn()).
// uniqueSlot: what Qt::UniqueConnection compares with (the address of the member function
// pointer; nullptr for a functor, which compares equal to nothing). The slot and the capture
// share their route's allocation (allocateRoute()), so that a connection costs the library one
// allocation besides Qt's own; types aligned beyond what operator new gives get their own.
template<typename Func1, typename Slot, typename Stored, typename MakeSlot>
QMetaObject::Connection
connectSlot(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
            Func1 signal, const QObject *receiver, MakeSlot &&makeSlot,
            QtFastConnect::ConnectionMode mode, void **uniqueSlot)
{
    using SignalArgs = typename QtPrivate::FunctionPointer<Func1>::Arguments;
    const QMetaMethod signalMethod = sender ? QMetaMethod::fromSignal(signal) : QMetaMethod();
    const int modeBits = mode.toInt();
    const qint64 rateLimitMs = mode.rateLimitInterval().count();
    // Qt::SingleShotConnection rides on the capture's connection: Qt cuts it at the first emit;
    // Qt::UniqueConnection is Qt's check of the signal's connections, under its locks.
    const int qtFlags = modeBits & (Qt::SingleShotConnection | Qt::UniqueConnection);
    const bool move = mode.testFlag(QtFastConnect::MoveArguments);
    using Moving = QFunnelCaptureSlot<Slot, SignalArgs, Stored, true, true>;
    using Copying = QFunnelCaptureSlot<Slot, SignalArgs, Stored, false, true>;
    constexpr std::size_t Aligned = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    if constexpr (alignof(Slot) <= Aligned && alignof(Moving) <= Aligned) {
        static_assert(sizeof(Moving) == sizeof(Copying) && alignof(Moving) == alignof(Copying));
        // The slot before the route, beside its fields that are read-only too (the receiver's
        // thread reads both at every call); the capture after it, beside its fields written per
        // call (Qt writes the capture's reference count at every emission).
        void *slotMemory = nullptr;
        void *captureMemory = nullptr;
        QFunnelRoute *route =
                allocateRoute(sizeof(Slot), sizeof(Moving), &slotMemory, &captureMemory);
        Slot *slot = nullptr;
        QT_TRY
        {
            slot = makeSlot(slotMemory);
        }
        QT_CATCH(...)
        {
            releaseRoute(route); // no slot: frees it
            QT_RETHROW;
        }
        if (!prepareRoute(route, funnel, sender, signalMethod, receiver, slot,
                          &qfcSlotImpl<Slot, true>, modeBits, rateLimitMs)) {
            return QMetaObject::Connection();
        }
        return connectCapture(
                sender, signalMethod, receiver,
                qfcNewCapture<Slot, SignalArgs, Stored, true>(captureMemory, route, slot, move),
                route, qtFlags, uniqueSlot);
    } else {
        Slot *slot = makeSlot(nullptr);
        QFunnelRoute *route = prepareConnection(funnel, sender, signalMethod, receiver, slot,
                                                &qfcSlotImpl<Slot>, modeBits, rateLimitMs);
        if (!route)
            return QMetaObject::Connection();
        return connectCapture(
                sender, signalMethod, receiver,
                qfcNewCapture<Slot, SignalArgs, Stored, false>(nullptr, route, slot, move), route,
                qtFlags, uniqueSlot);
    }
}

template<typename L>
struct QFunnelDecayList;
template<typename... T>
struct QFunnelDecayList<QtPrivate::List<T...>>
{
    using Type = QtPrivate::List<std::decay_t<T>...>;
};

template<typename L>
struct QFunnelBatchOf;
template<typename... T>
struct QFunnelBatchOf<QtPrivate::List<T...>>
{
    using Type = QFunnelBatchList<T...>;
};

// Whether a member slot with parameters SlotArgs takes a Batch: exactly one, bound from it.
template<typename SlotArgs, typename Batch>
struct QFunnelTakesBatch : std::false_type
{};
template<typename P, typename Batch>
struct QFunnelTakesBatch<QtPrivate::List<P>, Batch>
    : std::conjunction<std::is_convertible<Batch &&, P>,
                       std::is_same<std::remove_cv_t<std::remove_reference_t<P>>, Batch>>
{};

template<typename L>
struct QFunnelAllCopyable;
template<typename... T>
struct QFunnelAllCopyable<QtPrivate::List<T...>>
    : std::conjunction<std::is_copy_constructible<T>...>
{};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFASTCONNECT_IMPL_H
