// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELLANE_P_H
#define QFUNNELLANE_P_H

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

#include "qfastconnectglobal_p.h"
#include "qfunnelbatch_p.h"
#include "qfunnelqueue_p.h"
#include "qfunnelstamp_p.h"

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelInbox;
struct QFunnelCall;

// Capture stage, per producer thread and funnel: the batch this thread is filling, its credit
// reservation and its emission counter. Lives in a thread_local set; destroyed when the thread
// exits (or lazily once its funnel stopped).
class QFunnelLane
{
    Q_DISABLE_COPY_MOVE(QFunnelLane)
public:
    explicit QFunnelLane(QFunnelCore *core);
    ~QFunnelLane();

    QFunnelCore *core() const noexcept { return m_core; }
    // True when none of this thread's calls is in the relay's hands (its last batch was
    // sealed), so a direct hand-off to an inbox cannot overtake its earlier calls.
    // Inline: the capture asks on every call.
    bool canBypassRelay() const noexcept
    {
        if (m_handedOff)
            return false; // a full batch may not even have been popped yet
        return !m_open || (m_open->load() & QFunnelBatch::Sealed);
    }
    // The common case of a flood, inline: the open batch, still the relay's, takes the call and
    // is not full yet. Returns false, with the call not queued, otherwise: no open batch, a full
    // one, or one the relay sealed (then canBypassRelay() says so).
    bool appendToOpenBatch(QFunnelCall *call)
    {
        if (Q_LIKELY(m_open) && Q_LIKELY(m_count + 1 < QFunnelBatch::Capacity)
            && Q_LIKELY(m_open->append(m_count, call, stamp()))) {
            ++m_count;
            return true;
        }
        return false;
    }
    // A call's stamp (causal order, qfunnelrelay.cpp): the clock, or this lane's last stamp
    // again while its batches are the only ones queued for or held by the relay (a thread
    // flooding alone pays no clock read): no call of another thread emitted before it is still
    // on its way (QFunnelQueue::isSoleProducer()), and one emitted after it is stamped later.
    quint64 stamp() noexcept
    {
        if (m_queue->isSoleProducer(m_serial))
            return m_lastStamp;
        return m_lastStamp = QFunnelStamp::now();
    }
    // The lane's number, unique in the process (never reused, unlike its address), or 0 once
    // 2^32 - 1 lanes were made (then its calls always read the clock).
    quint32 serial() const noexcept { return m_serial; }

    // Queues call in a batch for the relay, starting (or restarting a sealed) one if needed.
    void append(QFunnelCall *call)
    {
        if (!appendToOpenBatch(call))
            appendSlow(call, m_open && m_count + 1 < QFunnelBatch::Capacity);
    }

    // Whether this thread emitted calls since its last flush() (this thread only).
    bool emittedSinceFlush() const noexcept
    {
        return m_emitted.load(std::memory_order_relaxed) != m_emittedAtFlush;
    }
    void noteFlushed() noexcept { m_emittedAtFlush = m_emitted.load(std::memory_order_relaxed); }

    // For the emission hook (qfunnelemissionhook_p.h): flushes each of the calling thread's
    // lanes that emitted calls since its last flush (flushWithBarriers()). Nothing in a thread
    // that made no lane, and nothing while it runs already (user code a flush runs may emit).
    static void flushThreadLanes();

    // Isolation (QFunnelAdmission::ShareOfRoomLeft): an admitted call to inbox. This thread's calls
    // to one receiver in a row are counted here and charged to its inbox (QFunnelInbox::charge())
    // when the receiver changes and once per chunk of credits (chargeRun()), so that the emit
    // path adds no shared atomic per call. Inline: the capture counts every call.
    void countForShare(QFunnelInbox *inbox) noexcept
    {
        if (Q_UNLIKELY(inbox != m_runInbox))
            return startRun(inbox);
        ++m_runCalls;
    }
    // Charges the calls counted so far to their inbox.
    void chargeRun() noexcept;

    // Credits reserved by this thread; see QFunnelAdmission::acquireCredit().
    std::atomic<qsizetype> &reservation() noexcept { return m_reserved; }
    // Statistics: written by this lane's thread only (no locked instruction), summed on read.
    void countEmitted() noexcept
    {
        m_emitted.store(m_emitted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }

    // The calling thread's lane for core (created on first use).
    static QFunnelLane *forCurrentThread(QFunnelCore *core)
    {
        const LaneCache &cache = tlCache; // one TLS address lookup for both fields
        if (Q_LIKELY(cache.core == core))
            return cache.lane;
        return forCurrentThreadSlow(core);
    }
    // The same if it is the lane this thread used last, else nullptr (no lookup).
    static QFunnelLane *cachedForCurrentThread(const QFunnelCore *core) noexcept
    {
        const LaneCache &cache = tlCache;
        return cache.core == core ? cache.lane : nullptr;
    }

private:
    static QFunnelLane *forCurrentThreadSlow(QFunnelCore *core);
    // sealed: append() found m_open sealed (the call is not in it).
    void appendSlow(QFunnelCall *call, bool sealed);
    void startRun(QFunnelInbox *inbox) noexcept;

    // The lane this thread used last, and its funnel. One trivially destructible thread_local,
    // so that the common case costs one TLS address lookup (__tls_get_addr: see
    // qfastconnectglobal_p.h) and two loads. Defined here with its constant initializer:
    // declared without, every use would first check for a dynamic initializer that another
    // translation unit might define.
    struct LaneCache
    {
        QFunnelCore *core;
        QFunnelLane *lane;
    };
    static inline thread_local LaneCache tlCache = { nullptr, nullptr };
    friend struct LaneSet;

    QFunnelCore *const m_core; // holds a reference
    QFunnelQueue *const m_queue; // m_core's
    const quint32 m_serial;
    quint64 m_lastStamp = 0; // this lane's thread only
    QFunnelBatch *m_open = nullptr; // the batch being filled, or the last one (maybe sealed)
    quint32 m_count = 0; // calls written into m_open
    bool m_handedOff = false; // the last batch filled up: the relay owns it, unsealed
    alignas(64) std::atomic<qsizetype> m_reserved { 0 }; // own line: touched on every call
    std::atomic<quint64> m_emitted { 0 }; // same line, same writer
    // The run countForShare() counts (this lane's thread only): its inbox, on which the lane
    // holds a reference, and its calls not charged yet.
    QFunnelInbox *m_runInbox = nullptr;
    qsizetype m_runCalls = 0;
    quint64 m_emittedAtFlush = 0; // this lane's thread only
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELLANE_P_H
