// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfastconnect.h"

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
    \value RateLimitCalls Like CoalesceCalls, only the newest pending emission per connection
           is delivered, and in addition at most once per interval: 16 ms (a frame at 60 Hz)
           by default, or the interval given with QtFastConnect::rateLimit(). An emission that
           reaches the receiver's thread less than an interval after the connection's last
           delivered one waits, keeping its capacity credit, until the interval has passed
           (the funnel's timer thread then wakes the receiver in whichever thread it lives, even
           if the thread it moved away from is blocked); if a newer emission arrives meanwhile,
           the waiting one is destroyed unrun and counted in QFunnel::Statistics::coalesced. So
           the last emission of a burst is always delivered, at most one interval after the
           previous delivery. Other connections' calls do not wait for it: a delayed call runs
           after calls emitted later on other connections. If the receiver is destroyed
           meanwhile, the waiting call is destroyed and counted as discarded. The idea is a
           throttle (as in KDToolBox's KDSignalThrottler), kept inside the queue, in the
           receiver's thread, instead of a timer in the sender's.
*/

/*!
    \fn QtFastConnect::ConnectionMode QtFastConnect::rateLimit(std::chrono::milliseconds interval)
    \relates QtFastConnect::ConnectionMode

    Returns a FunnelConnection mode with RateLimitCalls and \a interval instead of the default
    16 ms; combine it with other options and flags with \c{operator|}:
    \code
    using namespace std::chrono_literals;
    QtFastConnect::connect(worker, &Worker::progress, bar, &QProgressBar::setValue,
                           QtFastConnect::rateLimit(100ms));
    \endcode
    An \a interval below 1 ms or above one hour makes connect() print a warning and return an
    invalid connection.
*/

/*!
    \fn std::chrono::milliseconds QtFastConnect::ConnectionMode::rateLimitInterval() const
    Returns the RateLimitCalls interval: the one given to QtFastConnect::rateLimit(), or 16 ms;
    a negative value for an interval connect() refuses.
*/

/*!
    \fn QtFastConnect::ConnectionMode QtFastConnect::ConnectionMode::rateLimited(std::chrono::milliseconds interval)
    Returns a FunnelConnection mode with RateLimitCalls and \a interval; see
    QtFastConnect::rateLimit().
*/

/*!
    \fn QtFastConnect::ConnectionMode QtFastConnect::ConnectionMode::combinedWith(QtFastConnect::ConnectionMode other) const
    Returns a mode with the bits of this mode and of \a other, and the longer of their
    rate-limit intervals if both give one; \c{operator|} uses it.
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
        if the signal of the sender already has a connection to the same slot of the receiver.
        A member function pointer is compared with ==, as Qt does, with every connection to it
        of any type, made with QObject::connect() or funnel (and QObject::connect() with
        Qt::UniqueConnection sees funnel connections the same way); a method given by name or
        by QMetaMethod is compared with the funnel connections made by name or by
        QMetaMethod. Qt's check and the insertion are one step under Qt's signal-slot locks.
        With a functor it prints a warning and fails, as QObject::connect() does.
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

/*!
    \typealias QtFastConnect::BatchOf
    \brief The list a batched slot takes for a signal.

    \c{BatchOf<decltype(&Sender::signal)>} is \c{QList<T>} for a signal with one argument of
    type \c T (decayed: \c{const QString &} gives \c{QList<QString>}), and
    \c{QList<std::tuple<T1, T2, ...>>} for several. See connectBatched().
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot, QtFastConnect::ConnectionMode mode)

    Connects \a signal of \a sender to \a slot of \a receiver through
    QFunnel::globalInstance() as a batched connection: \a slot takes one parameter, a
    QtFastConnect::BatchOf the signal (\c{QList<T>}, or \c{QList<std::tuple<...>>} for several
    arguments; by value, const reference or rvalue reference), and runs once for a run of
    pending calls instead of once per call. Any thread may call it; the slot runs in the thread
    \a receiver lives in, like a funnel connection's.

    A batch holds the calls of this connection that wait consecutively for \a receiver when its
    thread delivers them, in emission order, at most 4,096 of them: in practice everything one
    emitting thread emitted since the relay's previous round (calls of other connections to the
    same receiver in between start a new batch). Each argument is copied once at emit (moved
    with QtFastConnect::MoveArguments) and moved into the list, never copied again. A batch of
    n calls counts as n delivered calls in QFunnel::statistics(), and each call holds one unit
    of the funnel's capacity until its batch ran. sender() is valid in the slot. Everything
    else is as for connect(): the overflow policies apply per call (DropOldest drops the oldest
    calls before they join a batch), pending batches follow a receiver to another thread, and a
    destroyed receiver's calls are discarded unrun.

    This is the shape for slots whose cost is per batch rather than per item: one
    \c{beginInsertRows()} for many rows, one \c{appendPlainText()} of many lines, one chart
    update. The idea is what applications build by hand with a mutex-guarded buffer drained by
    a timer, and what QFutureWatcher::resultsReadyAt() reports for QtConcurrent's results; here
    the buffer is the funnel's bounded queue.

    With QtFastConnect::RateLimitCalls (or QtFastConnect::rateLimit()) in \a mode the slot runs
    at most once per interval, with everything emitted since its previous batch (not capped at
    4,096 calls): nothing is coalesced or dropped; the calls wait in the receiver's thread,
    holding their capacity, until the interval has passed. The interval is measured between the
    starts of the delivery passes that run two batches. The rate-limited batched connections of
    one receiver come due together: those due within one interval of the first wait for the last
    of them, and so does one that comes due while such a group waits, and their batches then run
    in one delivery pass (a view lays out once for all of them). Make the funnel's capacity (QFunnel::setCapacity()) at least the calls emitted in one
    interval, or the producers wait for the next batch. For only the newest call per row or id,
    pass QtFastConnect::latestPerKey().

    A slot that does not take the batch fails to compile, with a message naming the expected
    type; a signal without arguments too. QtFastConnect::CoalesceCalls in \a mode prints a
    warning and returns an invalid connection (a batch delivers every call; see latestPerKey());
    so does everything connect() refuses.
*/

/*!
    \fn template <typename Func1, typename Func2, typename KeyFn> QMetaObject::Connection QtFastConnect::connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot, QtFastConnect::LatestPerKey<KeyFn> key, QtFastConnect::ConnectionMode mode)
    \overload

    Keyed coalescing: of the calls in a batch whose \a key function returns equal keys, only
    the newest reaches the slot, in the place of its emission among the others; the superseded
    ones are destroyed unrun and counted as coalesced (QFunnel::coalescedCalls()), so that
    \c{emitted == delivered + dropped + discarded + coalesced} still holds. Make \a key with
    QtFastConnect::latestPerKey(). This is what a view of rows or sensors wants: the newest
    value per row, however many updates of it the workers emitted since the last batch.
*/

/*!
    \class QtFastConnect::LatestPerKey
    \inmodule QtFastConnect
    \brief The key function of a batched connection's keyed coalescing.

    Made by QtFastConnect::latestPerKey(); passed to connectBatched().
*/

/*!
    \fn template <typename KeyFn> QtFastConnect::LatestPerKey<std::decay_t<KeyFn>> QtFastConnect::latestPerKey(KeyFn &&key)

    Returns keyed coalescing for connectBatched() with the function \a key, called in the
    receiver's thread with the signal's arguments (as const references, like a slot) and
    returning the key: a type with qHash() and \c{operator==}, such as a row number, an id or a
    file name. It costs one QHash insert and lookup per call of a batch.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connectBatched(const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const QObject *context, Func2 &&functor, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal to \a functor, which takes the batch and runs in the thread of
    \a context.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connectBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const typename QtPrivate::FunctionPointer<Func2>::Object *receiver, Func2 slot, QtFastConnect::ConnectionMode mode)
    \overload

    Delivers through \a funnel instead of the global funnel.
*/

/*!
    \fn template <typename Func1, typename Func2> QMetaObject::Connection QtFastConnect::connectBatched(QFunnel *funnel, const typename QtPrivate::FunctionPointer<Func1>::Object *sender, Func1 signal, const QObject *context, Func2 &&functor, QtFastConnect::ConnectionMode mode)
    \overload

    Connects \a signal to \a functor, run in the thread of \a context, through \a funnel.
*/

QT_END_NAMESPACE

#include "moc_qfastconnect.cpp"
