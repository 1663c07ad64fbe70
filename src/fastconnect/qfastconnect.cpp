// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfastconnect.h"
#include "qfunnel_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelreceiverguard_p.h"

#include <QtCore/private/qmetaobject_p.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qthread_p.h>

QT_BEGIN_NAMESPACE

/*!
    \namespace QtFastConnect
    \inmodule QtFastConnect
    \brief The QtFastConnect namespace holds the funnel connection: a drop-in replacement for
    Qt::QueuedConnection built for many producer threads.

    Replace
    \code
    QObject::connect(worker, &Worker::resultReady, window, &Window::showResult,
                     Qt::QueuedConnection);
    \endcode
    with
    \code
    QtFastConnect::connect(worker, &Worker::resultReady, window, &Window::showResult);
    \endcode

    The slot still runs in the receiver's thread, once per emission, with sender() set; a
    receiver destroyed with calls pending never sees them. What changes is the path in between:
    see QFunnel.
*/

/*!
    \enum QtFastConnect::ConnectionType

    \value FunnelConnection The emission is copied into a call in the emitting thread and
           delivered through a QFunnel to the receiver's thread, where the slot runs. Order is
           kept per emitting thread (not across threads). It is never run in the emitting
           thread, even when that is the receiver's thread: like Qt::QueuedConnection it runs
           when that thread's event loop next processes events.
*/

/*!
    \enum QtFastConnect::ConnectionOption

    Options that combine with FunnelConnection (and with Qt's Qt::UniqueConnection and
    Qt::SingleShotConnection flags) into a ConnectionMode. A connect call refuses, with a
    warning, any option this release does not implement.

    \value MoveArguments By-value signal parameters emitted as rvalues are moved into the call
           instead of copied.
    \value CoalesceCalls Only the newest pending emission per connection is delivered.
*/

/*!
    \class QtFastConnect::ConnectionMode
    \inmodule QtFastConnect
    \brief The ConnectionMode class is a funnel connection type combined with options and
    Qt's connection flags.

    It converts implicitly from QtFastConnect::ConnectionType, QtFastConnect::ConnectionOption
    and Qt::ConnectionType, and \c{operator|} combines any two of them, in either order:
    \code
    QtFastConnect::connect(sender, &Sender::changed, receiver, &Receiver::update,
                           QtFastConnect::FunnelConnection | Qt::UniqueConnection);
    \endcode
    The Qt::ConnectionType part must be Qt::AutoConnection (0): a funnel connection is never
    direct, queued through Qt or blocking. Any thread may build one; it is a plain value.

    Qt's flags behave as with Qt::QueuedConnection:
    \list
    \li Qt::SingleShotConnection: the connection is cut at the first emission (atomically, if
        several threads emit at once); that emission is delivered, later ones are not, and the
        returned handle is invalid once the first emission returned.
    \li Qt::UniqueConnection: the connect fails, returning an invalid handle without a warning,
        if a funnel connection with the same sender, signal, receiver and slot exists (a slot
        given as a member function pointer, by name or by QMetaMethod; each form is compared
        only with itself, as in Qt). Connections made with QObject::connect() are not
        considered. With a functor it prints a warning and fails, as QObject::connect() does.
    \endlist
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot, QtFastConnect::ConnectionMode mode)

    Connects \a signal of \a sender to \a slot of \a receiver through QFunnel::globalInstance(),
    like QObject::connect() with Qt::QueuedConnection, and returns a handle that
    QObject::disconnect() accepts. Any thread may call it.

    The arguments the slot consumes are copied once, in the emitting thread, when the signal is
    emitted (a by-value slot parameter then receives the copy by move); the slot runs in the
    thread \a receiver lives in when the call is delivered (it follows the receiver if it moves
    to another thread). Pending calls are never run once \a receiver is destroyed; they are still
    delivered after a disconnect or after \a sender is destroyed (sender() then returns
    \nullptr), as with Qt::QueuedConnection.

    Incompatible argument lists fail to compile, as with QObject::connect(). A null \a sender or
    \a receiver, a \a mode that is not a funnel connection or carries a flag this release does
    not support, a receiver without thread affinity or a
    stopped funnel print a warning and return an invalid connection.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const QObject *context, Func2 &&functor, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal to \a functor, which runs in the thread of \a context. Destroying
    \a context cuts the connection and drops its pending calls. The functor is destroyed once,
    when the connection and every pending call are gone.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connect(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot, QtFastConnect::ConnectionMode mode)
    \overload

    Delivers through \a funnel instead of the global funnel. A null \a funnel prints a warning
    and returns an invalid connection.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connect(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const QObject *context, Func2 &&functor, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal to \a functor, run in the thread of \a context, through \a funnel.
*/

namespace QtFastConnectPrivate {

QFunnelSlotObject::~QFunnelSlotObject()
{
    if (guard)
        guard->deref();
    if (core)
        core->deref();
}

static const char *classNameOf(const QObject *o)
{
    return o ? o->metaObject()->className() : "(nullptr)";
}

// The ConnectionMode bits accepted so far; everything else is refused, never ignored.
static constexpr int SupportedModeBits = int(QtFastConnect::FunnelConnection)
        | int(Qt::UniqueConnection) | int(Qt::SingleShotConnection);

static bool checkMode(const QObject *sender, const QObject *receiver, int mode)
{
    // Qt::AutoConnection (0) in the Qt::ConnectionType part means "the funnel decides".
    const int qtType = mode & 0xf;
    if (qtType != Qt::AutoConnection) {
        qWarning("QtFastConnect::connect(%s, %s): unsupported connection type 0x%x; a funnel "
                 "connection cannot also be Qt::DirectConnection, Qt::QueuedConnection or "
                 "Qt::BlockingQueuedConnection",
                 classNameOf(sender), classNameOf(receiver), unsigned(qtType));
        return false;
    }
    if (const int unsupported = mode & ~(SupportedModeBits | 0xf)) {
        qWarning("QtFastConnect::connect(%s, %s): unsupported connection flags 0x%x",
                 classNameOf(sender), classNameOf(receiver), unsigned(unsupported));
        return false;
    }
    return true;
}

bool prepareConnection(QFunnel *funnel, const QObject *sender, const QMetaMethod &signal,
                       const QObject *receiver, QFunnelSlotObject *so, int mode)
{
    if (!sender || !receiver) {
        qWarning("QtFastConnect::connect(%s, %s): invalid nullptr parameter (%s)",
                 classNameOf(sender), classNameOf(receiver), !sender ? "sender" : "receiver");
        return false;
    }
    if (!funnel) {
        qWarning("QtFastConnect::connect(%s, %s): invalid nullptr funnel",
                 classNameOf(sender), classNameOf(receiver));
        return false;
    }
    if (!checkMode(sender, receiver, mode))
        return false;
    if (!signal.isValid() || signal.methodType() != QMetaMethod::Signal) {
        qWarning("QtFastConnect::connect(%s, %s): signal not found in %s",
                 classNameOf(sender), classNameOf(receiver), classNameOf(sender));
        return false;
    }
    QThreadData *td = QObjectPrivate::get(receiver)->threadData.loadAcquire();
    if (!td || !td->thread.loadAcquire()) {
        qWarning("QtFastConnect::connect(%s, %s): receiver %p has no thread affinity, so no "
                 "thread could run its slot",
                 classNameOf(sender), classNameOf(receiver), static_cast<const void *>(receiver));
        return false;
    }
    QFunnelCore *core = QFunnelPrivate::get(funnel)->core;
    if (core->isStopped()) {
        qWarning("QtFastConnect::connect(%s::%s, %s): the funnel has stopped (its QFunnel was "
                 "destroyed, or the application is shutting down)",
                 classNameOf(sender), signal.methodSignature().constData(),
                 classNameOf(receiver));
        return false;
    }
    core->ref();
    so->core = core;
    so->guard = QFunnelReceiverGuard::acquire(const_cast<QObject *>(receiver));
    so->sender = const_cast<QObject *>(sender);
    so->signalIndex = QMetaObjectPrivate::signalIndex(signal);
    so->mode = mode | QtFastConnect::FunnelConnection;
    so->target.store(core->inboxFor(td), std::memory_order_release);
    return true;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#include "moc_qfastconnect.cpp"
