// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Every QtFastConnect::disconnect(): Qt's own disconnect cuts the funnel connections, asking
// each slot object of the matching connections whether it is a funnel capture of the named slot
// (a funnel slot query, see compareTarget()); connections made by code built against earlier
// headers are found through the connection registry.

#include "qfunnelbyname_p.h"
#include "qfunnelconnection_p.h"
#include "qfunnelconnectionregistry_p.h"

#include <QtCore/private/qmetaobject_p.h>
#include <QtCore/private/qobject_p.h>

#include <algorithm>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The receivers (or context objects) of signal's connections, or of every signal's if it is
// invalid: Qt's disconnect compares slots only for a given receiver.
static QObjectList receiversOf(const QObject *sender, const QMetaMethod &signal)
{
    const QObjectPrivate *d = QObjectPrivate::get(const_cast<QObject *>(sender));
    QObjectList receivers;
    if (signal.isValid()) {
        receivers = d->receiverList(signal.methodSignature().constData());
    } else {
        const QMetaObject *mo = sender->metaObject();
        for (int i = 0; i < mo->methodCount(); ++i) {
            const QMetaMethod m = mo->method(i);
            // A clone shares its signal's connection list.
            if (m.methodType() == QMetaMethod::Signal && !(m.attributes() & QMetaMethod::Cloned))
                receivers += d->receiverList(m.methodSignature().constData());
        }
    }
    std::sort(receivers.begin(), receivers.end());
    receivers.erase(std::unique(receivers.begin(), receivers.end()), receivers.end());
    return receivers;
}

bool disconnectFunnel(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
                      char kind, const void *slotKey, size_t keySize, QFunnelSlotKeyEqual equal)
{
    if (!sender) {
        qWarning("QtFastConnect::disconnect: unexpected nullptr parameter");
        return false;
    }
    if (signal.isValid() && signal.methodType() != QMetaMethod::Signal) {
        qWarning("QtFastConnect::disconnect: %s::%s is not a signal",
                 sender->metaObject()->className(), signal.methodSignature().constData());
        return false;
    }
    const int signalIndex = signal.isValid() ? QMetaObjectPrivate::signalIndex(signal) : -1;
    const QList<QMetaObject::Connection> recorded =
            takeConnections(sender, signalIndex, receiver, kind, slotKey, keySize, equal);
    // Outside the registry lock: disconnecting may destroy slot objects and run destructors.
    bool any = false;
    for (const QMetaObject::Connection &c : std::as_const(recorded))
        any |= QObject::disconnect(c);

    QFunnelSlotQuery query(kind, slotKey);
    const int methodIndex = signal.isValid() ? signal.methodIndex() : -1;
    if (receiver)
        return QObjectPrivate::disconnect(sender, methodIndex, receiver, query.asSlot()) || any;
    for (QObject *r : receiversOf(sender, signal))
        any |= QObjectPrivate::disconnect(sender, methodIndex, r, query.asSlot());
    return any;
}

bool disconnectFunnel(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
                      char kind, const void *slotKey, size_t keySize)
{
    return disconnectFunnel(sender, signal, receiver, kind, slotKey, keySize, nullptr);
}

} // namespace QtFastConnectPrivate

using namespace QtFastConnectPrivate;

/*!
    \fn bool QtFastConnect::disconnect(const QObject *sender, const char *signal, const QObject *receiver, const char *method)

    Disconnects the funnel connections from \a signal of \a sender to \a method of
    \a receiver, made by name or by QMetaMethod, like QObject::disconnect() with the same
    arguments; returns \c true if at least one was cut. A null \a signal, \a receiver or
    \a method matches any signal, receiver (or context) or method; a null \a method then
    also cuts the connections made with pointers to member functions or functors. Any thread
    may call it.

    Calls already emitted are still delivered, as with Qt::QueuedConnection; sender() is
    \nullptr inside them. A null \a sender, or a name that does not resolve, prints a warning
    and returns \c false. Connections made with QObject::connect() are not touched.
*/
bool QtFastConnect::disconnect(const QObject *sender, const char *signal, const QObject *receiver,
                               const char *method)
{
    QMetaMethod sig;
    QMetaMethod meth;
    if (!sender) {
        qWarning("QtFastConnect::disconnect: unexpected nullptr parameter");
        return false;
    }
    if (signal && !resolveSignal("disconnect", sender, signal, &sig))
        return false;
    if (method) {
        if (!receiver) {
            qWarning("QtFastConnect::disconnect: a method needs its receiver");
            return false;
        }
        if (!resolveMethod("disconnect", receiver, method, &meth))
            return false;
    }
    return disconnect(sender, sig, receiver, meth);
}

/*!
    \fn bool QtFastConnect::disconnect(const QObject *sender, const QMetaMethod &signal, const QObject *receiver, const QMetaMethod &method)
    \overload

    Disconnects the funnel connections from \a signal of \a sender to \a method of
    \a receiver. An invalid QMetaMethod or a null \a receiver matches anything, as above.
*/
bool QtFastConnect::disconnect(const QObject *sender, const QMetaMethod &signal,
                               const QObject *receiver, const QMetaMethod &method)
{
    const int methodIndex = method.isValid() ? method.methodIndex() : -1;
    return disconnectFunnel(sender, signal, receiver, 'M',
                            method.isValid() ? &methodIndex : nullptr, sizeof(methodIndex),
                            nullptr);
}

/*!
    \fn template <typename Func1, typename Func2> bool QtFastConnect::disconnect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot)
    \overload

    Disconnects the funnel connections from \a signal of \a sender to the member function
    \a slot of \a receiver made with the pointer-to-member-function overload of connect().
    QObject::disconnect() with the same arguments cuts them too, together with the
    connections made with QObject::connect(), which this one leaves alone.
*/

/*!
    \fn template <typename Func1> bool QtFastConnect::disconnect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const QObject *receiver, std::nullptr_t slot)
    \overload

    Disconnects every funnel connection from \a signal of \a sender to \a receiver (any
    receiver or context if it is \nullptr), whatever the slot or functor. \a slot must be
    \nullptr.
*/

/*!
    \fn bool QtFastConnect::disconnect(const QMetaObject::Connection &connection)
    \overload

    Cuts \a connection, a handle returned by any QtFastConnect::connect() overload; the same as
    QObject::disconnect(connection), which also works. Returns \c false if it was already cut
    or is invalid. Calls already emitted are still delivered, as with Qt::QueuedConnection.
*/
bool QtFastConnect::disconnect(const QMetaObject::Connection &connection)
{
    return QObject::disconnect(connection);
}

QT_END_NAMESPACE
