// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelrelay_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelplatform_p.h"
#include "qfunnelqueue_p.h"
#include "qfunnelroute_p.h"
#include "qfunnelstamp_p.h"
#include "qfunneltrace_p.h"

#include <QtCore/qvarlengtharray.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

// A batch in the relay's hands.
struct HeldBatch : QFunnelBatchCursor
{
    int quietRounds = 0; // rounds in a row that found no new call in it
};

// Collects one round's calls per receiver, in order, as chains for QFunnelInbox::pushInOrder(),
// so that each inbox gets one push per round.
class Router
{
public:
    Q_ALWAYS_INLINE void route(QFunnelCall *const *calls, quint32 n)
    {
        Chain *chain = m_last; // a local: the stores into the calls cannot alias it
        for (quint32 i = 0; i < n; ++i) {
            QFunnelCall *call = calls[i];
            // Fixed at connect time, and published to the relay by the batch's acquire load.
            QFunnelRoute *route = call->route;
            QFunnelInbox *inbox = route->inbox;
            if (Q_UNLIKELY(route->notesArenas))
                route->noteArena(call);
            if (Q_UNLIKELY(!chain || chain->inbox != inbox))
                chain = find(inbox, call);
            chain->last->next = call;
            chain->last = call;
            ++chain->n;
        }
        m_last = chain;
    }
    void flush()
    {
        for (Chain &c : m_chains)
            c.inbox->pushInOrder(c.first, c.last, c.n);
        m_chains.clear();
        m_last = nullptr;
    }

private:
    struct Chain
    {
        QFunnelInbox *inbox;
        QFunnelCall *first;
        QFunnelCall *last;
        quint32 n; // calls in the chain
    };
    // The chain of inbox, or a new one that starts with first, the call about to be routed.
    // A new chain's last call is that first one too: route() then links it to itself, a link
    // pushInOrder() never reads (it follows n links), and saves a branch per call.
    Chain *find(QFunnelInbox *inbox, QFunnelCall *first)
    {
        for (Chain &c : m_chains) {
            if (c.inbox == inbox)
                return &c;
        }
        m_chains.append(Chain { inbox, first, first, 0 });
        return &m_chains.last();
    }
    QVarLengthArray<Chain, 8> m_chains;
    Chain *m_last = nullptr;
};

// One producer's calls taken this round, in its order, with their stamps.
struct Run
{
    QFunnelCall *const *calls;
    const quint64 *stamps;
    quint32 n;
};
using Runs = QVarLengthArray<Run, 16>;

// Routes the round's runs merged in stamp order, each run's calls kept in its order: a call
// whose emission happened before another producer's call is routed first (causal order). A
// stretch of a run at a time: its calls stamped up to the others' earliest next stamp. Runs that
// interleave finely make stretches of a call or two, so the stretch is routed inline. Of runs
// whose next stamps are equal, the first in the array goes first, and an emptied run is
// removed without reordering the rest: one producer's batches (in the order they were popped)
// may share its reused stamp (QFunnelLane::stamp()), and its order must hold.
void routeInStampOrder(Router &router, Runs &runs)
{
    qsizetype live = runs.size();
    while (live > 1) {
        qsizetype earliest = 0;
        quint64 bound = std::numeric_limits<quint64>::max(); // the others' earliest
        for (qsizetype i = 1; i < live; ++i) {
            const quint64 head = runs[i].stamps[0];
            if (head < runs[earliest].stamps[0]) {
                bound = std::min(bound, runs[earliest].stamps[0]);
                earliest = i;
            } else {
                bound = std::min(bound, head);
            }
        }
        Run &r = runs[earliest];
        quint32 k = 1;
        while (k < r.n && r.stamps[k] <= bound)
            ++k;
        router.route(r.calls, k);
        r.calls += k;
        r.stamps += k;
        r.n -= k;
        if (!r.n) {
            runs.remove(earliest);
            --live;
        }
    }
    if (live == 1) // the last run, or one producer: its own order
        router.route(runs[0].calls, runs[0].n);
}

} // namespace

// Returns once the relay thread runs, set up (setUpRelayThread()). A producer thread's exit may
// wait for the relay (its lane set's destructor flushes), and on Windows that exit runs in a
// fiber-local storage callback: Wine runs those under a process-wide lock (RtlProcessFlsData()),
// which a thread's first use of fiber-local storage takes too. A relay thread still starting
// then never reached run(): it waited for the exiting thread, which waited for it (a hang under
// Wine: docs/architecture.md, on qfunnelplatform.cpp).
void QFunnelRelay::start()
{
    QMutexLocker locker(&m_startLock);
    if (m_running.load(std::memory_order_relaxed) || m_stopped)
        return; // started meanwhile; or stopped: what is queued now is swept (QFunnelCore)
    m_thread = std::thread([this] { run(); });
    m_started.acquire();
    // [P27 start] release: the thread runs; a producer that reads true queues without the lock.
    m_running.store(true, std::memory_order_release);
}

void QFunnelRelay::stopAndJoin()
{
    QMutexLocker locker(&m_startLock);
    m_stopped = true;
    if (!m_thread.joinable())
        return;
    m_queue.push(nullptr);
    m_thread.join();
}

namespace {
thread_local bool tlRelayThread = false;
} // namespace

bool QFunnelRelay::isRelayThread() noexcept
{
    return tlRelayThread;
}

void QFunnelRelay::run()
{
    tlRelayThread = true;
    setUpRelayThread();
    m_started.release(); // start() returns: the thread is set up
    std::vector<HeldBatch> held;
    held.reserve(64);
    Router router;
    Runs runs;
    quint64 popped = 0; // producers' batches popped so far (QFunnelQueue::noteSoleProducer())
    bool stopping = false;

    std::vector<QFunnelFlushMarker *> flushes; // completed once this round has routed
    std::vector<QFunnelFlushMarker *> nextFlushes; // popped after its horizon: the next round's
    int intervalUs = RoundIntervalUs;

    auto accept = [&](QFunnelBatch *b, std::vector<QFunnelFlushMarker *> &markers) {
        if (b && QFunnelFlushMarker::is(b)) {
            markers.push_back(static_cast<QFunnelFlushMarker *>(b));
        } else if (b) {
            held.push_back(HeldBatch { { b }, 0 });
            ++popped;
        } else {
            stopping = true;
        }
    };

    for (;;) {
        if (held.empty() && nextFlushes.empty()) {
            if (stopping)
                return;
            accept(m_queue.pop(), flushes);
        }
        flushes.insert(flushes.end(), nextFlushes.begin(), nextFlushes.end());
        nextFlushes.clear();
        for (QFunnelBatch *b = nullptr; m_queue.tryPop(b);)
            accept(b, flushes);

        // Causal order: the round's horizon, read after its batches and flush markers were
        // popped and before any batch is read; the calls stamped before it are routed this
        // round, in stamp order, the others wait for the next. If emitting c happened before
        // emitting d, and d is stamped before the horizon: c was published (its emit returned)
        // before d was stamped, so before the horizon, so before this round read c's batch,
        // and c is stamped before d; both are routed, c first (or c already was). A flush
        // marker popped here completes after its thread's calls: stamped before it was
        // queued, they are all before the horizon.
        const quint64 horizon = QFunnelStamp::horizon();
        // And the batches queued before it: a call that started one was published when its
        // batch was queued. Flush markers queued meanwhile wait for the next round's horizon.
        for (QFunnelBatch *b = nullptr; m_queue.tryPop(b);)
            accept(b, nextFlushes);
        // A producer's later batch is held after its earlier one: per-producer order holds.
        quint64 routed = 0;
        for (HeldBatch &h : held) {
            Run run;
            run.n = h.takeBefore(horizon, &run.calls, &run.stamps);
            h.quietRounds = run.n ? 0 : h.quietRounds + 1;
            if (run.n)
                runs.append(run);
            routed += run.n;
        }
        routeInStampOrder(router, runs);
        runs.clear();
        // Whether one producer's batches are all the relay holds and no other is queued (its
        // calls then skip the clock: QFunnelLane::stamp()).
        quint32 sole = held.empty() ? 0 : held.front().batch->owner;
        for (const HeldBatch &h : held) {
            if (h.batch->owner != sole) {
                sole = 0;
                break;
            }
        }
        m_queue.noteSoleProducer(sole, popped);
        // Hand over before sealing: once a producer sees its batch sealed it may deliver
        // directly, and its earlier calls must already be in the inbox.
        router.flush();
        for (QFunnelFlushMarker *m : flushes)
            m->complete();
        flushes.clear();
        if (routed) { // statistics: rounds that handed calls over
            Q_TRACE(qfunnel_relay_round, routed, int(held.size()));
            m_calls.fetch_add(routed, std::memory_order_relaxed);
            m_rounds.fetch_add(1, std::memory_order_relaxed);
        }

        // A batch still flowing stays open for another round; one quiet for
        // QuietRoundsBeforeRelease rounds goes back to its producer; a full one (its producer
        // moved on) or an abandoned one (its producer thread exited) is recycled.
        auto retired = [&](HeldBatch &h) {
            switch (h.release(h.quietRounds < QuietRoundsBeforeRelease && !stopping)) {
            case QFunnelBatchCursor::Release::Free:
                m_queue.recycle(h.batch);
                return true;
            case QFunnelBatchCursor::Release::Sealed:
                return true;
            case QFunnelBatchCursor::Release::Keep:
                break;
            }
            return false;
        };
        const auto kept = std::remove_if(held.begin(), held.end(), retired);
        m_queue.handedBack(held.end() - kept); // after router.flush() posted their wake-ups
        held.erase(kept, held.end());

        if (routed >= BusyRoundCalls)
            intervalUs = std::min(2 * intervalUs, MaxRoundIntervalUs);
        else if (routed < BusyRoundCalls / 4)
            intervalUs = std::max(intervalUs / 2, RoundIntervalUs);
        if (!held.empty() && nextFlushes.empty())
            m_sleep.sleep(std::chrono::microseconds(intervalUs));
    }
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
