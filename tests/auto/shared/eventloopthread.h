// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef EVENTLOOPTHREAD_H
#define EVENTLOOPTHREAD_H

#include <QtCore/qobject.h>
#include <QtCore/qthread.h>

#include <atomic>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
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
        acquireRun();
    }
    // After wait() returned true: what the thread did in its event loop happens before what the
    // caller does next, for ThreadSanitizer too (it does not see that QThread::wait() orders
    // it: Qt is not instrumented).
    void acquireRun() const { (void)m_ranToEnd.load(std::memory_order_acquire); }

protected:
    void run() override
    {
        QThread::run();
        m_ranToEnd.store(true, std::memory_order_release);
    }

private:
    std::atomic<bool> m_ranToEnd { false };
};

// Makes the thread object lives in acquire everything the calling thread did so far, in a way
// ThreadSanitizer sees: Qt's post-event list orders it too, but Qt is not instrumented. A
// queued functor in the object's thread waits for this thread's release store, made after the
// functor was posted, so everything this thread did (the functor's own allocation included)
// happens before whatever the object's thread does next. Called from one thread at a time; a
// no-op without ThreadSanitizer.
inline void synchronizeWithItsThread(QObject *object)
{
#if defined(__SANITIZE_THREAD__)
    static std::atomic<unsigned> released { 0 };
    static std::atomic<unsigned> acquired { 0 };
    if (object->thread() != QThread::currentThread()) {
        const unsigned ticket = released.load(std::memory_order_relaxed) + 1;
        QMetaObject::invokeMethod(
                object,
                [] {
                    while (released.load(std::memory_order_acquire)
                           == acquired.load(std::memory_order_relaxed)) {
                        QThread::yieldCurrentThread();
                    }
                    acquired.fetch_add(1, std::memory_order_release);
                },
                Qt::QueuedConnection);
        released.store(ticket, std::memory_order_release);
        while (acquired.load(std::memory_order_acquire) != ticket)
            QThread::yieldCurrentThread();
    }
#else
    Q_UNUSED(object);
#endif
}

// deleteLater() for an object living in an EventLoopThread: it is destroyed there, after
// everything the calling thread did to it. That order comes from Qt's post-event list, which
// ThreadSanitizer cannot see, so the object's thread acquires before the deferred delete is
// even posted, so before any destroyed() handler runs, and even if the thread quits before its
// event loop gets to the delete.
inline void deleteLaterInItsThread(QObject *object)
{
    synchronizeWithItsThread(object);
    object->deleteLater();
}

#endif // EVENTLOOPTHREAD_H
