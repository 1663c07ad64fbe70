// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTINVOKE_H
#define QFASTINVOKE_H

#include <QtFastConnect/qfastconnect.h>

#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// An invoke in flight: the callable and the arguments travel in the call itself, so one slot
// object per (emitting thread, funnel, receiver) serves every invoke (see invokeTarget()).
struct QFunnelInvokeCall : QFunnelCall
{
    // Runs the call (receiver non-null), then destroys it; with a null receiver only destroys it.
    using Fn = void (*)(QObject *receiver, QFunnelInvokeCall *self);
    Fn fn;
};

// The slot object that carries invokes to receiver, with one reference added for the caller's
// call; nullptr (after a qWarning naming where) when receiver is null, has no thread affinity or
// funnel is null or stopped. Cached per calling thread. Any thread.
Q_FASTCONNECT_EXPORT QFunnelSlotObject *invokeTarget(QFunnel *funnel, const QObject *receiver,
                                                     const char *where);

template <typename F, typename... Args>
struct QFunnelInvokeCallImpl : QFunnelInvokeCall
{
    Q_FASTCONNECT_POOLED
    F func;
    std::tuple<Args...> args;

    template <typename G, typename... A>
    QFunnelInvokeCallImpl(QFunnelSlotObject *so, G &&g, A &&...a)
        : QFunnelInvokeCall{ { nullptr, so }, &run },
          func(std::forward<G>(g)), args(std::forward<A>(a)...)
    {}

    template <std::size_t... I>
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
    static void run(QObject *receiver, QFunnelInvokeCall *base)
    {
        auto *self = static_cast<QFunnelInvokeCallImpl *>(base);
        if (receiver)
            self->call(receiver, std::index_sequence_for<Args...>{});
        delete self;
    }
};

template <typename F, typename... A>
bool invokeImpl(QFunnel *funnel, const QObject *receiver, const char *where, F &&f, A &&...args)
{
    static_assert(std::conjunction_v<std::is_constructible<std::decay_t<A>, A &&>...>,
                  "QtFastConnect::invoke: an argument cannot be stored; a move-only argument "
                  "(std::unique_ptr, ...) must be passed as an rvalue: std::move(arg).");
    QFunnelSlotObject *so = invokeTarget(funnel, receiver, where);
    if (!so)
        return false;
    so->post(new QFunnelInvokeCallImpl<std::decay_t<F>, std::decay_t<A>...>(
            so, std::forward<F>(f), std::forward<A>(args)...));
    return true;
}

// A functor, not a member function, a method name or a receiver: invoke(funnel, receiver,
// &Receiver::slot) would otherwise also match invoke(context, functor, ...).
template <typename Func, typename F = std::decay_t<Func>>
inline constexpr bool IsInvokeFunctor = !QtPrivate::FunctionPointer<F>::IsPointerToMemberFunction
        && !std::is_convertible_v<Func, const char *>
        && !std::is_base_of_v<QObject, std::remove_cv_t<std::remove_pointer_t<F>>>;

} // namespace QtFastConnectPrivate

namespace QtFastConnect {

// invoke(funnel, receiver, &Receiver::slot, args...)
template <typename Func, typename... Args>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func>::IsPointerToMemberFunction, bool>
invoke(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func>::Object *receiver,
       Func slot, Args &&...args)
{
    using Object = typename QtPrivate::FunctionPointer<Func>::Object;
    static_assert(std::is_invocable_v<Func, Object *, std::decay_t<Args> &&...>
                          || std::is_invocable_v<Func, Object *, std::decay_t<Args> &...>,
                  "QtFastConnect::invoke: the slot cannot be called with these arguments.");
    return QtFastConnectPrivate::invokeImpl(funnel, receiver, "QtFastConnect::invoke", slot,
                                            std::forward<Args>(args)...);
}

// invoke(funnel, context, functor, args...)
template <typename Func, typename... Args>
inline std::enable_if_t<QtFastConnectPrivate::IsInvokeFunctor<Func>, bool>
invoke(QFunnel *funnel, const QObject *context, Func &&functor, Args &&...args)
{
    using F = std::decay_t<Func>;
    static_assert(std::is_invocable_v<F &, std::decay_t<Args> &&...>
                          || std::is_invocable_v<F &, std::decay_t<Args> &...>,
                  "QtFastConnect::invoke: the functor cannot be called with these arguments.");
    static_assert(std::is_constructible_v<F, Func &&>,
                  "QtFastConnect::invoke: the functor cannot be stored; pass a move-only functor "
                  "as an rvalue.");
    return QtFastConnectPrivate::invokeImpl(funnel, context, "QtFastConnect::invoke",
                                            std::forward<Func>(functor),
                                            std::forward<Args>(args)...);
}

// The same two, through QFunnel::globalInstance().
template <typename Func, typename... Args>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func>::IsPointerToMemberFunction, bool>
invoke(const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot,
       Args &&...args)
{
    return QtFastConnect::invoke(QFunnel::globalInstance(), receiver, slot,
                                 std::forward<Args>(args)...);
}

template <typename Func, typename... Args>
inline std::enable_if_t<QtFastConnectPrivate::IsInvokeFunctor<Func>, bool>
invoke(const QObject *context, Func &&functor, Args &&...args)
{
    return QtFastConnect::invoke(QFunnel::globalInstance(), context, std::forward<Func>(functor),
                                 std::forward<Args>(args)...);
}

} // namespace QtFastConnect

QT_END_NAMESPACE

#endif // QFASTINVOKE_H
