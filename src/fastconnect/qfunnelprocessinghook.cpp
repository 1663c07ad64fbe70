// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Delivery stage, at the receiver thread's side: calls emitted before an event processing
// starts run in it (see qfunnelprocessinghook_p.h).

#include "qfunnelprocessinghook_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelqueue_p.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qabstracteventdispatcher.h>
#include <QtCore/qmetaobject.h>
#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>
#include <QtCore/qthread.h>
#include <QtCore/qvarlengtharray.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qthread_p.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

struct Registry
{
    QBasicMutex lock;
    // Without references: a core leaves in stop(), before its last reference can go; the hook
    // takes one with tryRef() while it waits.
    QList<QFunnelCore *> cores;
    // The dispatchers hooked, each until its destroyed(), and the connections that the library's
    // unloading cuts (they call into its code).
    struct Hooked
    {
        QAbstractEventDispatcher *dispatcher;
        QMetaObject::Connection connections[3];
    };
    QList<Hooked> hooked;
    QList<QMetaObject::Connection> watches; // to QThread::started
};

// Never destroyed: cores stop, and dispatchers go, during static destruction too.
Registry &registry()
{
    static Registry *r = new Registry;
    return *r;
}

std::atomic<quint32> g_epoch { 0 }; // see QFunnelProcessingHook::epoch()

// Qt's slot object of our own type for the hook's connections, made in any thread and called
// and destroyed in the dispatcher's (or the starting thread's): Qt publishes it through its own
// locks, which ThreadSanitizer does not see, so the hand-off is annotated.
class QFunnelHookSlot : public QtPrivate::QSlotObjectBase
{
public:
    explicit QFunnelHookSlot(void (*fn)(void **)) : QSlotObjectBase(&impl), m_fn(fn)
    {
        qfcAnnotateRelease(this); // [P33 make]
    }

    // Connects signal_index of sender, directly, to fn (called with the signal's arguments).
    static QMetaObject::Connection connect(const QObject *sender, int signalIndex,
                                           void (*fn)(void **))
    {
        return QObjectPrivate::connect(sender, signalIndex, new QFunnelHookSlot(fn),
                                       Qt::DirectConnection);
    }

private:
    static void impl(int which, QSlotObjectBase *self, QObject *, void **args, bool *ret)
    {
        auto *that = static_cast<QFunnelHookSlot *>(self);
        switch (which) {
        case Call:
            qfcAnnotateAcquire(that); // [P33 call]
            that->m_fn(args);
            break;
        case Destroy:
            qfcAnnotateAcquire(that); // [P33 drop]
            delete that;
            break;
        case Compare:
            *ret = false; // no disconnect() by slot can name it
            break;
        }
    }

    void (*const m_fn)(void **);
};

// In the processing thread, before its posted events are sent.
void processingStarts(void **)
{
    QVarLengthArray<QFunnelCore *, 4> busy;
    {
        Registry &r = registry();
        QMutexLocker locker(&r.lock);
        for (QFunnelCore *core : std::as_const(r.cores)) {
            if (core->queue().hasBatchesInRelay() && core->tryRef())
                busy.append(core);
        }
    }
    for (QFunnelCore *core : busy) {
        if (!core->isStopped())
            waitForRelayRound(core);
        core->deref(); // may be the last: stop() and destruction then run here
    }
}

// A hooked dispatcher's destroyed(QObject *).
void forgetDispatcher(void **args)
{
    QObject *dispatcher = *reinterpret_cast<QObject **>(args[1]);
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    r.hooked.removeIf(
            [dispatcher](const Registry::Hooked &h) { return h.dispatcher == dispatcher; });
    g_epoch.fetch_add(1, std::memory_order_relaxed);
}

// d stays alive meanwhile: it is the calling thread's, or the caller holds its thread's
// QThreadPrivate::mutex, under which Qt takes a finishing thread's dispatcher away.
void hook(QAbstractEventDispatcher *d)
{
    if (!d)
        return;
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    for (const Registry::Hooked &h : std::as_const(r.hooked)) {
        if (h.dispatcher == d)
            return;
    }
    // Both: the Unix dispatcher emits awake() at the start of each processing, the glib one
    // awake() for an explicit QCoreApplication::processEvents() and aboutToBlock() for an event
    // loop's iteration (before it polls, so a wake-up posted by the wait is sent without
    // blocking). Connected under the lock: Qt calls no slot under its own locks, so no lock
    // order is reversed.
    static const int awake =
            QMetaMethod::fromSignal(&QAbstractEventDispatcher::awake).methodIndex();
    static const int aboutToBlock =
            QMetaMethod::fromSignal(&QAbstractEventDispatcher::aboutToBlock).methodIndex();
    static const int destroyed = QMetaMethod::fromSignal(&QObject::destroyed).methodIndex();
    r.hooked.append(
            Registry::Hooked { d,
                               { QFunnelHookSlot::connect(d, awake, processingStarts),
                                 QFunnelHookSlot::connect(d, aboutToBlock, processingStarts),
                                 QFunnelHookSlot::connect(d, destroyed, forgetDispatcher) } });
}

// A watched thread's QThread::started, in that thread.
void threadStarted(void **)
{
    hook(QAbstractEventDispatcher::instance());
}

// The library is unloaded (a plugin that linked it; Qt 6.8 unloads them at exit): no
// dispatcher or thread may call into it afterwards.
struct Unhook
{
    ~Unhook()
    {
        Registry &r = registry();
        QMutexLocker locker(&r.lock);
        for (const Registry::Hooked &h : std::as_const(r.hooked)) {
            for (const QMetaObject::Connection &c : h.connections)
                QObject::disconnect(c);
        }
        r.hooked.clear();
        for (const QMetaObject::Connection &c : std::as_const(r.watches))
            QObject::disconnect(c);
        r.watches.clear();
    }
} unhook;

} // namespace

void QFunnelProcessingHook::watch(QThread *thread)
{
    // Connected first: a thread that starts meanwhile is hooked by one or the other.
    static const int startedIndex = QMetaMethod::fromSignal(&QThread::started).methodIndex();
    const QMetaObject::Connection started =
            QFunnelHookSlot::connect(thread, startedIndex, threadStarted);
    {
        Registry &r = registry();
        QMutexLocker locker(&r.lock);
        // A handle to a thread that is gone does nothing: dropped now and then.
        r.watches.removeIf([](const QMetaObject::Connection &c) { return !c; });
        r.watches.append(started);
    }
    if (thread == QThread::currentThread())
        return hook(QAbstractEventDispatcher::instance());
    auto *d = static_cast<QThreadPrivate *>(QObjectPrivate::get(thread));
    QMutexLocker locker(&d->mutex);
    hook(d->data->eventDispatcher.loadRelaxed());
}

void QFunnelProcessingHook::hookCurrentThread()
{
    hook(QAbstractEventDispatcher::instance());
}

quint32 QFunnelProcessingHook::epoch() noexcept
{
    // Relaxed: the epoch only tells a delivery pass to look again (hookCurrentThread() takes
    // the registry's lock); a stale read delays that by a pass.
    return g_epoch.load(std::memory_order_relaxed);
}

void QFunnelProcessingHook::addCore(QFunnelCore *core)
{
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    r.cores.append(core);
}

void QFunnelProcessingHook::removeCore(QFunnelCore *core)
{
    Registry &r = registry();
    QMutexLocker locker(&r.lock);
    r.cores.removeOne(core);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
