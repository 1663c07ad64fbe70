// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECT_H
#include <QtFastConnect/qfastconnect.h>
#endif

#ifndef QFASTCONNECT_IMPL_H
#define QFASTCONNECT_IMPL_H

#if 0
#pragma qt_sync_skip_header_check
#pragma qt_sync_stop_processing
#endif

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtFastConnect/qpoolallocator.h>
#include <QtCore/qatomic.h>
#include <QtCore/qmetaobject.h>
#include <QtCore/qobject.h>

#include <atomic>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

QT_BEGIN_NAMESPACE

class QFunnel;

// Template machinery behind QtFastConnect::connect(). Not public API: it may change with every
// release, like Qt's own qobjectdefs_impl.h.
namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelInbox;
class QFunnelReceiverGuard;
class QFunnelSlotObject;

// One emission in flight: the arguments, copied (or moved) in the emitting thread, and the
// connection they belong to. Allocated by the emitting thread, destroyed by the receiver's.
struct QFunnelCall
{
    QFunnelCall *next = nullptr;          // intrusive link, owned by whichever stage holds the call
    QFunnelSlotObject *slotObject;        // holds one reference while the call exists
};

// The funnel side of one connection: the user's slot (or functor) plus what the stages need to
// route a call to its receiver. Reference counted: the capture functor installed on the signal
// holds one reference and every pending call holds one, so a call never outlives its slot.
class Q_FASTCONNECT_EXPORT QFunnelSlotObject
{
    Q_DISABLE_COPY_MOVE(QFunnelSlotObject)
public:
    // Run: calls the slot with the call's arguments, then destroys the call (one indirect call
    // per delivered call instead of two). DestroyCall: destroys it without running it.
    enum Operation { Run, DestroyCall, DestroySelf };
    using ImplFn = void (*)(Operation op, QFunnelSlotObject *self, QObject *receiver,
                            QFunnelCall *call);

    explicit QFunnelSlotObject(ImplFn impl) noexcept : m_impl(impl) {}

    void ref() noexcept { m_ref.ref(); }
    void deref() noexcept
    {
        if (!m_ref.deref())
            m_impl(DestroySelf, this, nullptr, nullptr);
    }

    // Capture stage entry point; any thread. Takes ownership of call.
    void post(QFunnelCall *call);

    // Delivery; receiver's thread only. Runs the call and destroys it; the caller then
    // releases the call's reference with deref().
    void run(QObject *receiver, QFunnelCall *call) { m_impl(Run, this, receiver, call); }
    // Destroys the call's arguments and releases its reference on this slot object.
    void destroyCall(QFunnelCall *call) noexcept
    {
        m_impl(DestroyCall, this, nullptr, call);
        deref();
    }

    // Routing state, written once by the connect call before the capture is installed (and so
    // published to emitting threads by Qt's connect, and to the other stages by the calls).
    QFunnelCore *core = nullptr;                 // holds a reference
    QFunnelReceiverGuard *guard = nullptr;       // holds a reference
    QFunnelInbox *inbox = nullptr;               // holds a reference; the receiver's, any thread
    QObject *sender = nullptr;
    int signalIndex = -1;
    int mode = QtFastConnect::FunnelConnection;  // ConnectionMode bits, validated
    // CoalesceCalls: the newest call captured for this connection. Only the call it points to
    // is delivered; older pending ones are destroyed unrun. Never dereferenced, only compared.
    std::atomic<QFunnelCall *> latest { nullptr };
    std::atomic<bool> warnedShared { false };    // MoveArguments: warned that it had to copy

protected:
    ~QFunnelSlotObject();

private:
    QAtomicInt m_ref { 1 };
    const ImplFn m_impl;
};

// A call carrying the decayed arguments the slot consumes. Allocated by the emitting thread and
// freed by the receiver's: the textbook case for the pool's per-thread arenas, whose
// cross-thread frees go to the owning arena's backlog instead of through malloc's locks.
template <typename... Args>
struct QFunnelCallImpl : QFunnelCall
{
    Q_FASTCONNECT_POOLED
    template <typename... A>
    explicit QFunnelCallImpl(QFunnelSlotObject *so, A &&...a)
        : QFunnelCall{ nullptr, so }, args(std::forward<A>(a)...)
    {}
    std::tuple<Args...> args;
};

// Passes stored argument I to a slot parameter of type P: moved for by-value parameters, bound
// for references (reference collapsing does the work).
template <typename P, typename T>
inline decltype(auto) qfcForward(T &stored) { return static_cast<P &&>(stored); }

template <typename Func, typename Stored, typename SlotArgs> class QFunnelMemberSlot;
template <typename Func, typename... Stored, typename... SlotArgs>
class QFunnelMemberSlot<Func, QtPrivate::List<Stored...>, QtPrivate::List<SlotArgs...>>
    : public QFunnelSlotObject
{
    using Object = typename QtPrivate::FunctionPointer<Func>::Object;
    using CallType = QFunnelCallImpl<Stored...>;
    Func m_func;

    template <std::size_t... I>
    void call(QObject *receiver, [[maybe_unused]] CallType *c, std::index_sequence<I...>)
    {
        // As with Qt's queued calls: a receiver whose subclass is already destroyed (events
        // pumped from a base class destructor) does not run that subclass's slot.
        if constexpr (QtPrivate::HasQ_OBJECT_Macro<Object>::Value) {
            const QMetaObject *mo = receiver->metaObject();
            if (Q_UNLIKELY(mo != &Object::staticMetaObject
                           && !mo->inherits(&Object::staticMetaObject))) {
                return;
            }
        }
        (static_cast<Object *>(receiver)->*m_func)(qfcForward<SlotArgs>(std::get<I>(c->args))...);
    }
    static void impl(Operation op, QFunnelSlotObject *self, QObject *receiver, QFunnelCall *c)
    {
        auto *that = static_cast<QFunnelMemberSlot *>(self);
        switch (op) {
        case Run:
            that->call(receiver, static_cast<CallType *>(c), std::index_sequence_for<Stored...>{});
            delete static_cast<CallType *>(c);
            break;
        case DestroyCall:
            delete static_cast<CallType *>(c);
            break;
        case DestroySelf:
            delete that;
            break;
        }
    }

public:
    using CallNode = CallType;
    explicit QFunnelMemberSlot(Func f) : QFunnelSlotObject(&impl), m_func(f) {}
    // Qt's Compare operation: a is the address of the member function pointer to compare with.
    bool isSlot(void **a) const { return *reinterpret_cast<Func *>(a) == m_func; }
};

template <typename Func, typename Stored> class QFunnelFunctorSlot;
template <typename Func, typename... Stored>
class QFunnelFunctorSlot<Func, QtPrivate::List<Stored...>> : public QFunnelSlotObject
{
    using CallType = QFunnelCallImpl<Stored...>;
    Func m_func;

    template <std::size_t... I>
    void call([[maybe_unused]] CallType *c, std::index_sequence<I...>)
    {
        // Move the stored arguments into by-value parameters when the functor accepts rvalues;
        // otherwise (non-const lvalue reference parameters) pass them as lvalues.
        if constexpr (std::is_invocable_v<Func &, Stored &&...>)
            std::invoke(m_func, std::move(std::get<I>(c->args))...);
        else
            std::invoke(m_func, std::get<I>(c->args)...);
    }
    static void impl(Operation op, QFunnelSlotObject *self, QObject *, QFunnelCall *c)
    {
        auto *that = static_cast<QFunnelFunctorSlot *>(self);
        switch (op) {
        case Run:
            that->call(static_cast<CallType *>(c), std::index_sequence_for<Stored...>{});
            delete static_cast<CallType *>(c);
            break;
        case DestroyCall:
            delete static_cast<CallType *>(c);
            break;
        case DestroySelf:
            delete that;
            break;
        }
    }

public:
    using CallNode = CallType;
    explicit QFunnelFunctorSlot(Func &&f) : QFunnelSlotObject(&impl), m_func(std::move(f)) {}
    // A functor compares equal to nothing, as with QObject::connect().
    bool isSlot(void **) const { return false; }
};

// Under MoveArguments: whether the capture may move from the signal's arguments, i.e. whether
// this connection is still the only one of its signal. When it is not, warns once per
// connection and returns false (the capture then copies). Emitting thread, inside emit.
Q_FASTCONNECT_EXPORT bool mayMoveArguments(QFunnelSlotObject *so);

// Capture stage, template half: Qt's slot object of the connection, installed on the signal as
// a direct connection to the receiver, so it runs inside emit in the emitting thread. Copies
// the arguments the slot consumes into a call (or, under MoveArguments, moves the by-value
// ones) and posts it; no Qt lock is held and the receiver's thread is not touched. Its Compare
// operation answers for the funnel slot, so that QObject::disconnect(sender, &Sender::signal,
// receiver, &Receiver::slot) finds the connection as it finds a queued one.
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

template <typename SlotObj, typename SignalArgs, typename Stored> class QFunnelCaptureSlot;
template <typename SlotObj, typename... SignalArgs, typename... Stored>
class QFunnelCaptureSlot<SlotObj, QtPrivate::List<SignalArgs...>, QtPrivate::List<Stored...>>
    : public QtPrivate::QSlotObjectBase
{
    SlotObj *const m_slot;   // holds a reference

    // argv[I + 1] points at signal argument I: const for const T& parameters, non-const for
    // by-value ones (moc passes the signal function's own parameter).
    template <std::size_t I>
    static auto &argument(void **argv)
    {
        using Arg = std::remove_reference_t<std::tuple_element_t<I, std::tuple<SignalArgs...>>>;
        return *reinterpret_cast<Arg *>(argv[I + 1]);
    }
    template <std::size_t... I>
    QFunnelCall *makeCall([[maybe_unused]] void **argv, std::index_sequence<I...>)
    {
        m_slot->ref();
        // std::move of a const argument still copies, as it must.
        if (Q_UNLIKELY(m_slot->mode & QtFastConnect::MoveArguments) && mayMoveArguments(m_slot))
            return new typename SlotObj::CallNode(m_slot, std::move(argument<I>(argv))...);
        return new typename SlotObj::CallNode(m_slot, std::as_const(argument<I>(argv))...);
    }
    static void impl(int which, QSlotObjectBase *self, QObject *, void **argv, bool *ret)
    {
        auto *that = static_cast<QFunnelCaptureSlot *>(self);
        switch (which) {
        case Destroy:
            // Qt counts the references on its slot objects inside QMetaObject::activate(): an
            // emitting thread's last look at the capture happens before its destruction.
            qfcAnnotateAcquire(that);
            that->m_slot->deref();
            delete that;
            break;
        case Call:
            that->m_slot->post(that->makeCall(argv, std::index_sequence_for<Stored...>{}));
            qfcAnnotateRelease(that);
            break;
        case Compare:
            *ret = that->m_slot->isSlot(argv);
            break;
        }
    }

public:
    // Takes over the caller's reference on slot.
    explicit QFunnelCaptureSlot(SlotObj *slot) : QSlotObjectBase(&impl), m_slot(slot) {}
};

// Validates a connection and fills in the slot object's routing state. Prints a qWarning and
// returns false on a bad call (the caller then releases the slot object).
Q_FASTCONNECT_EXPORT bool prepareConnection(QFunnel *funnel, const QObject *sender,
                                            const QMetaMethod &signal, const QObject *receiver,
                                            QFunnelSlotObject *so, int mode);
// Installs capture on signal as a direct connection to receiver (type: Qt's flags to add, such
// as Qt::SingleShotConnection). Takes ownership of capture.
Q_FASTCONNECT_EXPORT QMetaObject::Connection
connectCapture(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
               QtPrivate::QSlotObjectBase *capture, int type);

template <typename Func1, typename SlotObj, typename Stored>
QMetaObject::Connection connectSlotObject(QFunnel *funnel,
                                          const typename QtPrivate::FunctionPointer<Func1>::Object *sender,
                                          Func1 signal, const QObject *receiver, SlotObj *so,
                                          QtFastConnect::ConnectionMode mode)
{
    using SignalArgs = typename QtPrivate::FunctionPointer<Func1>::Arguments;
    const QMetaMethod signalMethod = sender ? QMetaMethod::fromSignal(signal) : QMetaMethod();
    if (!prepareConnection(funnel, sender, signalMethod, receiver, so, mode.toInt())) {
        so->deref();
        return QMetaObject::Connection();
    }
    // Qt::SingleShotConnection rides on the capture's connection: Qt cuts it at the first emit.
    return connectCapture(sender, signalMethod, receiver,
                          new QFunnelCaptureSlot<SlotObj, SignalArgs, Stored>(so),
                          mode.toInt() & Qt::SingleShotConnection);
}

template <typename L> struct QFunnelDecayList;
template <typename... T> struct QFunnelDecayList<QtPrivate::List<T...>>
{
    using Type = QtPrivate::List<std::decay_t<T>...>;
};

template <typename L> struct QFunnelAllCopyable;
template <typename... T> struct QFunnelAllCopyable<QtPrivate::List<T...>>
    : std::conjunction<std::is_copy_constructible<T>...> {};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFASTCONNECT_IMPL_H
