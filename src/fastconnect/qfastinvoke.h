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

QT_END_NAMESPACE

#include <QtFastConnect/qfastinvoke_impl.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnect {

// invoke(funnel, receiver, &Receiver::slot, args...)
template<typename Func, typename... Args>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func>::IsPointerToMemberFunction, bool>
invoke(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func>::Object *receiver,
       Func slot, Args &&...args)
{
    using Object = typename QtPrivate::FunctionPointer<Func>::Object;
    static_assert(
            std::is_invocable_v<
                    Func, Object *,
                    std::decay_t<Args>
                            &&...> || std::is_invocable_v<Func, Object *, std::decay_t<Args> &...>,
            "QtFastConnect::invoke: the slot cannot be called with these arguments.");
    return QtFastConnectPrivate::invokeImpl(funnel, receiver, "QtFastConnect::invoke", slot,
                                            std::forward<Args>(args)...);
}

// invoke(funnel, context, functor, args...)
template<typename Func, typename... Args>
inline std::enable_if_t<QtFastConnectPrivate::IsInvokeFunctor<Func>, bool>
invoke(QFunnel *funnel, const QObject *context, Func &&functor, Args &&...args)
{
    using F = std::decay_t<Func>;
    static_assert(
            std::is_invocable_v<
                    F &,
                    std::decay_t<Args> &&...> || std::is_invocable_v<F &, std::decay_t<Args> &...>,
            "QtFastConnect::invoke: the functor cannot be called with these arguments.");
    static_assert(std::is_constructible_v<F, Func &&>,
                  "QtFastConnect::invoke: the functor cannot be stored; pass a move-only functor "
                  "as an rvalue.");
    return QtFastConnectPrivate::invokeImpl(funnel, context, "QtFastConnect::invoke",
                                            std::forward<Func>(functor),
                                            std::forward<Args>(args)...);
}

// The same two, through QFunnel::globalInstance().
template<typename Func, typename... Args>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func>::IsPointerToMemberFunction, bool>
invoke(const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot, Args &&...args)
{
    return QtFastConnect::invoke(QFunnel::globalInstance(), receiver, slot,
                                 std::forward<Args>(args)...);
}

template<typename Func, typename... Args>
inline std::enable_if_t<QtFastConnectPrivate::IsInvokeFunctor<Func>, bool>
invoke(const QObject *context, Func &&functor, Args &&...args)
{
    return QtFastConnect::invoke(QFunnel::globalInstance(), context, std::forward<Func>(functor),
                                 std::forward<Args>(args)...);
}

// invokeBatched(funnel, receiver, &Receiver::slot, args...): the slot takes the batch, a QList
// of the items (QList<std::tuple<...>> for several arguments per call).
template<typename Func, typename... Args>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func>::IsPointerToMemberFunction, bool>
invokeBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func>::Object *receiver,
              Func slot, Args &&...args)
{
    return QtFastConnectPrivate::invokeBatchedImpl(funnel, receiver, slot,
                                                   std::forward<Args>(args)...);
}

template<typename Func, typename... Args>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func>::IsPointerToMemberFunction, bool>
invokeBatched(const typename QtPrivate::FunctionPointer<Func>::Object *receiver, Func slot,
              Args &&...args)
{
    return QtFastConnect::invokeBatched(QFunnel::globalInstance(), receiver, slot,
                                        std::forward<Args>(args)...);
}

} // namespace QtFastConnect

QT_END_NAMESPACE

#endif // QFASTINVOKE_H
