// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECT_H
#define QFASTCONNECT_H

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qobject.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnect {
Q_NAMESPACE_EXPORT(Q_FASTCONNECT_EXPORT)

enum ConnectionType : int {
    // Kept clear of Qt::ConnectionType's bits so that Qt's flags can be combined later.
    FunnelConnection = 0x10000
};
Q_ENUM_NS(ConnectionType)

} // namespace QtFastConnect

QT_END_NAMESPACE

#include <QtFastConnect/qfastconnect_impl.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnect {

// connect(funnel, sender, &Sender::signal, receiver, &Receiver::slot)
template <typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connect(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
        Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver,
        Func2 slot, ConnectionType type = FunnelConnection)
{
    using SignalType = QtPrivate::FunctionPointer<Func1>;
    using SlotType = QtPrivate::FunctionPointer<Func2>;
    static_assert(QtPrivate::HasQ_OBJECT_Macro<typename SignalType::Object>::Value,
                  "No Q_OBJECT in the class with the signal");
    static_assert(int(SignalType::ArgumentCount) >= int(SlotType::ArgumentCount),
                  "The slot requires more arguments than the signal provides.");
    static_assert(QtPrivate::CheckCompatibleArguments<typename SignalType::Arguments,
                                                      typename SlotType::Arguments>::value,
                  "Signal and slot arguments are not compatible.");
    using Stored = typename QtFastConnectPrivate::QFunnelDecayList<
            typename QtPrivate::List_Left<typename SignalType::Arguments,
                                          SlotType::ArgumentCount>::Value>::Type;
    static_assert(QtFastConnectPrivate::QFunnelAllCopyable<Stored>::value,
                  "QtFastConnect::connect: every argument the slot consumes must be copyable, "
                  "because the funnel stores a copy until the receiver's thread runs the slot.");
    using SlotObj = QtFastConnectPrivate::QFunnelMemberSlot<Func2, Stored,
                                                            typename SlotType::Arguments>;
    return QtFastConnectPrivate::connectSlotObject<Func1, SlotObj, Stored>(
            funnel, sender, signal, receiver, new SlotObj(slot), type);
}

// connect(funnel, sender, &Sender::signal, context, functor)
template <typename Func1, typename Func2>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connect(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
        Func1 signal, const QObject *context, Func2 &&functor,
        ConnectionType type = FunnelConnection)
{
    using SignalType = QtPrivate::FunctionPointer<Func1>;
    using F = std::decay_t<Func2>;
    static_assert(QtPrivate::HasQ_OBJECT_Macro<typename SignalType::Object>::Value,
                  "No Q_OBJECT in the class with the signal");
    constexpr int FunctorArgumentCount = QtPrivate::FunctionPointer<F>::ArgumentCount >= 0
            ? int(QtPrivate::FunctionPointer<F>::ArgumentCount)
            : int(QtPrivate::ComputeFunctorArgumentCount<F, typename SignalType::Arguments>::Value);
    static_assert(FunctorArgumentCount >= 0,
                  "Signal and slot arguments are not compatible.");
    using Stored = typename QtFastConnectPrivate::QFunnelDecayList<
            typename QtPrivate::List_Left<typename SignalType::Arguments,
                                          FunctorArgumentCount>::Value>::Type;
    static_assert(QtFastConnectPrivate::QFunnelAllCopyable<Stored>::value,
                  "QtFastConnect::connect: every argument the functor consumes must be copyable, "
                  "because the funnel stores a copy until the context's thread runs it.");
    using SlotObj = QtFastConnectPrivate::QFunnelFunctorSlot<F, Stored>;
    return QtFastConnectPrivate::connectSlotObject<Func1, SlotObj, Stored>(
            funnel, sender, signal, context, new SlotObj(F(std::forward<Func2>(functor))), type);
}

// The same two, through QFunnel::globalInstance().
template <typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
        const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot,
        ConnectionType type = FunnelConnection)
{
    return QtFastConnect::connect(QFunnel::globalInstance(), sender, signal, receiver, slot, type);
}

template <typename Func1, typename Func2>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
        const QObject *context, Func2 &&functor, ConnectionType type = FunnelConnection)
{
    return QtFastConnect::connect(QFunnel::globalInstance(), sender, signal, context,
                                  std::forward<Func2>(functor), type);
}

} // namespace QtFastConnect

QT_END_NAMESPACE

#endif // QFASTCONNECT_H
