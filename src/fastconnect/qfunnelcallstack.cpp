// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelcallstack_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelCallStack::Chain QFunnelCallStack::oldestFirst(QFunnelCall *first, QFunnelCall *last,
                                                      quint32 n)
{
    if (n >= SegmentMinCalls) {
        auto *s = new Segment { first, last, nullptr, n };
        return Chain { reinterpret_cast<QFunnelCall *>(reinterpret_cast<quintptr>(s) | 1),
                       &s->older };
    }
    // Newest first: each call links to the one before it.
    QFunnelCall *c = first;
    QFunnelCall *before = nullptr;
    for (quint32 i = 0; i < n; ++i) {
        QFunnelCall *after = c->next;
        c->next = before;
        before = c;
        c = after;
    }
    return newestFirst(last, first);
}

// A read-modify-write, not a load: ordered after the unlock, and with the pushes' own compare-
// exchanges on m_head, either it sees a pusher's calls, or that pusher's compare-exchange read
// this one's value, so that pusher's later tryLock of the pass lock sees it free (and takes it).
bool QFunnelCallStack::hasPushesAfterUnlock() noexcept
{
    QFunnelCall *expected = nullptr;
    // [P6 recheck] seq_cst: with push()'s CAS, after the pass lock's unlock.
    return !m_head.compare_exchange_strong(expected, nullptr, std::memory_order_seq_cst);
}

QFunnelCallStack::Taken QFunnelCallStack::takeAll()
{
    // [P4 take] acquire: pairs with push()'s release.
    QFunnelCall *e = m_head.exchange(nullptr, std::memory_order_acquire);
    Taken taken;
    if (!e)
        return taken;
    // Newest entry first; each goes in front of the ones after it. A segment's calls are in
    // order already: the relay's long chains cost this thread one step each, not one per call.
    const Segment *newest = segmentOf(e);
    taken.last = newest ? newest->last : e;
    do {
        if (Segment *s = segmentOf(e)) {
            s->last->next = taken.first;
            taken.first = s->first;
            taken.n += s->n;
            e = s->older;
            delete s;
        } else {
            QFunnelCall *below = e->next;
            e->next = taken.first;
            taken.first = e;
            e = below;
            ++taken.n;
        }
    } while (e);
    return taken;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
