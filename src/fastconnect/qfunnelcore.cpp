// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelcore_p.h"
#include "qfunnelprocessinghook_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelroute_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelCore::QFunnelCore()
{
    QFunnelProcessingHook::addCore(this);
}

QFunnelCore::~QFunnelCore()
{
    // No route, lane, inbox or call exists any more: each holds a reference.
    stop();
}

void QFunnelCore::stop()
{
    // [P10 stop] seq_cst: with the producers' re-check after queueing (isStopped()).
    if (m_stopped.exchange(true, std::memory_order_seq_cst))
        return;
    QFunnelProcessingHook::removeCore(this);
    m_admission.wakeBlockedProducers();
    m_relay.stopAndJoin();
    sweepStoppedQueue();
    m_parkedTimer.stop();
    m_inboxes.dropAllPending();
    m_inboxes.dropAllDeferred(); // and the references the deferred drops hold
    m_inboxes.releaseRetained();
    m_queue.releaseSpares();
}

void QFunnelCore::sweepStoppedQueue()
{
    ref(); // dropping the last call may release the last route, and with it this core
    {
        QMutexLocker locker(&m_sweepLock);
        quint64 dropped = 0;
        bool tookStopToken = false;
        for (QFunnelBatch *b = nullptr; m_queue.tryPop(b);) {
            if (!b) {
                // A producer sweeping while stop() waits for the relay may get here first; the
                // relay has not seen the token then (it exits on it), so it goes back below.
                tookStopToken = true;
                continue;
            }
            if (QFunnelFlushMarker::is(b)) {
                static_cast<QFunnelFlushMarker *>(b)->complete();
                continue;
            }
            // The relay's drain, minus the delivery: its producer may still be appending.
            QFunnelBatchCursor cursor { b };
            for (;;) {
                dropped += cursor.drain([](QFunnelCall *call) { call->route->destroyCall(call); });
                const auto release = cursor.release(false);
                if (release == QFunnelBatchCursor::Release::Free)
                    m_queue.recycle(b);
                if (release != QFunnelBatchCursor::Release::Keep) {
                    m_queue.handedBack(1);
                    break;
                }
            }
        }
        if (dropped) {
            countDropped(dropped);
            m_admission.releaseCredits(qsizetype(dropped));
        }
        if (tookStopToken)
            m_queue.push(nullptr);
    }
    deref();
}

void QFunnelCore::addEmittedCounter(const std::atomic<quint64> *c)
{
    QMutexLocker locker(&m_countersLock);
    m_emittedCounters.append(c);
}

void QFunnelCore::removeEmittedCounter(const std::atomic<quint64> *c)
{
    QMutexLocker locker(&m_countersLock);
    m_emittedCounters.removeOne(c);
    m_retiredEmitted += c->load(std::memory_order_relaxed);
}

quint64 QFunnelCore::emittedCalls()
{
    QMutexLocker locker(&m_countersLock);
    quint64 n = m_retiredEmitted + m_emittedWithoutLane.load(std::memory_order_relaxed);
    for (const std::atomic<quint64> *c : std::as_const(m_emittedCounters))
        n += c->load(std::memory_order_relaxed);
    return n;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
