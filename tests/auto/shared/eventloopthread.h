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
    // A handshake through atomics ThreadSanitizer sees: the object's thread runs a queued
    // functor that waits for this thread's release store, made after the functor was posted,
    // so everything this thread did (the functor's own allocation included) happens before
    // whatever the object's thread does next. Called from one thread at a time.
    static std::atomic<unsigned> released { 0 };
    static std::atomic<unsigned> acquired { 0 };
    if (object->thread() != QThread::currentThread()) {
        const unsigned ticket = released.load(std::memory_order_relaxed) + 1;
        QMetaObject::invokeMethod(object, [] {
            while (released.load(std::memory_order_acquire)
                   == acquired.load(std::memory_order_relaxed)) {
                QThread::yieldCurrentThread();
            }
            acquired.fetch_add(1, std::memory_order_release);
        }, Qt::QueuedConnection);
        released.store(ticket, std::memory_order_release);
        while (acquired.load(std::memory_order_acquire) != ticket)
            QThread::yieldCurrentThread();
    }
#endif
    object->deleteLater();
}

#endif // EVENTLOOPTHREAD_H
