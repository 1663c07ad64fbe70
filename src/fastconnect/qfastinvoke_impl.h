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
// post() for a call that already holds its reference on route (from invokeTarget()).
Q_FASTCONNECT_EXPORT void postInvoke(QFunnelRoute *route, QFunnelCall *call);

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
