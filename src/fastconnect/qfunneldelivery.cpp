// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunneldelivery_p.h"
#include "qfunnelcore_p.h"
#include "qfunnelqtcompat_p.h"
#include "qfunnelreceiverguard_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qthread.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qobject_p_p.h>
#include <QtCore/private/qthread_p.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

#if defined(__SANITIZE_THREAD__)
#  include <sanitizer/tsan_interface.h>
// The wake-up event, and everything written before it, reaches the inbox's thread through Qt's
// post-event list. Qt is not built with ThreadSanitizer, so tell it about that hand-off.
#  define QFC_ANNOTATE_RELEASE(addr) __tsan_release(addr)
#  define QFC_ANNOTATE_ACQUIRE(addr) __tsan_acquire(addr)
#else
#  define QFC_ANNOTATE_RELEASE(addr) do { } while (false)
#  define QFC_ANNOTATE_ACQUIRE(addr) do { } while (false)
#endif

namespace {
const QEvent::Type WakeEvent = QEvent::Type(QEvent::registerEventType());
} // namespace

QFunnelInbox::QFunnelInbox(QFunnelCore *core, QThreadData *threadData)
    : m_core(core), m_threadData(threadData)
{
}

QFunnelInbox::~QFunnelInbox()
{
    dropAll();
}

void QFunnelInbox::push(QFunnelCall *top, QFunnelCall *bottom)
{
    QFunnelCall *old = m_head.load(std::memory_order_relaxed);
    do {
        bottom->next = old;
        // release: publishes the calls (and their arguments) to the inbox's thread.
    } while (!m_head.compare_exchange_weak(old, top, std::memory_order_release,
                                           std::memory_order_relaxed));
    if (!old)
        postWake();
}

void QFunnelInbox::postWake()
{
    QEvent *wake = new QEvent(WakeEvent);
    QFC_ANNOTATE_RELEASE(this);
    QCoreApplication::postEvent(this, wake);
}

bool QFunnelInbox::event(QEvent *e)
{
    QFC_ANNOTATE_ACQUIRE(this);
    if (e->type() == WakeEvent) {
        deliver();
        return true;
    }
    return QObject::event(e);
}

void QFunnelInbox::takeAll()
{
    // acquire: pairs with push()'s release. The inbox is idle again from here on, so a call
    // pushed while this pass runs posts a new wake-up: a slot that runs a nested event loop
    // (a modal dialog, say) keeps receiving calls, as with Qt's queued connections.
    QFunnelCall *c = m_head.exchange(nullptr, std::memory_order_acquire);
    // The chain is newest first; reverse it onto the end of the pending list.
    QFunnelCall *first = nullptr;
    QFunnelCall *last = nullptr;
    while (c) {
        QFunnelCall *next = c->next;
        c->next = first;
        first = c;
        if (!last)
            last = c;
        c = next;
    }
    if (!first)
        return;
    if (m_last)
        m_last->next = first;
    else
        m_first = first;
    m_last = last;
}

void QFunnelInbox::deliver()
{
    // A nested pass (a slot re-entered the event loop) already holds the pass lock.
    const bool nested = m_inPass;
    if (!nested)
        m_passLock.lock();
    if (!m_core) {
        dropAll();
    } else {
        m_inPass = true;
        runPass();
        m_inPass = nested;
    }
    if (!nested)
        m_passLock.unlock();
}

void QFunnelInbox::runPass()
{
    QFunnelCore *core = m_core;
    // A pass delivers what was queued when it started (a slot that emits again is served by
    // the next pass), within a budget; then it yields to the event loop.
    takeAll();
    if (Q_UNLIKELY(core->evicting()))
        evictOldest();
    // Started at the first budget check: a short pass (an idle funnel's single call) does not
    // read the clock before its slot runs.
    QElapsedTimer clock;
    qsizetype settled = 0;
    int count = 0;
    while (m_first) {
        QFunnelCall *c = m_first;
        m_first = c->next;
        if (!m_first)
            m_last = nullptr;
        settled += deliverOne(c);
        if (++count % 128 == 0) {
            if (count >= PassBudgetCalls || (clock.isValid() && clock.hasExpired(PassBudgetMs)))
                break;
            if (!clock.isValid())
                clock.start();
            if (Q_UNLIKELY(core->evicting()))
                evictOldest();
        }
    }
    core->releaseCredits(settled);
    if (core->isStopped())
        dropAll(); // stop() found this pass running and left the rest to it
    else if (m_first && !m_head.load(std::memory_order_relaxed))
        postWake(); // out of budget; a non-empty m_head already has a wake-up on its way
}

// Returns the number of credits the call gives back (0 if it was forwarded).
qsizetype QFunnelInbox::deliverOne(QFunnelCall *call)
{
    QFunnelSlotObject *so = call->slotObject;
    const QFunnelReceiverGuard::State st = so->guard->state();
    // Checked per call, not per pass: stop() does not wait for a running pass (its slot may
    // wait for stop()'s thread), so once stop() has returned no further slot may start.
    if (Q_UNLIKELY(m_core->isStopped() || st.threadData != m_threadData
                   || (so->mode & QtFastConnect::CoalesceCalls))) {
        return deliverSpecial(call, st);
    }
    run(call, st.receiver);
    return 1;
}

void QFunnelInbox::run(QFunnelCall *call, QObject *receiver)
{
    QFunnelSlotObject *so = call->slotObject;
    bump(m_delivered);
    if (QObjectPrivate::ConnectionData *cd = QObjectPrivate::get(receiver)->connections.loadRelaxed()) {
        // What sender() and senderSignalIndex() read; they check that the sender is still
        // connected, exactly as for Qt's own queued calls.
        QFunnelSenderScope senderScope(receiver, so->sender, so->signalIndex, cd);
        so->run(receiver, call);
    } else {
        so->run(receiver, call);
    }
    // After the sender scope's last look at the receiver: destroying the receiver cuts the
    // connection, which releases this slot object too, so the reference orders the two for
    // ThreadSanitizer (which cannot see Qt's own locks do it as well).
    so->deref();
}

// Out of line, so that deliverOne() saves no registers for these: the funnel stopped, the
// receiver was destroyed or moved to another thread, or the connection coalesces its calls.
Q_NEVER_INLINE qsizetype QFunnelInbox::deliverSpecial(QFunnelCall *call,
                                                      QFunnelReceiverGuard::State st)
{
    QFunnelSlotObject *so = call->slotObject;
    if (m_core->isStopped()) {
        so->destroyCall(call);
        m_core->countDropped();
        return 1;
    }
    if (!st.receiver) {
        // The receiver was destroyed: like Qt, never call, just free the arguments.
        so->destroyCall(call);
        bump(m_discarded);
        return 1;
    }
    if (st.threadData != m_threadData) {
        // The receiver moved to another thread since the call was routed: follow it.
        if (!st.threadData->thread.loadAcquire()) {
            qWarning("QFunnel: receiver %s(%p) has no thread affinity any more; call dropped",
                     st.receiver->metaObject()->className(), static_cast<void *>(st.receiver));
            so->destroyCall(call);
            m_core->countDropped();
            return 1;
        }
        QFunnelInbox *dest = m_core->inboxFor(st.threadData);
        so->target.store(dest, std::memory_order_release);
        call->next = nullptr;
        dest->push(call, call);
        return 0;
    }
    // CoalesceCalls: only the latest call of the connection runs. The comparison cannot be
    // fooled by a reused address: a newer call cannot get this call's memory while this call
    // exists.
    QFunnelCall *expected = call;
    if (!so->latest.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) {
        so->destroyCall(call);
        bump(m_coalesced);
        return 1;
    }
    run(call, st.receiver);
    return 1;
}

// DropOldest, with m_passLock held: while the funnel is over its capacity, the oldest calls
// waiting for this thread make room for the newer ones their producers were admitted with.
void QFunnelInbox::evictOldest()
{
    while (m_first && m_core->tryEvictOne()) {
        QFunnelCall *c = m_first;
        m_first = c->next;
        if (!m_first)
            m_last = nullptr;
        c->slotObject->destroyCall(c);
    }
}

// With m_passLock held (or from the destructor).
void QFunnelInbox::dropAll()
{
    takeAll();
    qsizetype n = 0;
    while (m_first) {
        QFunnelCall *c = m_first;
        m_first = c->next;
        c->slotObject->destroyCall(c);
        ++n;
    }
    m_last = nullptr;
    if (m_core && n) {
        m_core->countDropped(n);
        m_core->releaseCredits(n);
    }
}

void QFunnelInbox::dropPendingOnStop()
{
    // tryLock: the pass may be running a slot that waits for this very thread.
    if (!m_passLock.tryLock())
        return;
    dropAll();
    m_passLock.unlock();
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
