// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELFLUSH_P_H
#define QFUNNELFLUSH_P_H

//
//  W A R N I N G
//  -------------
//
// This file is not part of the QtFastConnect API. It exists purely as an
// implementation detail. This header file may change from version to
// version without notice, or even be removed.
//
// We mean it.
//

#include "qfunnelqueue_p.h"

#include <condition_variable>
#include <memory>
#include <mutex>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelCore;

// A flush request travels through the queue like a producer's batch, behind the batches its
// thread queued before. The relay completes it at the end of the round that popped it: that
// round has routed every call those batches held when it was pushed, so they are all in their
// inboxes. A stopped funnel's sweep completes it too. It carries no calls.
struct QFunnelFlushMarker : QFunnelBatch
{
    static constexpr quint32 Marker = 1u << 29; // above any call count

    QFunnelFlushMarker() { state.store(Marker, std::memory_order_relaxed); }
    static bool is(const QFunnelBatch *b) noexcept { return b->load() & Marker; }

    void complete() // relay or sweeping thread; the last touch of the marker
    {
        // The flushing thread frees the marker as soon as it has the lock, which may be while
        // this thread is still inside the unlock: MinGW's pthread mutex (std::mutex there)
        // reads its event handle after it has released the lock, and SetEvent() on a handle
        // closed meanwhile signals whatever object got its number next (under Wine, oneTBB's
        // event for the sleeping relay: its wait list corrupted, tst_lifetime::torture crashed
        // or hung). The lock and its condition live apart, until both ends let go.
        const std::shared_ptr<Completion> completion = m_completion;
        std::lock_guard<std::mutex> locker(completion->lock);
        completion->done = true;
        completion->completed.notify_all();
    }
    void wait() // the flushing thread
    {
        std::unique_lock<std::mutex> locker(m_completion->lock);
        m_completion->completed.wait(locker, [this] { return m_completion->done; });
    }

private:
    struct Completion
    {
        std::mutex lock;
        std::condition_variable completed;
        bool done = false; // guarded by lock
    };
    const std::shared_ptr<Completion> m_completion = std::make_shared<Completion>();
};

class QFunnelLane;

// Returns once every call the calling thread emitted into core before is in its receiver's
// inbox, with a wake-up posted. lane: the calling thread's lane for core, if the caller has it.
void flushCurrentThread(QFunnelCore *core, QFunnelLane *lane = nullptr);
// Returns once the relay has ended a round that started after this call: every call that any
// thread had handed to the relay before is in its receiver's inbox, with a wake-up posted. Any
// thread but the relay's; not in a stopped funnel's relay round.
void waitForRelayRound(QFunnelCore *core);
// flushCurrentThread(), then a barrier wake-up to each of core's inboxes with calls pending,
// whose pass runs to its fence without yielding: the calling thread's calls run before any
// event it posts afterwards (QFunnel::flush(), the emission hook).
void flushWithBarriers(QFunnelCore *core, QFunnelLane *lane = nullptr);

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELFLUSH_P_H
