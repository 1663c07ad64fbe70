// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelemissionhook_p.h"
#include "qfunnellane_p.h"

#include <QtCore/qthread.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qobject_p_p.h>
#include <QtCore/private/qthread_p.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

QSignalSpyCallbackSet *previous = nullptr; // the set ours replaced (QTest's -vs), if any
QSignalSpyCallbackSet previousSet = {}; // its callbacks, called first
QSignalSpyCallbackSet hookSet = {};

// Whether one of list's connections will post this emission's event, as
// QMetaObject::activate() decides it a moment later. Relaxed loads, as Qt's own there: Qt
// publishes a connection under its signal-slot lock before the connect returns, and a connect
// that happened before this emission is ordered before it by whatever ordered the two.
Q_ALWAYS_INLINE bool postsEvent(const QObjectPrivate::ConnectionList &list)
{
    for (const QObjectPrivate::Connection *c = list.first.loadRelaxed(); c;
         c = c->nextConnectionList.loadRelaxed()) {
        if (!c->receiver.loadRelaxed())
            continue; // disconnected, not yet cleaned up
        switch (c->connectionType) {
        case Qt::DirectConnection: // a funnel connection is one
            break;
        case Qt::AutoConnection:
            if (c->receiverThreadData.loadRelaxed()->threadId.loadRelaxed()
                != QThread::currentThreadId()) {
                return true;
            }
            break;
        default: // queued, blocking queued
            return true;
        }
    }
    return false;
}

Q_ALWAYS_INLINE bool emissionPostsEvent(QObject *sender, int signalIndex)
{
    // [P28 data] Acquire: made by another thread's connect
    // (QObjectPrivate::ensureConnectionData()), its fields are read.
    QObjectPrivate::ConnectionData *connections =
            QObjectPrivate::get(sender)->connections.loadAcquire();
    if (!connections)
        return false;
    // [P28 hold] Referenced as QMetaObject::activate() does: another thread's connect may
    // replace the signal vector meanwhile, and frees the old one only while nobody else holds a
    // reference. Never the last one: the sender, alive while it emits, holds its own.
    connections->ref.ref();
    // [P28 vector] Acquire, as QMetaObject::activate(): newer Qt publishes a resized vector with
    // a release store.
    const QObjectPrivate::SignalVector *vector = connections->signalVector.loadAcquire();
    const bool posts = vector
            && ((signalIndex < vector->count() && postsEvent(vector->at(signalIndex)))
                || postsEvent(vector->at(-1)));
    connections->ref.deref(); // [P28 hold]
    return posts;
}

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

// The connections first, the thread's lanes only for a signal that posts: a flood's own
// signal (funnel connections only, which are direct) costs no thread-local lookup.
void signalBegin(QObject *sender, int signalIndex, void **argv)
{
    if (previousSet.signal_begin_callback)
        previousSet.signal_begin_callback(sender, signalIndex, argv);
#if defined(__SANITIZE_THREAD__)
    // Qt's reads, as QMetaObject::activate() makes them a moment later, ordered with the sender's
    // destruction by Qt's own locks and atomics (QThread::wait(), a QMutex), which
    // ThreadSanitizer cannot see in an uninstrumented Qt: hidden from it as
    // QMetaObject::activate()'s are.
    __tsan_ignore_thread_begin();
    const bool posts = emissionPostsEvent(sender, signalIndex);
    __tsan_ignore_thread_end();
#else
    const bool posts = emissionPostsEvent(sender, signalIndex);
#endif
    if (Q_UNLIKELY(posts))
        QFunnelLane::flushThreadLanes();
}

// Restores the set ours replaced when the library is unloaded (a plugin that links it), so
// that Qt never calls into unmapped code. Another registration on top of ours stays.
struct Restorer
{
    ~Restorer()
    {
        if (qt_signal_spy_callback_set.loadAcquire() == &hookSet) // [P30 read]
            qt_register_signal_spy_callbacks(previous);
    }
} restorer;

} // namespace

void installEmissionHook()
{
    // Once per process, from the first thread that makes a lane; Qt publishes the set with a
    // release store, and QMetaObject::activate() loads it with acquire (see P30).
    static const bool installed = [] {
        previous = qt_signal_spy_callback_set.loadAcquire(); // [P30 read]
        if (previous)
            previousSet = *previous;
        hookSet = previousSet; // slot and end callbacks called by Qt directly, not through us
        hookSet.signal_begin_callback = &signalBegin;
        qt_register_signal_spy_callbacks(&hookSet);
        return true;
    }();
    Q_UNUSED(installed);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
