// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// The application's main thread, for what a relay thread must not do itself: run user code
// (QFunnelInboxRegistry::deferDrop()).

#include "qfunnelcore_p.h"

#include <QtFastConnect/qfastconnect.h>

#include <QtCore/qcoreapplication.h>
#include <QtCore/qmutex.h>
#include <QtCore/private/qobject_p.h>

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
// A call of fn(core) in the application's thread: a meta-call event, as Qt posts for a queued
// call. Holds a reference on core until it ran, or was destroyed unrun (the application went
// away first).
class QFunnelApplicationTask final : public QAbstractMetaCallEvent
{
public:
    QFunnelApplicationTask(QFunnelCore *core, void (*fn)(QFunnelCore *))
        : QAbstractMetaCallEvent(nullptr, -1), m_core(core), m_fn(fn)
    {
        m_core->ref();
    }
    ~QFunnelApplicationTask() override
    {
        qfcAnnotateAcquire(this); // may be deleted unrun, in another thread
        m_core->deref();
    }
    void placeMetaCall(QObject *) override
    {
        qfcAnnotateAcquire(this); // [P21] the event travelled through Qt's posted-event list
        m_fn(m_core);
    }

private:
    QFunnelCore *const m_core;
    void (*const m_fn)(QFunnelCore *);
};
} // namespace

bool runInApplicationThread(QFunnelCore *core, void (*fn)(QFunnelCore *))
{
    QMutexLocker locker(&g_applicationLock);
    if (!g_application)
        return false;
    auto *task = new QFunnelApplicationTask(core, fn);
    qfcAnnotateRelease(task); // [P21]
    QCoreApplication::postEvent(g_application, task);
    return true;
}
} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
