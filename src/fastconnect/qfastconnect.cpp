// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfastconnect.h"
#include "qfastconnect_p.h"
#include "qfunnel_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelreceiverguard_p.h"

#include <QtCore/private/qmetaobject_p.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qobject_p_p.h>
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

    \value MoveArguments By-value signal parameters are moved into the call instead of copied
           (\c{const T&} parameters are still copied once). Emitting with \c{std::move(arg)}
           then costs no copy at all: Qt move-constructs the signal function's parameter,
           the funnel moves it into the call and a by-value slot gets it moved again. The
           connection must be the signal's only one, since any other would see the
           moved-from value: connect refuses the option (warning, invalid connection) when the
           signal already has a connection, and when another one is added later, each emission
           copies instead of moving and the first prints a warning. Do not connect to the signal
           from another thread while it is being emitted. See also QtFastConnect::invoke().
    \value CoalesceCalls Only the newest pending emission per connection is delivered: when
           the receiver's thread reaches an older call of the connection while a newer one is
           pending, it destroys the older call's arguments without running the slot and counts
           it in QFunnel::Statistics::coalesced. The call that runs takes the place of the
           newest emission in the emitting thread's order. A coalesced call keeps its capacity
           credit until its receiver's thread skips it. The idea is the "latest value only"
           delivery of progress-style signals.
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
    \inheaderfile QtFastConnect/qfastconnect.h
*/

/*!
    \fn QtFastConnect::ConnectionMode::ConnectionMode(QtFastConnect::ConnectionType type)
    Constructs a mode of the connection type \a type with no options or flags.
*/

/*!
    \fn QtFastConnect::ConnectionMode::ConnectionMode(QtFastConnect::ConnectionOption option)
    Constructs a FunnelConnection mode with \a option: an option alone implies the funnel type.
*/

/*!
    \fn QtFastConnect::ConnectionMode::ConnectionMode(Qt::ConnectionType type)
    Constructs a mode from Qt's connection type or flag \a type, such as Qt::UniqueConnection.
    Alone, Qt::AutoConnection or a flag means a funnel connection (with that flag);
    Qt::DirectConnection, Qt::QueuedConnection and Qt::BlockingQueuedConnection make connect()
    print a warning and return an invalid connection.
*/

/*!
    \fn int QtFastConnect::ConnectionMode::toInt() const
    Returns the mode's bits: the values of the type, options and Qt flags, or-ed together.
*/

/*!
    \fn bool QtFastConnect::ConnectionMode::testFlag(int flag) const
    Returns \c true if every bit of \a flag is set in this mode.
*/

/*!
    \fn QtFastConnect::ConnectionMode QtFastConnect::ConnectionMode::fromInt(int bits)
    Returns the mode whose toInt() is \a bits. No bit is checked here; connect() refuses, with
    a warning, any bit it does not support.
*/

/*!
    \fn template <typename A, typename B> QtFastConnect::ConnectionMode QtFastConnect::operator|(A a, B b)
    \relates QtFastConnect::ConnectionMode
    Returns the mode with the bits of both \a a and \a b. Each of \a a and \a b is a
    QtFastConnect::ConnectionType, QtFastConnect::ConnectionOption, ConnectionMode or
    Qt::ConnectionType; two Qt::ConnectionType values keep Qt's own operator.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connect(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot, QtFastConnect::ConnectionMode mode)

    Connects \a signal of \a sender to \a slot of \a receiver through QFunnel::globalInstance(),
    like QObject::connect() with Qt::QueuedConnection, and returns a handle that
    QObject::disconnect() accepts. Any thread may call it.

    The arguments the slot consumes are copied once, in the emitting thread, when the signal is
    emitted (a by-value slot parameter then receives the copy by move; with
    QtFastConnect::MoveArguments in \a mode, by-value signal parameters are moved instead); the
    slot runs in the thread \a receiver lives in when the call is delivered (it follows the
    receiver if it moves to another thread). Pending calls are never run once \a receiver is
    destroyed; they are still delivered after a disconnect or after \a sender is destroyed
    (sender() then returns \nullptr), as with Qt::QueuedConnection.

    Incompatible argument lists fail to compile, as with QObject::connect(), and so do
    non-copyable arguments (use QtFastConnect::invoke() for those). A null \a sender or
    \a receiver, a \a mode that is not a funnel connection or carries a flag this release does
    not support, a receiver without thread affinity, a receiver whose thread has finished or
    a stopped funnel print a warning and return an invalid connection. A receiver whose thread
    has not started its event loop yet gets its calls once it does.

    The signature is QObject::connect()'s pointer-to-member form, so that a queued connection
    becomes a funnel connection by changing the function's namespace; the delivery path is
    described in QFunnel.
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
    if (inbox)
        inbox->deref();
    if (guard)
        guard->deref();
    if (core)
        core->deref();
}

bool routeToReceiver(QFunnelCore *core, const QObject *receiver, QFunnelSlotObject *so,
                     const char *where)
{
    if (core->isStopped()) {
        qWarning("%s: the funnel has stopped (its QFunnel was destroyed, or the application is "
                 "shutting down)", where);
        return false;
    }
    QObject *r = const_cast<QObject *>(receiver);
    // The receiver's thread data, read under its posted-event lock: the receiver's own thread
    // may move it to another thread meanwhile (and that could free the old data).
    QThread *thread = nullptr;
    bool running = false;
    Qt::HANDLE threadId = nullptr;
    // The lock QObject::moveToThread() holds while it swaps the data, taken the way
    // QCoreApplication::postEvent() takes it: lock the data read, retry if it changed
    // meanwhile. (Not Qt's own locker: it locks inside Qt, where ThreadSanitizer cannot see it.)
    for (;;) {
        QThreadData *td = QObjectPrivate::get(r)->threadData.loadAcquire();
        if (!td)
            break;  // being destroyed
        QMutexLocker locker(&td->postEventList.mutex);
        if (td != QObjectPrivate::get(r)->threadData.loadAcquire())
            continue;
        thread = td->thread.loadAcquire();
        running = td->eventDispatcher.loadAcquire() != nullptr;
        threadId = td->threadId.loadRelaxed();
        break;
    }
    if (!thread) {
        qWarning("%s: receiver %p has no thread affinity, so no thread could run its calls",
                 where, static_cast<const void *>(receiver));
        return false;
    }
    // A thread without an event dispatcher has not started yet, or has finished: only then
    // ask which (QThread::isFinished() takes a lock).
    if (!running && thread->isFinished()) {
        // Its thread ran and returned: no event loop will run the slot (unless the thread is
        // started again), so refuse instead of letting calls wait for ever.
        qWarning("%s: receiver %p lives in a thread that has finished, so no event loop could "
                 "run its calls", where, static_cast<const void *>(receiver));
        return false;
    }
    core->addReceiverThread(thread);
    core->ref();
    so->core = core;
    so->guard = QFunnelReceiverGuard::acquire(r);
    so->inbox = core->inboxFor(so->guard, threadId);
    return true;
}


// The ConnectionMode bits accepted so far; everything else is refused, never ignored.
static constexpr int SupportedModeBits =
        (QtFastConnect::FunnelConnection | QtFastConnect::MoveArguments
         | QtFastConnect::CoalesceCalls | Qt::UniqueConnection | Qt::SingleShotConnection).toInt();

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
    const int signalIndex = QMetaObjectPrivate::signalIndex(signal);
    if ((mode & QtFastConnect::MoveArguments)
        && QObjectPrivate::get(const_cast<QObject *>(sender))
                   ->isSignalConnected(signalIndex, false)) {
        qWarning("QtFastConnect::connect(%s::%s, %s): MoveArguments needs the only connection of "
                 "the signal, and it already has one",
                 classNameOf(sender), signal.methodSignature().constData(),
                 classNameOf(receiver));
        return false;
    }
    const QByteArray where = QByteArray("QtFastConnect::connect(") + classNameOf(sender) + "::"
            + signal.methodSignature() + ", " + classNameOf(receiver) + ")";
    if (!routeToReceiver(QFunnelPrivate::get(funnel)->core, receiver, so, where.constData()))
        return false;
    so->sender = const_cast<QObject *>(sender);
    so->signalIndex = signalIndex;
    so->mode = mode | QtFastConnect::FunnelConnection;
    return true;
}

QMetaObject::Connection connectCapture(const QObject *sender, const QMetaMethod &signal,
                                       const QObject *receiver,
                                       QtPrivate::QSlotObjectBase *capture, int type)
{
    // Qt's own connect with our slot object (QObject::connect() would wrap a functor in one
    // whose Compare operation never matches): QObjectPrivate::connect() takes a method index.
    return QObjectPrivate::connect(sender, signal.methodIndex(), receiver, capture,
                                   Qt::ConnectionType(Qt::DirectConnection | type));
}

// Reads the sender's connection lists the way QMetaObject::activate() does while it calls us:
// atomic links, no lock. The vector is loaded with acquire: newer Qt publishes it with a release
// store, and a relaxed load would not order the reads of its contents. A disconnected entry not yet cleaned up has a null
// receiver and does not count.
bool mayMoveArguments(QFunnelSlotObject *so)
{
    using Connection = QObjectPrivate::Connection;
    const QObjectPrivate::ConnectionData *cd =
            QObjectPrivate::get(so->sender)->connections.loadRelaxed();
    const QObjectPrivate::SignalVector *vector = cd ? cd->signalVector.loadAcquire() : nullptr;
    int live = 0;
    if (vector && so->signalIndex < vector->count()) {
        for (const Connection *c = vector->at(so->signalIndex).first.loadRelaxed(); c;
             c = c->nextConnectionList.loadRelaxed()) {
            if (c->receiver.loadRelaxed())
                ++live;
        }
    }
    const bool sole = live == 1 && !(vector && vector->at(-1).first.loadRelaxed());
    if (Q_UNLIKELY(!sole) && !so->warnedShared.exchange(true, std::memory_order_relaxed)) {
        const QMetaMethod signal = QMetaObjectPrivate::signal(so->sender->metaObject(),
                                                              so->signalIndex);
        qWarning("QtFastConnect: %s::%s has other connections besides a MoveArguments funnel "
                 "connection; its arguments are copied instead of moved",
                 so->sender->metaObject()->className(), signal.methodSignature().constData());
    }
    return sole;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#include "moc_qfastconnect.cpp"
