// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef MOVABLEOBJECT_H
#define MOVABLEOBJECT_H

#include <QtCore/qobject.h>
#include <QtCore/qthread.h>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

// A receiver that the test can move to another thread while it lives in a running one:
// QObject::moveToThread() must be called from the object's own thread, so moveFromItsThread()
// runs it there (Qt::BlockingQueuedConnection). That hand-off goes through Qt's post-event list
// and a semaphore inside Qt, which ThreadSanitizer cannot see, so it is annotated; the target
// travels in a member for the same reason (an argument would be read by moc code first).
class MovableObject : public QObject
{
    Q_OBJECT
public:
    void moveFromItsThread(QThread *thread)
    {
        m_target = thread;
#if defined(__SANITIZE_THREAD__)
        __tsan_release(this);
#endif
        QMetaObject::invokeMethod(this, "moveToTarget", Qt::BlockingQueuedConnection);
#if defined(__SANITIZE_THREAD__)
        __tsan_acquire(this);
#endif
    }

    Q_INVOKABLE void moveToTarget()
    {
#if defined(__SANITIZE_THREAD__)
        __tsan_acquire(this);
#endif
        moveToThread(m_target);
#if defined(__SANITIZE_THREAD__)
        __tsan_release(this);
#endif
    }

private:
    QThread *m_target = nullptr;
};

#endif // MOVABLEOBJECT_H
