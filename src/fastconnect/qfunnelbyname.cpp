// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelbyname_p.h"
#include "qfunnelconnection_p.h"
#include "qfunnelmetacallslot_p.h"
#include "qfunnelqtcompat_p.h"

#include <QtCore/private/qobject_p.h>

#include <new>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

// The capture of a connection by name or by QMetaMethod (see QFunnelCapture). Its Compare
// matches the funnel slot queries of QtFastConnect::disconnect() and of a unique connect by name
// that name its method ('M': the address of a method index).
class QFunnelMetaCapture : public QFunnelCapture<QFunnelMetaCapture>
{
    const QFunnelMetaCallSlot *const m_slot; // the route's

public:
    QFunnelMetaCapture(QFunnelRoute *route, const QFunnelMetaCallSlot *slot)
        : QFunnelCapture(route), m_slot(slot)
    {}
    QFunnelCall *makeCall(void **argv) { return m_slot->makeCall(m_route, argv); }
    static constexpr char SlotKind = 'M';
    static constexpr bool InRouteBlock = true; // allocateRoute(), with the slot
    bool isSlot(void **a) const
    {
        return *reinterpret_cast<const int *>(a) == m_slot->methodIndex();
    }
};

} // namespace

static QMetaObject::Connection connectMetaMethod(QFunnel *funnel, const QObject *sender,
                                                 const QMetaMethod &signal, const QObject *receiver,
                                                 const QMetaMethod &method,
                                                 QtFastConnect::ConnectionMode mode)
{
    if (!sender || !receiver) {
        qWarning("QtFastConnect::connect(%s, %s): invalid nullptr parameter", classNameOf(sender),
                 classNameOf(receiver));
        return {};
    }
    if (mode.testFlag(QtFastConnect::MoveArguments)) {
        // Type-erased arguments are copied through QMetaType, which has no move.
        qWarning("QtFastConnect::connect(%s, %s): QtFastConnect::MoveArguments needs the "
                 "pointer-to-member or functor overloads of connect()",
                 classNameOf(sender), classNameOf(receiver));
        return {};
    }
    if (!signal.isValid() || signal.methodType() != QMetaMethod::Signal) {
        qWarning("QtFastConnect::connect(%s, %s): attempt to bind non-signal %s::%s",
                 classNameOf(sender), classNameOf(receiver), classNameOf(sender),
                 signal.isValid() ? signal.methodSignature().constData() : "(invalid)");
        return {};
    }
    if (!method.isValid() || method.methodType() == QMetaMethod::Constructor) {
        qWarning("QtFastConnect::connect(%s, %s): cannot connect %s::%s to %s", classNameOf(sender),
                 classNameOf(receiver), classNameOf(sender), signal.methodSignature().constData(),
                 method.isValid() ? "a constructor" : "an invalid method");
        return {};
    }
    if (!sender->metaObject()->inherits(signal.enclosingMetaObject())
        || !receiver->metaObject()->inherits(method.enclosingMetaObject())) {
        qWarning("QtFastConnect::connect(%s, %s): can't find method %s on instance of class %s",
                 classNameOf(sender), classNameOf(receiver),
                 (sender->metaObject()->inherits(signal.enclosingMetaObject()) ? method : signal)
                         .methodSignature()
                         .constData(),
                 sender->metaObject()->inherits(signal.enclosingMetaObject())
                         ? classNameOf(receiver)
                         : classNameOf(sender));
        return {};
    }
    if (!QMetaObject::checkConnectArgs(signal, method)) {
        qWarning("QtFastConnect::connect: Incompatible sender/receiver arguments\n"
                 "        %s::%s --> %s::%s",
                 classNameOf(sender), signal.methodSignature().constData(), classNameOf(receiver),
                 method.methodSignature().constData());
        return {};
    }
    // Only what the method consumes is copied, so only that must be queueable.
    QList<QMetaType> types;
    for (int i = 0; i < method.parameterCount(); ++i) {
        const QMetaType t = signal.parameterMetaType(i);
        if (!QFunnelMetaCallSlot::isQueueable(t)) {
            const QByteArray name = signal.parameterTypeName(i);
            qWarning("QtFastConnect::connect: Cannot queue arguments of type '%s'\n"
                     "(Make sure '%s' is registered using qRegisterMetaType() and can be "
                     "copied.)",
                     name.constData(), name.constData());
            return {};
        }
        types.append(t);
    }

    const int methodIndex = method.methodIndex();
    // One allocation for the slot, the route and the capture, as typed connects make it.
    static_assert(alignof(QFunnelMetaCallSlot) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__
                  && alignof(QFunnelMetaCapture) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    void *slotMemory = nullptr;
    void *captureMemory = nullptr;
    QFunnelRoute *route = allocateRoute(sizeof(QFunnelMetaCallSlot), sizeof(QFunnelMetaCapture),
                                        &slotMemory, &captureMemory);
    QFunnelMetaCallSlot *slot = nullptr;
    QT_TRY
    {
        slot = new (slotMemory) QFunnelMetaCallSlot(methodIndex, types); // its lists allocate
    }
    QT_CATCH(...)
    {
        releaseRoute(route); // no slot: frees it
        QT_RETHROW;
    }
    if (!prepareRoute(route, funnel, sender, signal, receiver, slot, &QFunnelMetaCallSlot::impl,
                      mode.toInt(), mode.rateLimitInterval().count())) {
        return {};
    }
    // A unique connect compares with the method: Qt asks each slot object of the signal's
    // connections to receiver, and only a funnel connection by name to it answers yes.
    QFunnelSlotQuery sameMethod('M', &methodIndex);
    return connectCapture(
            sender, signal, receiver, new (captureMemory) QFunnelMetaCapture(route, slot), route,
            mode.toInt() & (Qt::SingleShotConnection | Qt::UniqueConnection), sameMethod.asSlot());
}

bool resolveSignal(const char *fn, const QObject *sender, const char *signal, QMetaMethod *sig)
{
    if (signal[0] - '0' != QSIGNAL_CODE) {
        qWarning("QtFastConnect::%s: Use the SIGNAL macro to bind %s::%s", fn, classNameOf(sender),
                 signal);
        return false;
    }
    const QByteArray name = QMetaObject::normalizedSignature(signal + 1);
    const int index = sender->metaObject()->indexOfSignal(name.constData());
    if (index < 0) {
        qWarning("QtFastConnect::%s: No such signal %s::%s", fn, classNameOf(sender),
                 name.constData());
        return false;
    }
    *sig = sender->metaObject()->method(index);
    return true;
}

bool resolveMethod(const char *fn, const QObject *receiver, const char *method, QMetaMethod *meth)
{
    const int code = method[0] - '0';
    if (code != QSLOT_CODE && code != QSIGNAL_CODE) {
        qWarning("QtFastConnect::%s: Use the SLOT or SIGNAL macro to connect %s::%s", fn,
                 classNameOf(receiver), method);
        return false;
    }
    const QByteArray name = QMetaObject::normalizedSignature(method + 1);
    const QMetaObject *mo = receiver->metaObject();
    const int index = code == QSLOT_CODE ? mo->indexOfSlot(name.constData())
                                         : mo->indexOfSignal(name.constData());
    if (index < 0) {
        qWarning("QtFastConnect::%s: No such %s %s::%s", fn, code == QSLOT_CODE ? "slot" : "signal",
                 classNameOf(receiver), name.constData());
        return false;
    }
    *meth = mo->method(index);
    return true;
}

} // namespace QtFastConnectPrivate

using namespace QtFastConnectPrivate;

/*!
    \fn QMetaObject::Connection QtFastConnect::connect(QFunnel *funnel, const QObject *sender, const char *signal, const QObject *receiver, const char *method, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal of \a sender, given with the \c SIGNAL() macro, to \a method of
    \a receiver, given with \c SLOT() or \c SIGNAL(), through \a funnel, like
    QObject::connect(sender, signal, receiver, method, Qt::QueuedConnection). Any thread may
    call it.

    The names are normalized and resolved with \a sender's and \a receiver's meta-objects at
    connect time. When \a signal is emitted, each argument \a method consumes is copied once,
    with its QMetaType's copy constructor, in the emitting thread; in \a receiver's thread the
    method is run through QMetaObject::metacall() (so on a receiver whose subclass is already
    being destroyed, as with Qt, a slot of that subclass is not run) and the copies are
    destroyed afterwards.

    Like Qt, it checks at connect time: a missing \c SIGNAL() / \c SLOT() macro, an unknown
    signal or slot, incompatible arguments, or an argument type that cannot be queued (no
    QMetaType: not registered, or forward-declared; or no copy constructor: move-only) print a
    warning and return an invalid connection. Unlike Qt, only the arguments \a method consumes
    must be queueable, because only those are copied. QtFastConnect::MoveArguments in \a mode
    is refused the same way (QMetaType can copy but not move). The other checks and \a mode are
    as for the pointer-to-member-function overload.
*/
QMetaObject::Connection QtFastConnect::connect(QFunnel *funnel, const QObject *sender,
                                               const char *signal, const QObject *receiver,
                                               const char *method, ConnectionMode mode)
{
    if (!sender || !signal || !receiver || !method) {
        qWarning("QtFastConnect::connect(%s, %s): invalid nullptr parameter", classNameOf(sender),
                 classNameOf(receiver));
        return {};
    }
    QMetaMethod sig;
    QMetaMethod meth;
    if (!resolveSignal("connect", sender, signal, &sig)
        || !resolveMethod("connect", receiver, method, &meth)) {
        return {};
    }
    return connectMetaMethod(funnel, sender, sig, receiver, meth, mode);
}

/*!
    \fn QMetaObject::Connection QtFastConnect::connect(const QObject *sender, const char *signal, const QObject *receiver, const char *method, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal of \a sender to \a method of \a receiver, both given by name, through
    QFunnel::globalInstance(); see the overload with a QFunnel.
*/
QMetaObject::Connection QtFastConnect::connect(const QObject *sender, const char *signal,
                                               const QObject *receiver, const char *method,
                                               ConnectionMode mode)
{
    return connect(QFunnel::globalInstance(), sender, signal, receiver, method, mode);
}

/*!
    \fn QMetaObject::Connection QtFastConnect::connect(QFunnel *funnel, const QObject *sender, const QMetaMethod &signal, const QObject *receiver, const QMetaMethod &method, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal of \a sender to \a method of \a receiver through \a funnel, like
    QObject::connect() with QMetaMethod arguments and Qt::QueuedConnection. Arguments travel
    type-erased, as with the overload that takes names; the same connect-time checks apply,
    plus: \a signal must be a signal of \a sender's class and \a method a method of
    \a receiver's class (else a warning and an invalid connection).
*/
QMetaObject::Connection QtFastConnect::connect(QFunnel *funnel, const QObject *sender,
                                               const QMetaMethod &signal, const QObject *receiver,
                                               const QMetaMethod &method, ConnectionMode mode)
{
    return connectMetaMethod(funnel, sender, signal, receiver, method, mode);
}

/*!
    \fn QMetaObject::Connection QtFastConnect::connect(const QObject *sender, const QMetaMethod &signal, const QObject *receiver, const QMetaMethod &method, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal of \a sender to \a method of \a receiver through
    QFunnel::globalInstance().
*/
QMetaObject::Connection QtFastConnect::connect(const QObject *sender, const QMetaMethod &signal,
                                               const QObject *receiver, const QMetaMethod &method,
                                               ConnectionMode mode)
{
    return connectMetaMethod(QFunnel::globalInstance(), sender, signal, receiver, method, mode);
}

QT_END_NAMESPACE
