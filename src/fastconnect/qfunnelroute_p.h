// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELROUTE_P_H
#define QFUNNELROUTE_P_H

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

#include <QtFastConnect/qfastconnect.h>

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelInbox;
class QFunnelReceiverGuard;

// The library's side of one funnel connection (or of one thread's invokes to one receiver):
// the slot, and where its calls go. Reference counted: the capture installed on the signal
// holds one reference (the invoke cache for invokes), every pending call holds one, so a call
// never outlives its slot. The routing state is written once, by the connect, before the
// capture is installed: Qt's connect publishes it to emitting threads, and the calls (through
// the queue and the inbox) to the other stages.
class QFunnelRoute
{
    Q_DISABLE_COPY_MOVE(QFunnelRoute)
public:
    // How the delivery loop runs this route's calls.
    enum class Delivery : quint8 {
        Run, // the slot function's Run, one call at a time (it checks and frees each)
        InPlace, // the slot's runInPlace: the loop checks the receiver's class, frees the calls
        Invoke, // invokes: each call runs itself through its own function
        Batch, // connectBatched(): the slot's runBatch, once for a run of calls
    };

    // A route without its slot yet (attachSlot()), on its own (operator new).
    QFunnelRoute() noexcept = default;
    // The same, in the middle of an allocation that starts with the memory of its slot (and
    // ends with its connection's capture: allocateRoute()).
    explicit QFunnelRoute(void *slotMemory) noexcept : m_slot(slotMemory), m_inBlock(true) {}
    // Once, before the route is published: the slot, which the route's destruction destroys
    // (QFunnelSlotOp::DestroySlot), and how its calls may be delivered (Describe).
    void attachSlot(void *slot, QFunnelSlotImpl impl) noexcept;

    // Relaxed: a reference publishes nothing (whoever passes the route on publishes it).
    void ref() noexcept { m_ref.fetch_add(1, std::memory_order_relaxed); }
    // Releases n references (the delivery loop releases a run of calls' at once).
    void deref(int n = 1) noexcept
    {
        // [P23 last] acq_rel: the last owner sees every other owner's writes (the latest pointer,
        // the slot's state) before the destructor runs.
        if (m_ref.fetch_sub(n, std::memory_order_acq_rel) == n)
            destroy();
    }

    // Delivery; receiver's thread only. Runs the call and destroys it; the caller then
    // releases the call's reference with deref().
    void run(QObject *receiver, QFunnelCall *call)
    {
        m_impl(QFunnelSlotOp::Run, m_slot, receiver, call);
    }
    // Delivery::InPlace; receiver's thread only. Runs the call and destroys its arguments; its
    // memory is the caller's to free (QPoolChunkBatch), and its reference the caller's to
    // release.
    void runInPlace(QObject *receiver, QFunnelCall *call)
    {
        m_traits.runInPlace(m_slot, receiver, call);
    }
    // Delivery::Batch; receiver's thread only. Runs the slot once for the n calls linked from
    // first and destroys their arguments; the memory of pooled calls (isPooled()) is the
    // caller's to free, the others are deleted; their references are the caller's to release.
    // Returns how many were superseded by a newer call of their key, destroyed unrun.
    qsizetype runBatch(QObject *receiver, QFunnelCall *first, qsizetype n)
    {
        return m_traits.runBatch(m_slot, receiver, first, n);
    }
    bool describesBatch() const noexcept { return m_traits.runBatch != nullptr; }
    // Whether the calls come from QSizeClassPool chunks (the slot describes runInPlace).
    bool isPooled() const noexcept { return m_traits.runInPlace != nullptr; }
    // Delivery::InPlace and Batch: whether receiver may run the slot (it is still of the
    // slot's class).
    bool acceptsReceiver(const QObject *receiver) const
    {
        return qfcIsReceiverOf(receiver, m_traits.receiverClass);
    }
    Delivery delivery() const noexcept { return m_delivery; }
    void setDelivery(Delivery d) noexcept { m_delivery = d; }

    // Destroys the call's arguments unrun and releases its reference on this route.
    void destroyCall(QFunnelCall *call) noexcept
    {
        m_impl(QFunnelSlotOp::DestroyCall, m_slot, nullptr, call);
        deref();
    }

    // Written once, by the connect: read by every stage, so kept apart from the reference
    // count and the other fields written per call, whose writes would otherwise make the
    // receiver's thread miss in its cache on these as each call reaches it.
    QFunnelCore *core = nullptr; // holds a reference
    QFunnelReceiverGuard *guard = nullptr; // holds a reference
    QFunnelInbox *inbox = nullptr; // holds a reference; the receiver's
    QObject *sender = nullptr; // nullptr for invokes
    int signalIndex = -1; // of the signal's connection list (a cloned signal's original)
    int mode = QtFastConnect::FunnelConnection; // ConnectionMode bits, validated
    // The modes whose calls are delivered one at a time (QFunnelInbox::deliverSpecial()), after
    // the capture noted each as its connection's latest.
    static constexpr int SpecialModes =
            int(QtFastConnect::CoalesceCalls) | int(QtFastConnect::RateLimitCalls);
    qint64 rateLimitNs = 0; // RateLimitCalls: the interval
    // A batched connection whose calls come from the pool: each call notes its arena before it
    // is pushed to the inbox (noteArena()).
    bool notesArenas = false;

private:
    // The slot, read-only once attached, like the routing state above.
    void *m_slot = nullptr;
    QFunnelSlotImpl m_impl = nullptr;
    QFunnelSlotTraits m_traits;
    Delivery m_delivery = Delivery::Run;
    const bool m_inBlock = false; // m_slot starts this route's allocation
    // Keeps what is written per call below off the cache lines of the read-only state above
    // without an over-aligned allocation, which glibc makes several times as costly as a
    // plain one (a connect allocates a route): two bytes 64 apart share no cache line.
    [[maybe_unused]] char m_readOnlyEnd[64];

public:
    // Written per call (see above). CoalesceCalls: the newest call captured for this
    // connection. Only the call it points to is delivered; older pending ones are destroyed
    // unrun. Never dereferenced, only compared.
    std::atomic<QFunnelCall *> latest { nullptr };
    std::atomic<bool> warnedShared { false }; // MoveArguments: warned that it had to copy
    // notesArenas: 0, the one arena, or MixedArenas (noteArena(), hasOneArena()).
    std::atomic<quintptr> arenaState { 0 };
    // RateLimitCalls (which also keeps latest): the steady clock time before which no call of
    // this connection runs (receiver's thread, under the inbox's pass lock).
    qint64 notBeforeNs = 0;

    // notesArenas: whether every call of this connection so far came from one pool arena. A
    // producer thread's calls of one connection come from its own arena, so this holds for a
    // connection emitted from one thread (a worker object's). QFunnelInbox::runBatch() then
    // returns a run of calls to the pool as the list they form, without looking at each call's
    // arena on the receiver's thread. The relay notes the calls it routes, the capture those
    // it pushes itself, each before the push that publishes it.
    void noteArena(const QFunnelCall *call) noexcept
    {
        const quintptr arena = reinterpret_cast<quintptr>(qPoolArenaOf(call));
        // [P25 note] Relaxed: the state only moves forward (none, one arena, mixed), and the push
        // that publishes the call, after this, orders it before the receiver's look at the
        // calls it took (hasOneArena()).
        quintptr seen = arenaState.load(std::memory_order_relaxed);
        while (seen != arena && seen != MixedArenas) {
            const quintptr next = seen ? MixedArenas : arena;
            if (arenaState.compare_exchange_weak(seen, next, std::memory_order_relaxed))
                break;
        }
    }
    // Receiver's thread, for calls it took from the inbox: all of them came from one arena.
    bool hasOneArena() const noexcept
    {
        // [P25 read] Relaxed: each of those calls was noted before the push that published it, and
        // the inbox's take acquired that push.
        return arenaState.load(std::memory_order_relaxed) != MixedArenas;
    }

private:
    static constexpr quintptr MixedArenas = 1;
    ~QFunnelRoute();
    void destroy() noexcept
    {
        void *const memory = m_inBlock ? m_slot : this;
        this->~QFunnelRoute();
        ::operator delete(memory);
    }

    std::atomic<int> m_ref { 1 }; // with the per-call fields
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELROUTE_P_H
