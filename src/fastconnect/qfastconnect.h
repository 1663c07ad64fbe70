// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECT_H
#define QFASTCONNECT_H

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qobject.h>

#include <chrono>
#include <cstring>
#include <type_traits>

QT_BEGIN_NAMESPACE

namespace QtFastConnect {
Q_NAMESPACE_EXPORT(Q_FASTCONNECT_EXPORT)

enum ConnectionType : int {
    // Kept clear of Qt::ConnectionType's bits so that Qt's flags combine with it.
    FunnelConnection = 0x10000
};
Q_ENUM_NS(ConnectionType)

enum ConnectionOption : int {
    MoveArguments = 0x20000,
    CoalesceCalls = 0x40000,
    RateLimitCalls = 0x80000
};
Q_ENUM_NS(ConnectionOption)

class ConnectionMode
{
public:
    constexpr ConnectionMode(ConnectionType type) noexcept : m_bits(int(type)) {}
    constexpr ConnectionMode(ConnectionOption option) noexcept
        : m_bits(int(FunnelConnection) | int(option))
    {}
    constexpr ConnectionMode(Qt::ConnectionType type) noexcept : m_bits(int(type)) {}

    constexpr int toInt() const noexcept { return m_bits; }
    constexpr bool testFlag(int flag) const noexcept { return (m_bits & flag) == flag; }
    constexpr std::chrono::milliseconds rateLimitInterval() const noexcept
    {
        return std::chrono::milliseconds(m_intervalMs > 0            ? m_intervalMs
                                                 : m_intervalMs == 0 ? DefaultRateLimitMs
                                                                     : -1);
    }

    static constexpr ConnectionMode fromInt(int bits) noexcept { return ConnectionMode(bits, 0); }
    static constexpr ConnectionMode rateLimited(std::chrono::milliseconds interval) noexcept
    {
        // Out of int's range, or not positive: kept invalid (-1), and refused by connect().
        return ConnectionMode(int(FunnelConnection) | int(RateLimitCalls),
                              interval.count() > 0 && interval.count() <= MaxRateLimitMs
                                      ? int(interval.count())
                                      : -1);
    }
    // The bits of both; a rate-limit interval given by either (the longer if both give one).
    constexpr ConnectionMode combinedWith(ConnectionMode other) const noexcept
    {
        const int interval = (m_intervalMs < 0 || other.m_intervalMs < 0)
                ? -1
                : (m_intervalMs > other.m_intervalMs ? m_intervalMs : other.m_intervalMs);
        return ConnectionMode(m_bits | other.m_bits, interval);
    }

private:
    static constexpr int DefaultRateLimitMs = 16;
    static constexpr int MaxRateLimitMs = 3600 * 1000;
    constexpr ConnectionMode(int bits, int intervalMs) noexcept
        : m_bits(bits), m_intervalMs(intervalMs)
    {}
    int m_bits;
    int m_intervalMs = 0; // RateLimitCalls: 0 for the default, -1 for an invalid interval
};

// RateLimitCalls with interval instead of the default 16 ms.
constexpr ConnectionMode rateLimit(std::chrono::milliseconds interval) noexcept
{
    return ConnectionMode::rateLimited(interval);
}

namespace Private {
template<typename T>
inline constexpr bool IsModePart =
        std::disjunction_v<std::is_same<T, ConnectionType>, std::is_same<T, ConnectionOption>,
                           std::is_same<T, ConnectionMode>, std::is_same<T, Qt::ConnectionType>>;
// Two Qt::ConnectionType operands keep Qt's own operator|.
template<typename A, typename B>
inline constexpr bool IsModeCombination =
        std::conjunction_v<std::bool_constant<IsModePart<A> && IsModePart<B>>,
                           std::negation<std::conjunction<std::is_same<A, Qt::ConnectionType>,
                                                          std::is_same<B, Qt::ConnectionType>>>>;
} // namespace Private

// Found by argument-dependent lookup as soon as one operand is ours; an exact match, so it wins
// over the built-in int operator| that two different enums would otherwise fall back to.
#ifdef Q_QDOC
// What qdoc documents: qdoc >= 6.11 cannot match an \fn to the constrained declaration.
template<typename A, typename B>
constexpr ConnectionMode operator|(A a, B b) noexcept;
#else
template<typename A, typename B, std::enable_if_t<Private::IsModeCombination<A, B>, bool> = true>
constexpr ConnectionMode operator|(A a, B b) noexcept
{
    return ConnectionMode(a).combinedWith(ConnectionMode(b));
}
#endif

} // namespace QtFastConnect

QT_END_NAMESPACE

#include <QtFastConnect/qfastconnect_impl.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Compares two slot keys of the same kind and size, each keySize bytes at any alignment.
using QFunnelSlotKeyEqual = bool (*)(const void *a, const void *b);

// For a member function pointer of type Func: with ==, as Qt compares slots. Equal pointers
// need not have equal bytes (MSVC's representations for classes of unknown inheritance carry
// padding of unspecified content).
template<typename Func>
bool slotKeyEqual(const void *a, const void *b) noexcept
{
    Func x;
    Func y;
    std::memcpy(static_cast<void *>(&x), a, sizeof(Func));
    std::memcpy(static_cast<void *>(&y), b, sizeof(Func));
    return x == y;
}

// Code built against earlier headers recorded every connect in the connection registry with
// connectRecorded(), for Qt::UniqueConnection and disconnect by slot (slotKey identifies the
// slot: a member function pointer, a method index; nullptr for a functor; equal compares two
// of its kind, nullptr: by their bytes). Connects now leave both to Qt's connection list and
// the capture's Compare; QtFastConnect::disconnect() still finds the recorded ones.
using QFunnelConnectFn = QMetaObject::Connection (*)(void *context);
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connectRecorded(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
                char kind, const void *slotKey, size_t keySize, QFunnelSlotKeyEqual equal, int mode,
                QFunnelConnectFn connect, void *context);

// Cuts the funnel connections that match: an invalid signal, a null receiver or a null slotKey
// match anything; kind and slotKey as above ('P': the address of a member function pointer).
Q_FASTCONNECT_EXPORT bool disconnectFunnel(const QObject *sender, const QMetaMethod &signal,
                                           const QObject *receiver, char kind, const void *slotKey,
                                           size_t keySize, QFunnelSlotKeyEqual equal);

// The same, comparing keys by their bytes: what code built against earlier headers calls.
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connectRecorded(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
                char kind, const void *slotKey, size_t keySize, int mode, QFunnelConnectFn connect,
                void *context);
Q_FASTCONNECT_EXPORT bool disconnectFunnel(const QObject *sender, const QMetaMethod &signal,
                                           const QObject *receiver, char kind, const void *slotKey,
                                           size_t keySize);

} // namespace QtFastConnectPrivate

namespace QtFastConnect {

// connect(funnel, sender, &Sender::signal, receiver, &Receiver::slot)
template<typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connect(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
        Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver,
        Func2 slot, ConnectionMode mode = FunnelConnection)
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
    using Stored = typename QtFastConnectPrivate::QFunnelDecayList<typename QtPrivate::List_Left<
            typename SignalType::Arguments, SlotType::ArgumentCount>::Value>::Type;
    static_assert(QtFastConnectPrivate::QFunnelAllCopyable<Stored>::value,
                  "QtFastConnect::connect: every argument the slot consumes must be copyable, "
                  "because the funnel stores a copy until the receiver's thread runs the slot; "
                  "queue a move-only value with QtFastConnect::invoke(receiver, &Receiver::slot, "
                  "std::move(value)) instead.");
    using Slot =
            QtFastConnectPrivate::QFunnelMemberSlot<Func2, Stored, typename SlotType::Arguments>;
    // Qt::UniqueConnection compares the member function pointer, as QObject::connect() does.
    return QtFastConnectPrivate::connectSlot<Func1, Slot, Stored>(
            funnel, sender, signal, receiver,
            [&](void *mem) { return QtFastConnectPrivate::qfcNewIn<Slot>(mem, slot); }, mode,
            reinterpret_cast<void **>(&slot));
}

// connect(funnel, sender, &Sender::signal, context, functor)
template<typename Func1, typename Func2>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connect(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
        Func1 signal, const QObject *context, Func2 &&functor,
        ConnectionMode mode = FunnelConnection)
{
    using SignalType = QtPrivate::FunctionPointer<Func1>;
    using F = std::decay_t<Func2>;
    static_assert(QtPrivate::HasQ_OBJECT_Macro<typename SignalType::Object>::Value,
                  "No Q_OBJECT in the class with the signal");
    constexpr int FunctorArgumentCount = QtPrivate::FunctionPointer<F>::ArgumentCount >= 0
            ? int(QtPrivate::FunctionPointer<F>::ArgumentCount)
            : int(QtPrivate::ComputeFunctorArgumentCount<F, typename SignalType::Arguments>::Value);
    static_assert(FunctorArgumentCount >= 0, "Signal and slot arguments are not compatible.");
    using Stored = typename QtFastConnectPrivate::QFunnelDecayList<typename QtPrivate::List_Left<
            typename SignalType::Arguments, FunctorArgumentCount>::Value>::Type;
    static_assert(QtFastConnectPrivate::QFunnelAllCopyable<Stored>::value,
                  "QtFastConnect::connect: every argument the functor consumes must be copyable, "
                  "because the funnel stores a copy until the context's thread runs it; "
                  "queue a move-only value with QtFastConnect::invoke(context, functor, "
                  "std::move(value)) instead.");
    using Slot = QtFastConnectPrivate::QFunnelFunctorSlot<F, Stored>;
    // A functor compares equal to nothing: Qt::UniqueConnection is refused, with a warning.
    return QtFastConnectPrivate::connectSlot<Func1, Slot, Stored>(
            funnel, sender, signal, context,
            [&](void *mem) {
                return QtFastConnectPrivate::qfcNewIn<Slot>(mem, F(std::forward<Func2>(functor)));
            },
            mode, nullptr);
}

// The same two, through QFunnel::globalInstance().
template<typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
        const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot,
        ConnectionMode mode = FunnelConnection)
{
    return QtFastConnect::connect(QFunnel::globalInstance(), sender, signal, receiver, slot, mode);
}

template<typename Func1, typename Func2>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
        const QObject *context, Func2 &&functor, ConnectionMode mode = FunnelConnection)
{
    return QtFastConnect::connect(QFunnel::globalInstance(), sender, signal, context,
                                  std::forward<Func2>(functor), mode);
}

// The list a batched slot takes for the signal of type Signal (decltype(&Sender::signal)):
// QList<T> for a signal with one argument of type T, QList<std::tuple<T...>> for several.
template<typename Signal>
using BatchOf = typename QtFastConnectPrivate::QFunnelBatchOf<
        typename QtFastConnectPrivate::QFunnelDecayList<
                typename QtPrivate::FunctionPointer<Signal>::Arguments>::Type>::Type;

// Keyed coalescing for connectBatched(): of a batch's calls with equal keys, only the newest.
template<typename KeyFn>
struct LatestPerKey
{
    KeyFn key;
};
template<typename KeyFn>
LatestPerKey<std::decay_t<KeyFn>> latestPerKey(KeyFn &&key)
{
    return { std::forward<KeyFn>(key) };
}

} // namespace QtFastConnect

namespace QtFastConnectPrivate {

template<typename Func1, typename Func2, typename Keying>
QMetaObject::Connection
connectBatchedMember(QFunnel *funnel,
                     const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
                     const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot,
                     Keying keying, QtFastConnect::ConnectionMode mode)
{
    using SignalType = QtPrivate::FunctionPointer<Func1>;
    using SlotType = QtPrivate::FunctionPointer<Func2>;
    static_assert(QtPrivate::HasQ_OBJECT_Macro<typename SignalType::Object>::Value,
                  "No Q_OBJECT in the class with the signal");
    using Stored = typename QFunnelDecayList<typename SignalType::Arguments>::Type;
    static_assert(int(SignalType::ArgumentCount) > 0,
                  "QtFastConnect::connectBatched: the signal has no argument to batch");
    static_assert(QFunnelAllCopyable<Stored>::value,
                  "QtFastConnect::connectBatched: every argument of the signal must be copyable, "
                  "because the funnel stores a copy until the receiver's thread runs the slot");
    static_assert(QFunnelTakesBatch<typename SlotType::Arguments,
                                    typename QFunnelBatchOf<Stored>::Type>::value,
                  "QtFastConnect::connectBatched: the slot must take one parameter, the batch "
                  "of the signal's arguments: QList<T> for a signal with one argument of type T, "
                  "QList<std::tuple<T1, T2, ...>> for several (QtFastConnect::BatchOf<decltype("
                  "&Sender::signal)>), by value, const reference or rvalue reference");
    using Slot = QFunnelBatchMemberSlot<Func2, Stored, Keying>;
    return connectSlot<Func1, Slot, Stored>(
            funnel, sender, signal, receiver,
            [&](void *mem) { return qfcNewIn<Slot>(mem, slot, std::move(keying)); },
            mode | QtFastConnect::ConnectionMode::fromInt(QFunnelBatchedBit),
            reinterpret_cast<void **>(&slot));
}

template<typename Func1, typename Func2, typename Keying>
QMetaObject::Connection
connectBatchedFunctor(QFunnel *funnel,
                      const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
                      Func1 signal, const QObject *context, Func2 &&functor, Keying keying,
                      QtFastConnect::ConnectionMode mode)
{
    using SignalType = QtPrivate::FunctionPointer<Func1>;
    using F = std::decay_t<Func2>;
    static_assert(QtPrivate::HasQ_OBJECT_Macro<typename SignalType::Object>::Value,
                  "No Q_OBJECT in the class with the signal");
    using Stored = typename QFunnelDecayList<typename SignalType::Arguments>::Type;
    using Batch = typename QFunnelBatchOf<Stored>::Type;
    static_assert(int(SignalType::ArgumentCount) > 0,
                  "QtFastConnect::connectBatched: the signal has no argument to batch");
    static_assert(QFunnelAllCopyable<Stored>::value,
                  "QtFastConnect::connectBatched: every argument of the signal must be copyable, "
                  "because the funnel stores a copy until the context's thread runs the functor");
    static_assert(std::is_invocable_v<F &, Batch &&>,
                  "QtFastConnect::connectBatched: the functor must take one parameter, the batch "
                  "of the signal's arguments: QList<T> for a signal with one argument of type T, "
                  "QList<std::tuple<T1, T2, ...>> for several (QtFastConnect::BatchOf<decltype("
                  "&Sender::signal)>)");
    using Slot = QFunnelBatchFunctorSlot<F, Stored, Keying>;
    return connectSlot<Func1, Slot, Stored>(
            funnel, sender, signal, context,
            [&](void *mem) {
                return qfcNewIn<Slot>(mem, F(std::forward<Func2>(functor)), std::move(keying));
            },
            mode | QtFastConnect::ConnectionMode::fromInt(QFunnelBatchedBit), nullptr);
}

} // namespace QtFastConnectPrivate

namespace QtFastConnect {

// connectBatched(funnel, sender, &Sender::signal, receiver, &Receiver::slot): the slot takes
// BatchOf<decltype(&Sender::signal)> and runs once for every run of pending calls.
template<typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connectBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
               Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver,
               Func2 slot, ConnectionMode mode = FunnelConnection)
{
    return QtFastConnectPrivate::connectBatchedMember<Func1, Func2>(
            funnel, sender, signal, receiver, slot, QtFastConnectPrivate::QFunnelNoKey(), mode);
}

// The same, keeping only the newest call per key in each batch.
template<typename Func1, typename Func2, typename KeyFn>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connectBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
               Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver,
               Func2 slot, LatestPerKey<KeyFn> key, ConnectionMode mode = FunnelConnection)
{
    return QtFastConnectPrivate::connectBatchedMember<Func1, Func2>(
            funnel, sender, signal, receiver, slot,
            QtFastConnectPrivate::QFunnelKeyOf<KeyFn> { std::move(key.key) }, mode);
}

// connectBatched(funnel, sender, &Sender::signal, context, functor)
template<typename Func1, typename Func2>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connectBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
               Func1 signal, const QObject *context, Func2 &&functor,
               ConnectionMode mode = FunnelConnection)
{
    return QtFastConnectPrivate::connectBatchedFunctor<Func1>(
            funnel, sender, signal, context, std::forward<Func2>(functor),
            QtFastConnectPrivate::QFunnelNoKey(), mode);
}

template<typename Func1, typename Func2, typename KeyFn>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connectBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
               Func1 signal, const QObject *context, Func2 &&functor, LatestPerKey<KeyFn> key,
               ConnectionMode mode = FunnelConnection)
{
    return QtFastConnectPrivate::connectBatchedFunctor<Func1>(
            funnel, sender, signal, context, std::forward<Func2>(functor),
            QtFastConnectPrivate::QFunnelKeyOf<KeyFn> { std::move(key.key) }, mode);
}

// The four, through QFunnel::globalInstance().
template<typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
               const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot,
               ConnectionMode mode = FunnelConnection)
{
    return QtFastConnect::connectBatched(QFunnel::globalInstance(), sender, signal, receiver, slot,
                                         mode);
}

template<typename Func1, typename Func2, typename KeyFn>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction,
                        QMetaObject::Connection>
connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
               const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot,
               LatestPerKey<KeyFn> key, ConnectionMode mode = FunnelConnection)
{
    return QtFastConnect::connectBatched(QFunnel::globalInstance(), sender, signal, receiver, slot,
                                         std::move(key), mode);
}

template<typename Func1, typename Func2>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
               const QObject *context, Func2 &&functor, ConnectionMode mode = FunnelConnection)
{
    return QtFastConnect::connectBatched(QFunnel::globalInstance(), sender, signal, context,
                                         std::forward<Func2>(functor), mode);
}

template<typename Func1, typename Func2, typename KeyFn>
inline std::enable_if_t<!QtPrivate::FunctionPointer<std::decay_t<Func2>>::IsPointerToMemberFunction
                                && !std::is_convertible_v<Func2, const char *>,
                        QMetaObject::Connection>
connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
               const QObject *context, Func2 &&functor, LatestPerKey<KeyFn> key,
               ConnectionMode mode = FunnelConnection)
{
    return QtFastConnect::connectBatched(QFunnel::globalInstance(), sender, signal, context,
                                         std::forward<Func2>(functor), std::move(key), mode);
}

// By name (SIGNAL() / SLOT()) and by QMetaMethod: arguments travel type-erased via QMetaType.
Q_FASTCONNECT_EXPORT QMetaObject::Connection connect(QFunnel *funnel, const QObject *sender,
                                                     const char *signal, const QObject *receiver,
                                                     const char *method,
                                                     ConnectionMode mode = FunnelConnection);
Q_FASTCONNECT_EXPORT QMetaObject::Connection connect(const QObject *sender, const char *signal,
                                                     const QObject *receiver, const char *method,
                                                     ConnectionMode mode = FunnelConnection);
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connect(QFunnel *funnel, const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
        const QMetaMethod &method, ConnectionMode mode = FunnelConnection);
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connect(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
        const QMetaMethod &method, ConnectionMode mode = FunnelConnection);

Q_FASTCONNECT_EXPORT bool disconnect(const QMetaObject::Connection &connection);
Q_FASTCONNECT_EXPORT bool disconnect(const QObject *sender, const char *signal = nullptr,
                                     const QObject *receiver = nullptr,
                                     const char *method = nullptr);
Q_FASTCONNECT_EXPORT bool disconnect(const QObject *sender, const QMetaMethod &signal,
                                     const QObject *receiver, const QMetaMethod &method);

template<typename Func1, typename Func2>
inline std::enable_if_t<QtPrivate::FunctionPointer<Func2>::IsPointerToMemberFunction, bool>
disconnect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal,
           const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot)
{
    return QtFastConnectPrivate::disconnectFunnel(sender, QMetaMethod::fromSignal(signal), receiver,
                                                  'P', &slot, sizeof(slot),
                                                  &QtFastConnectPrivate::slotKeyEqual<Func2>);
}

template<typename Func1>
inline bool disconnect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
                       Func1 signal, const QObject *receiver = nullptr,
                       std::nullptr_t slot = nullptr)
{
    Q_UNUSED(slot);
    return QtFastConnectPrivate::disconnectFunnel(sender, QMetaMethod::fromSignal(signal), receiver,
                                                  'P', nullptr, 0, nullptr);
}

Q_FASTCONNECT_EXPORT void flush();

} // namespace QtFastConnect

QT_END_NAMESPACE

#endif // QFASTCONNECT_H
