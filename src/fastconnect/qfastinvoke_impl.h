// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTINVOKE_IMPL_H
#define QFASTINVOKE_IMPL_H

#if 0
#pragma qt_sync_skip_header_check
#pragma qt_sync_stop_processing
#endif

#ifndef QFASTINVOKE_H
#error Do not include qfastinvoke_impl.h directly; include <QtFastConnect/qfastinvoke.h>
#endif

#include <QtFastConnect/qfastconnect.h>

#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

QT_BEGIN_NAMESPACE

// Template machinery behind QtFastConnect::invoke(); not public API (see qfastconnect_impl.h).
namespace QtFastConnectPrivate {

// An invoke in flight: the callable and the arguments travel in the call itself, so one route
// per (emitting thread, funnel, receiver) serves every invoke (see invokeTarget()). The header
// (a call's, plus fn) is part of the ABI.
struct QFunnelInvokeCall : QFunnelCall
{
    // Runs the call (receiver non-null, receiverClass set), then destroys it; with a null
    // receiver only destroys it.
    using Fn = void (*)(QObject *receiver, QFunnelInvokeCall *self);
    QFunnelInvokeCall(QFunnelRoute *route, Fn f) noexcept : QFunnelCall(route), fn(f) {}
    const Fn fn;
};

// The library's entry points for this header's inline code, part of the ABI like those of
// qfastconnect_impl.h: changing one fails scripts/abi-check.sh.

// The route that carries invokes from the calling thread to receiver, with a reference for the
// caller's call; nullptr (after a qWarning naming where) when receiver is null, has no thread
// affinity, lives in a finished thread, or funnel is null or stopped. Cached per calling
// thread. Any thread.
Q_FASTCONNECT_EXPORT QFunnelRoute *invokeTarget(QFunnel *funnel, const QObject *receiver,
                                                const char *where);
// post() for a call that already holds its reference on route (from invokeTarget() or
// batchedInvokeTarget()).
Q_FASTCONNECT_EXPORT void postInvoke(QFunnelRoute *route, QFunnelCall *call);
// invokeBatched(): the route that carries the calling thread's invokeBatched() calls of one
// member function to receiver, with a reference for the caller's call; as invokeTarget()
// otherwise. impl: the batch slot type's function; member: the member function pointer
// (memberSize bytes, at most QFunnelMemberKeyWords words), compared with equals, the pointer
// type's ==: MSVC's member function pointers can carry padding, whose bytes are whatever the
// stack held; newSlot: makes the slot object from it, on the thread's first call.
inline constexpr int QFunnelMemberKeyWords = 4; // MSVC's largest member function pointer
using QFunnelMemberEquals = bool (*)(const void *a, const void *b);
Q_FASTCONNECT_EXPORT QFunnelRoute *
batchedInvokeRoute(QFunnel *funnel, const QObject *receiver, QFunnelSlotImpl impl,
                   const void *member, std::size_t memberSize, QFunnelMemberEquals equals,
                   void *(*newSlot)(const void *member), const char *where);
// The same for inline code built against an earlier header, which passes the pointer's bytes
// zero-padded to QFunnelMemberKeyWords words, compared as bytes.
Q_FASTCONNECT_EXPORT QFunnelRoute *batchedInvokeTarget(QFunnel *funnel, const QObject *receiver,
                                                       QFunnelSlotImpl impl, const quintptr *member,
                                                       void *(*newSlot)(const void *member),
                                                       const char *where);

template<typename F, typename... Args>
struct QFunnelInvokeCallImpl : QFunnelInvokeCall
{
    Q_FASTCONNECT_POOLED
    F func;
    std::tuple<Args...> args;

    template<typename G, typename... A>
    QFunnelInvokeCallImpl(QFunnelRoute *route, G &&g, A &&...a)
        : QFunnelInvokeCall(route, &run), func(std::forward<G>(g)), args(std::forward<A>(a)...)
    {}

    template<std::size_t... I>
    void call(QObject *receiver, std::index_sequence<I...>)
    {
        if constexpr (std::is_member_function_pointer_v<F>) {
            using Object = typename QtPrivate::FunctionPointer<F>::Object;
            auto *object = static_cast<Object *>(receiver);
            // Moves into by-value and const& parameters; non-const lvalue references get the
            // stored argument itself.
            if constexpr (std::is_invocable_v<F, Object *, Args &&...>)
                std::invoke(func, object, std::move(std::get<I>(args))...);
            else
                std::invoke(func, object, std::get<I>(args)...);
        } else {
            Q_UNUSED(receiver);
            if constexpr (std::is_invocable_v<F &, Args &&...>)
                std::invoke(func, std::move(std::get<I>(args))...);
            else
                std::invoke(func, std::get<I>(args)...);
        }
    }
    // As for a connection's member slot (QFunnelMemberSlot::call()): a receiver whose subclass
    // is already destroyed (events pumped from a base class destructor) does not run that
    // subclass's member. The library looked up the receiver's class (receiverClass).
    // (A bool, not memberClass() != nullptr: a class's address from another DLL is no constant.)
    static constexpr bool ChecksClass = [] {
        if constexpr (std::is_member_function_pointer_v<F>) {
            using Object = typename QtPrivate::FunctionPointer<F>::Object;
            return bool(QtPrivate::HasQ_OBJECT_Macro<Object>::Value);
        } else {
            return false;
        }
    }();
    static const QMetaObject *memberClass()
    {
        return &QtPrivate::FunctionPointer<F>::Object::staticMetaObject;
    }
    // The receiver is not exactly of the member's class: out of line, so that the usual call
    // keeps the receiver in no register across a call besides the member's.
    static Q_NEVER_INLINE void runIfDerived(QObject *receiver, QFunnelInvokeCallImpl *self)
    {
        if (self->receiverClass->inherits(memberClass()))
            self->call(receiver, std::index_sequence_for<Args...> {});
        delete self;
    }
    static void run(QObject *receiver, QFunnelInvokeCall *base)
    {
        auto *self = static_cast<QFunnelInvokeCallImpl *>(base);
        if (receiver) {
            if constexpr (ChecksClass) {
                if (Q_UNLIKELY(self->receiverClass != memberClass()))
                    return runIfDerived(receiver, self);
            }
            self->call(receiver, std::index_sequence_for<Args...> {});
        }
        delete self;
    }
};

template<typename F, typename... A>
bool invokeImpl(QFunnel *funnel, const QObject *receiver, const char *where, F &&f, A &&...args)
{
    static_assert(std::conjunction_v<std::is_constructible<std::decay_t<A>, A &&>...>,
                  "QtFastConnect::invoke: an argument cannot be stored; a move-only argument "
                  "(std::unique_ptr, ...) must be passed as an rvalue: std::move(arg).");
    QFunnelRoute *route = invokeTarget(funnel, receiver, where);
    if (!route)
        return false;
    // An argument whose copy throws leaves no call behind, and so must leave no reference.
    // (A handler, not a scope guard: no instruction on the path that does not throw.)
    QFunnelCall *call = nullptr;
    // Qt's exception macros, laid out as the try and catch they stand for.
    // clang-format off
    QT_TRY {
        call = new QFunnelInvokeCallImpl<std::decay_t<F>, std::decay_t<A>...>(
                route, std::forward<F>(f), std::forward<A>(args)...);
    } QT_CATCH (...) {
        releaseRoute(route);
        QT_RETHROW;
    }
    // clang-format on
    postInvoke(route, call);
    return true;
}

// invokeBatched(): the item type of the batch a member function takes (its one parameter, a
// QList<Item> by value, const reference or rvalue reference), or void.
template<typename SlotArgs>
struct QFunnelBatchItemOf
{
    using Type = void;
};
template<typename Item>
struct QFunnelBatchItemOf<QtPrivate::List<QList<Item>>>
{
    using Type = Item;
};
template<typename Item>
struct QFunnelBatchItemOf<QtPrivate::List<const QList<Item> &>>
{
    using Type = Item;
};
template<typename Item>
struct QFunnelBatchItemOf<QtPrivate::List<QList<Item> &&>>
{
    using Type = Item;
};

// The arguments a call stores for an item, given how many the caller passes: the item itself
// for one, a tuple's elements for several (the item is then that tuple).
template<typename Item, std::size_t Count>
struct QFunnelInvokeStored
{
    using Type = std::conditional_t<Count == 1, QtPrivate::List<Item>, void>;
};
template<typename... S, std::size_t Count>
struct QFunnelInvokeStored<std::tuple<S...>, Count>
{
    using Type = std::conditional_t<
            Count == 1, QtPrivate::List<std::tuple<S...>>,
            std::conditional_t<Count == sizeof...(S), QtPrivate::List<S...>, void>>;
};

template<typename Slot, typename Func>
void *qfcNewBatchInvokeSlot(const void *member)
{
    return new Slot(*static_cast<const Func *>(member));
}

template<typename Func>
bool qfcMemberEquals(const void *a, const void *b)
{
    return *static_cast<const Func *>(a) == *static_cast<const Func *>(b);
}

template<typename Stored>
struct QFunnelStoredTuple;
template<typename... S>
struct QFunnelStoredTuple<QtPrivate::List<S...>>
{
    using Type = std::tuple<S...>;
};

template<typename Func, typename Stored, typename... A>
bool invokeBatchedChecked(QFunnel *funnel, const QObject *receiver, Func slot, A &&...args)
{
    using Slot = QFunnelBatchMemberSlot<Func, Stored>;
    using CallNode = typename Slot::CallNode;
    static_assert(sizeof(Func) <= sizeof(quintptr) * QFunnelMemberKeyWords);
    QFunnelRoute *route = batchedInvokeRoute(
            funnel, receiver, &qfcSlotImpl<Slot>, &slot, sizeof(Func), &qfcMemberEquals<Func>,
            &qfcNewBatchInvokeSlot<Slot, Func>, "QtFastConnect::invokeBatched");
    if (!route)
        return false;
    QFunnelCall *call = nullptr;
    // As in invokeImpl().
    // clang-format off
    QT_TRY {
        call = new CallNode(route, std::forward<A>(args)...);
    } QT_CATCH (...) {
        releaseRoute(route);
        QT_RETHROW;
    }
    // clang-format on
    postInvoke(route, call);
    return true;
}

// The checks, each with its message; what follows a failed one is not instantiated, so that
// the message is the only error.
template<typename Func, typename... A>
bool invokeBatchedImpl(QFunnel *funnel, const QObject *receiver, Func slot, A &&...args)
{
    using Item =
            typename QFunnelBatchItemOf<typename QtPrivate::FunctionPointer<Func>::Arguments>::Type;
    static_assert(!std::is_void_v<Item>,
                  "QtFastConnect::invokeBatched: the slot must take one parameter, the batch: "
                  "QList<T>, or QList<std::tuple<T1, T2, ...>> for several arguments per call, "
                  "by value, const reference or rvalue reference");
    if constexpr (!std::is_void_v<Item>) {
        using Stored = typename QFunnelInvokeStored<Item, sizeof...(A)>::Type;
        static_assert(!std::is_void_v<Stored>,
                      "QtFastConnect::invokeBatched: pass one argument per call for a batch of "
                      "QList<T>, or one per element of the tuple for a batch of "
                      "QList<std::tuple<T1, T2, ...>>");
        if constexpr (!std::is_void_v<Stored>) {
            constexpr bool Constructible =
                    std::is_constructible_v<typename QFunnelStoredTuple<Stored>::Type, A &&...>;
            static_assert(Constructible,
                          "QtFastConnect::invokeBatched: the arguments cannot make an item of "
                          "the slot's batch; a move-only argument must be passed as an rvalue: "
                          "std::move(arg)");
            if constexpr (Constructible) {
                return invokeBatchedChecked<Func, Stored>(funnel, receiver, slot,
                                                          std::forward<A>(args)...);
            }
        }
    }
    return false;
}

// A functor, not a member function, a method name or a receiver: invoke(funnel, receiver,
// &Receiver::slot) would otherwise also match invoke(context, functor, ...).
template<typename Func, typename F = std::decay_t<Func>>
inline constexpr bool IsInvokeFunctor = !QtPrivate::FunctionPointer<F>::IsPointerToMemberFunction
        && !std::is_convertible_v<
                Func,
                const char
                        *> && !std::is_base_of_v<QObject, std::remove_cv_t<std::remove_pointer_t<F>>>;

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFASTINVOKE_IMPL_H
