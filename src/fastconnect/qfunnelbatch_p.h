// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELBATCH_P_H
#define QFUNNELBATCH_P_H

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

#include <QtFastConnect/qfastconnectglobal.h>

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

struct QFunnelCall;

// The unit that travels through the queue: a run of calls from one producer thread, filled by
// that producer while the relay already drains it. Pushing a batch instead of a call is what
// keeps the TBB queue's ticket convoy away when producers outnumber cores: a producer touches the
// shared queue once per batch, and a batch stays open for as long as the relay keeps finding new
// calls in it.
//
// Protocol (one producer, the relay):
// - the producer writes calls[n] and stamps[n] and then publishes them with one fetch_add on
//   state;
// - the relay reads state (acquire) and consumes calls[done, count);
// - when the relay has caught up and saw nothing new, it seals the batch with a CAS; a producer
//   whose fetch_add returns Sealed knows the relay has let go and reuses the batch;
// - a full batch belongs to the relay (the producer moved on), an abandoned one too (its
//   producer thread exited).
struct QFunnelBatch
{
    static constexpr quint32 Capacity = 510; // calls; the batch is ~8 KiB
    static constexpr quint32 Sealed = 1u << 31;
    static constexpr quint32 Abandoned = 1u << 30;
    static constexpr quint32 CountMask = Abandoned - 1;

    std::atomic<quint32> state { 0 };
    QFunnelCall *calls[Capacity];
    // QFunnelStamp::now() as each call was appended: the relay routes a call only once every
    // call stamped before it has been published (causal order, qfunnelrelay.cpp).
    quint64 stamps[Capacity];
    quint32 owner = 0; // the producer's lane (QFunnelLane::serial()), set when it is queued

    // Producer side. Returns false if the relay had sealed the batch before this call was
    // published: the call is not in the batch, and the batch is the producer's to reuse.
    bool append(quint32 index, QFunnelCall *call, quint64 stamp) noexcept
    {
        calls[index] = call;
        stamps[index] = stamp;
        // [P1 publish] Release publishes calls[index]. [P2 see] Acquire pairs with the relay's
        // sealing CAS, so the relay's reads of this batch happen before the producer reuses it.
        // [P10 queue] seq_cst (the same lock xadd on x86) also orders it before the producer's
        // isStopped() re-check.
        return !(state.fetch_add(1, std::memory_order_seq_cst) & Sealed);
    }
    void restart(QFunnelCall *first, quint64 stamp) noexcept
    {
        calls[0] = first;
        stamps[0] = stamp;
        state.store(1, std::memory_order_relaxed); // published by the queue push
    }
    // Producer thread exit. Returns true if the batch is already sealed (the caller frees it);
    // otherwise the relay frees it after draining.
    bool abandon() noexcept
    {
        // [P3 abandon] acq_rel: release, for the relay that then frees it; acquire, so that a
        // producer that finds it sealed frees it after the relay's reads.
        return state.fetch_or(Abandoned, std::memory_order_acq_rel) & Sealed;
    }

    // Relay side.
    // [P1 read] acquire: pairs with append()'s release part. [P2 check] The producer's look for
    // Sealed (QFunnelLane::canBypassRelay()). [P3 see] The relay's look for Abandoned.
    quint32 load() const noexcept { return state.load(std::memory_order_acquire); }
    static quint32 count(quint32 s) noexcept { return s & CountMask; }
    // Hands the batch back to its producer unless a call or the producer's exit came since seen.
    bool trySeal(quint32 seen) noexcept
    {
        // [P2 seal] acq_rel: release, so that the relay's reads of the batch happen before the
        // producer that sees Sealed reuses it; acquire, for the calls published up to seen (see
        // P1). [P3 seal] Fails once the producer set Abandoned.
        return state.compare_exchange_strong(seen, seen | Sealed, std::memory_order_acq_rel,
                                             std::memory_order_relaxed);
    }
};

// The consuming side of the protocol, the one drain: the relay and a stopped funnel's sweep
// both consume a batch through a cursor, whose producer may still be appending to it.
struct QFunnelBatchCursor
{
    QFunnelBatch *batch;
    quint32 done = 0; // calls consumed
    quint32 seen = 0; // state word read by the last take()

    // The calls published since the last take, in order: sets *calls to the first of them and
    // returns how many there are.
    quint32 take(QFunnelCall *const **calls) noexcept
    {
        seen = batch->load();
        const quint32 n = QFunnelBatch::count(seen);
        *calls = batch->calls + done;
        const quint32 fresh = n - done;
        done = n;
        return fresh;
    }
    // The same, up to the first call not stamped before horizon: it and those after it wait
    // for a later take. Sets *stamps to the first taken call's stamp.
    quint32 takeBefore(quint64 horizon, QFunnelCall *const **calls, const quint64 **stamps) noexcept
    {
        seen = batch->load();
        const quint32 n = QFunnelBatch::count(seen);
        *calls = batch->calls + done;
        *stamps = batch->stamps + done;
        quint32 end = n;
        // A producer's stamps do not decrease: all of them, usually, or a prefix.
        if (end > done && batch->stamps[end - 1] >= horizon) {
            end = done;
            while (end < n && batch->stamps[end] < horizon)
                ++end;
        }
        const quint32 fresh = end - done;
        done = end;
        return fresh;
    }

    // Passes every call published since the last take to consume, in order; returns how many.
    template<typename Consume>
    quint32 drain(Consume &&consume)
    {
        QFunnelCall *const *calls;
        const quint32 n = take(&calls);
        for (quint32 i = 0; i < n; ++i)
            consume(calls[i]);
        return n;
    }

    // After a drain, whether the consumer lets go of the batch. Free: it is full or abandoned,
    // every call is consumed and no producer will touch it again (the consumer frees or
    // recycles it). Sealed: handed back to its producer. Keep: still the consumer's, because
    // keepOpen (it is still flowing), because a take left calls for a later one (takeBefore()),
    // or because a call arrived since the drain (the next drain takes it).
    enum class Release { Keep, Free, Sealed };
    Release release(bool keepOpen) noexcept
    {
        if (done < QFunnelBatch::count(seen))
            return Release::Keep; // calls published and not taken yet (takeBefore())
        if (done == QFunnelBatch::Capacity || (seen & QFunnelBatch::Abandoned))
            return Release::Free;
        if (keepOpen)
            return Release::Keep;
        return batch->trySeal(seen) ? Release::Sealed : Release::Keep;
    }
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELBATCH_P_H
