// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef EVENTLOOPTHREAD_H
#define EVENTLOOPTHREAD_H

#include <QtCore/qobject.h>
#include <QtCore/qthread.h>

#include <atomic>

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
// ThreadSanitizer cannot see (Qt is not instrumented), so it is annotated here as well: the
// object's thread acquires before the deferred delete is even posted, so before any destroyed()
// handler runs, and even if the thread quits before its event loop gets to the delete.
inline void deleteLaterInItsThread(QObject *object)
{
#if defined(__SANITIZE_THREAD__)
    static std::atomic<unsigned> acquired { 0 };
    if (object->thread() != QThread::currentThread()) {
        const unsigned before = acquired.load(std::memory_order_relaxed);
        // Released before the call is posted, so that the acquire in the object's thread
        // cannot run first. No capture: reading one would itself race with this thread.
        __tsan_release(object->thread());
        QMetaObject::invokeMethod(object, [] {
            __tsan_acquire(QThread::currentThread());
            acquired.fetch_add(1, std::memory_order_release);
        }, Qt::QueuedConnection);
        while (acquired.load(std::memory_order_acquire) == before)
            QThread::yieldCurrentThread();
    }
#endif
    object->deleteLater();
}

#endif // EVENTLOOPTHREAD_H
