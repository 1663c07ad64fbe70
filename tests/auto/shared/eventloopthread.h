// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef EVENTLOOPTHREAD_H
#define EVENTLOOPTHREAD_H

#include <QtCore/qobject.h>
#include <QtCore/qthread.h>

#if defined(__SANITIZE_THREAD__)
#  include <sanitizer/tsan_interface.h>
#endif

// A thread running an event loop, for receivers that live outside the main thread; quits and
// joins when destroyed.
class EventLoopThread : public QThread
{
public:
    ~EventLoopThread() override
    {
        quit();
        wait();
    }
};

// deleteLater() for an object living in an EventLoopThread: it is destroyed there, after
// everything the calling thread did to it. That order comes from Qt's post-event list, which
// ThreadSanitizer cannot see (Qt is not instrumented), so it is annotated here as well.
inline void deleteLaterInItsThread(QObject *object)
{
#if defined(__SANITIZE_THREAD__)
    // Posted before the deferred delete, so it runs first in that thread, before any
    // destroyed() handler (a handler connected here would run after the earlier ones). No
    // capture: reading one would itself race with this thread's write of it.
    QMetaObject::invokeMethod(
            object, [] { __tsan_acquire(QThread::currentThread()); }, Qt::QueuedConnection);
    __tsan_release(object->thread());
#endif
    object->deleteLater();
}

#endif // EVENTLOOPTHREAD_H
