// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelrelay_p.h"
#include "qfunnelinbox_p.h"
#include "qfunnelflush_p.h"
#include "qfunnelqueue_p.h"

#include <QtCore/qvarlengtharray.h>

#include <algorithm>
#include <chrono>
#include <vector>

#ifdef Q_OS_LINUX
#  include <pthread.h>
#  include <sys/prctl.h>
#endif

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

// A batch in the relay's hands.
struct HeldBatch
{
    QFunnelBatch *batch;
    quint32 done = 0;      // calls already routed
    quint32 seen = 0;      // state word read in this round
    bool fresh = false;    // the round found new calls in it
};

// Collects one round's calls per receiver, in order, as chains ready for
// QFunnelInbox::push() (newest first), so that each inbox gets one push per round.
class Router
{
public:
    void route(QFunnelCall *call)
    {
        // Fixed at connect time, and published to the relay by the batch's acquire load.
        QFunnelInbox *inbox = call->slotObject->inbox;
        Chain *chain = (m_last && m_last->inbox == inbox) ? m_last : find(inbox);
        call->next = chain->top;
        chain->top = call;
        if (!chain->bottom)
            chain->bottom = call;
        m_last = chain;
    }
    void flush()
    {
        for (Chain &c : m_chains)
            c.inbox->push(c.top, c.bottom);
        m_chains.clear();
        m_last = nullptr;
    }

private:
    struct Chain
    {
        QFunnelInbox *inbox;
        QFunnelCall *top;
        QFunnelCall *bottom;
    };
    Chain *find(QFunnelInbox *inbox)
    {
        for (Chain &c : m_chains) {
            if (c.inbox == inbox)
                return &c;
        }
        m_chains.append(Chain{ inbox, nullptr, nullptr });
        return &m_chains.last();
    }
    QVarLengthArray<Chain, 8> m_chains;
    Chain *m_last = nullptr;
};

} // namespace

void QFunnelRelay::start()
{
    m_thread = std::thread([this] { run(); });
}

void QFunnelRelay::stopAndJoin()
{
    if (!m_thread.joinable())
        return;
    m_queue.push(nullptr);
    m_thread.join();
}

void QFunnelRelay::run()
{
#ifdef Q_OS_LINUX
    pthread_setname_np(pthread_self(), "QFunnel relay");
    // The round interval is short; the default 50 µs timer slack would double it.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#endif
    std::vector<HeldBatch> held;
    held.reserve(64);
    Router router;
    bool stopping = false;

    std::vector<QFunnelFlushMarker *> flushes;   // completed once this round has routed

    auto accept = [&](QFunnelBatch *b) {
        if (b && QFunnelFlushMarker::is(b))
            flushes.push_back(static_cast<QFunnelFlushMarker *>(b));
        else if (b)
            held.push_back(HeldBatch{ b });
        else
            stopping = true;
    };

    for (;;) {
        if (held.empty()) {
            if (stopping)
                return;
            // seq_cst pairs with the producers' look at the inbox: a producer that saw the relay
            // busy opened a batch, which this pop will find.
            m_idle.store(true, std::memory_order_seq_cst);
            QFunnelBatch *b = m_queue.pop();
            m_idle.store(false, std::memory_order_relaxed);
            accept(b);
        }
        for (QFunnelBatch *b = nullptr; m_queue.tryPop(b);)
            accept(b);

        // Route every call published so far, in batch order (a producer's later batch is held
        // after its earlier one, so per-producer order holds).
        quint64 routed = 0;
        for (HeldBatch &h : held) {
            h.seen = h.batch->load();
            const quint32 n = QFunnelBatch::count(h.seen);
            h.fresh = n > h.done;
            routed += n - h.done;
            for (; h.done < n; ++h.done)
                router.route(h.batch->calls[h.done]);
        }
        // Hand over before sealing: once a producer sees its batch sealed it may deliver
        // directly, and its earlier calls must already be in the inbox.
        router.flush();
        for (QFunnelFlushMarker *m : flushes)
            m->complete();
        flushes.clear();
        if (routed) {   // statistics: rounds that handed calls over
            m_calls.fetch_add(routed, std::memory_order_relaxed);
            m_rounds.fetch_add(1, std::memory_order_relaxed);
        }

        auto retired = [&](HeldBatch &h) {
            if (h.done == QFunnelBatch::Capacity) {
                m_queue.recycle(h.batch);   // full: its producer moved on to a new batch
                return true;
            }
            if (h.seen & QFunnelBatch::Abandoned) {
                m_queue.recycle(h.batch);   // its producer thread exited; everything routed
                return true;
            }
            if (h.fresh && !stopping)
                return false;               // still flowing: keep it open for another round
            // Quiet for a round: give it back to its producer. Fails if a call arrived since
            // the load; the next round routes it.
            return h.batch->trySeal(h.seen);
        };
        held.erase(std::remove_if(held.begin(), held.end(), retired), held.end());

        if (!held.empty())
            std::this_thread::sleep_for(std::chrono::microseconds(RoundIntervalUs));
    }
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
