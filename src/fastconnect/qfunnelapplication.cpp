// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// The threads that run user code for the relay and the rate-limit timer, which must not
// (QFunnelInboxRegistry::deferDrop()): the thread a receiver was destroyed in, and the
// application's main thread; which is also the thread the global funnel lives in.

#include "qfunnelcore_p.h"
#include "qfunnelplatform_p.h"

#include <QtFastConnect/qfastconnect.h>

#include <QtCore/qabstracteventdispatcher.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qmutex.h>
#include <QtCore/qthread.h>
#include <QtCore/private/qcoreapplication_p.h>
#include <QtCore/private/qobject_p.h>

#include <utility>

QT_BEGIN_NAMESPACE

namespace {
// The application whose main thread drops what a relay must not (runInApplicationThread()); set
// and cleared by this module's pre- and post-routines, under its lock, so that a relay never
// posts to an application being destroyed.
QBasicMutex g_applicationLock;
QCoreApplication *g_application = nullptr; // guarded by g_applicationLock

void forgetApplication()
{
    QMutexLocker locker(&g_applicationLock);
    g_application = nullptr;
}

void noteApplication()
{
    QMutexLocker locker(&g_applicationLock);
    g_application = QCoreApplication::instance();
    qAddPostRoutine(forgetApplication);
}

} // namespace
Q_COREAPP_STARTUP_FUNCTION(noteApplication)

namespace QtFastConnectPrivate {
namespace {
// A call of fn(core) in another thread: a meta-call event, as Qt posts for a queued call.
// Holds a reference on core (if any) until it ran, or was destroyed unrun: the application went
// away first, or the thread's QFunnelLastThread (runAtExit: then fn runs anyway, in that
// thread).
class QFunnelThreadTask final : public QAbstractMetaCallEvent
{
public:
    QFunnelThreadTask(QFunnelCore *core, void (*fn)(QFunnelCore *), bool runAtExit = false)
        : QAbstractMetaCallEvent(nullptr, -1), m_core(core), m_fn(fn), m_runAtExit(runAtExit)
    {
        if (m_core)
            m_core->ref();
    }
    ~QFunnelThreadTask() override
    {
        qfcAnnotateAcquire(this); // [P21 take] may be deleted unrun, in another thread
        if (m_runAtExit)
            m_fn(m_core);
        if (m_core)
            m_core->deref();
    }
    void placeMetaCall(QObject *) override
    {
        qfcAnnotateAcquire(this); // [P21 take] it travelled through Qt's posted-event list
        m_runAtExit = false;
        m_fn(m_core);
    }

private:
    QFunnelCore *const m_core;
    void (*const m_fn)(QFunnelCore *);
    bool m_runAtExit;
};

// The calling thread's QFunnelLastThread and the object its tasks are posted to, which lives
// there; destroyed at the thread's exit, when the tasks still posted run (~QObject deletes them).
// Trivially destructible: a receiver destroyed in a later thread_local destructor finds no
// QFunnelLastThread (its calls go to the application's thread).
thread_local bool tlLastThreadClosed = false;
struct LastThreadOwner
{
    std::shared_ptr<QFunnelLastThread> thread = std::make_shared<QFunnelLastThread>();
    ~LastThreadOwner()
    {
        tlLastThreadClosed = true;
        thread->close();
    }
};
} // namespace

std::shared_ptr<QFunnelLastThread> QFunnelLastThread::current()
{
    // Only a thread with an event dispatcher runs posted tasks (as for a queued call).
    if (tlLastThreadClosed || !QAbstractEventDispatcher::instance())
        return nullptr;
    LastThreadOwner &owner = QFunnelThreadObject<LastThreadOwner>::local();
    if (!owner.thread->m_target)
        owner.thread->open();
    return owner.thread;
}

void QFunnelLastThread::open()
{
    auto *target = new QObject;
    QMutexLocker locker(&m_lock);
    m_target = target;
    m_id = QThread::currentThreadId();
}

void QFunnelLastThread::close()
{
    QObject *target;
    {
        QMutexLocker locker(&m_lock);
        target = std::exchange(m_target, nullptr);
    }
    delete target; // runs the tasks still posted to it, here
}

bool QFunnelLastThread::isCurrent() const
{
    // Also while close() runs the tasks still posted: they drop here.
    QMutexLocker locker(&m_lock);
    return m_id == QThread::currentThreadId();
}

bool QFunnelLastThread::run(QFunnelCore *core, void (*fn)(QFunnelCore *))
{
    // Under the lock: close() waits, so the target lives while the task is posted.
    QMutexLocker locker(&m_lock);
    if (!m_target)
        return false;
    auto *task = new QFunnelThreadTask(core, fn, true);
    qfcAnnotateRelease(task); // [P21 post]
    QCoreApplication::postEvent(m_target, task);
    return true;
}

bool runInApplicationThread(QFunnelCore *core, void (*fn)(QFunnelCore *))
{
    QMutexLocker locker(&g_applicationLock);
    if (!g_application)
        return false;
    auto *task = new QFunnelThreadTask(core, fn);
    qfcAnnotateRelease(task); // [P21 post]
    QCoreApplication::postEvent(g_application, task);
    return true;
}

QThread *applicationThread()
{
    QMutexLocker locker(&g_applicationLock);
    if (g_application)
        return g_application->thread();
    // Set by Qt when the first thread made its thread data (a QObject, a QThread, ...), never
    // null after that. [P31 read] Acquire: pairs with Qt's release store of it, so that the
    // QThread is seen constructed (Qt's own readers load it so).
    return QCoreApplicationPrivate::theMainThread.loadAcquire();
}
} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
