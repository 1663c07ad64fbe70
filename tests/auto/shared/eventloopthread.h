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
    // Direct: runs in ~QObject, in the deleting thread, before the memory is freed. No
    // capture: the functor's own memory must not be read before the acquire.
    QObject::connect(object, &QObject::destroyed, [](QObject *o) { __tsan_acquire(o); });
    // After the connect: the connection itself is among what the deleting thread reads.
    __tsan_release(object);
#endif
    object->deleteLater();
}

#endif // EVENTLOOPTHREAD_H
