// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QPOOLCHUNKBATCH_P_H
#define QPOOLCHUNKBATCH_P_H

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

#include "qpoolallocator_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Frees chunks of MultiThreaded pools (QSizeClassPool's, which every funnel call comes from) a
// run at a time, for the delivery loop: consecutive chunks of one arena reach that arena's
// backlog with one compare-exchange, instead of one each. The backlog takes frees from any
// thread, the owner's too (which adopts them at its next refill). Not for other thread models:
// their frees need the owner's stack or a lock.
class QPoolChunkBatch
{
    Q_DISABLE_COPY_MOVE(QPoolChunkBatch)
public:
    QPoolChunkBatch() noexcept = default;
    ~QPoolChunkBatch() { flush(); }

    // p: a chunk whose object was destroyed; it is free once flush() has run.
    void add(void *p) noexcept
    {
#ifdef QT_FASTCONNECT_POOL_CHECKS
        auto *c = qPoolTakeBack(p, qPoolPageOf(p)->chunkSize);
#else
        auto *c = static_cast<QPoolChunk *>(p);
#endif
        append(c, c);
    }

    // first ... last: chunks of one arena whose objects were destroyed, linked through their
    // first word (QPoolChunk::next) as a free list is; they are free once flush() has run. A
    // delivery run's calls come linked so (QFunnelCall::next is that word): no link to write.
    void addLinked(void *first, void *last) noexcept
    {
#ifdef QT_FASTCONNECT_POOL_CHECKS
        // One at a time: each chunk's check, and its link's poisoning; and the caller's claim
        // that one arena holds them all, which the fast path below trusts.
        const QPoolArenaHead *const arena = qPoolArenaOf(first);
        for (auto *c = static_cast<QPoolChunk *>(first);;) {
            QPoolChunk *next = c->next;
            if (qPoolArenaOf(c) != arena)
                qFatal("QPoolChunkBatch::addLinked: chunks of different arenas");
            add(c);
            if (c == last)
                break;
            c = next;
        }
#else
        append(static_cast<QPoolChunk *>(first), static_cast<QPoolChunk *>(last));
#endif
    }

    void flush() noexcept
    {
        if (!m_first)
            return;
        // release: pairs with adoptBacklog()'s acquire exchange, as pushRemote() does, so that
        // the owner reuses the chunks only after everything this thread did with them.
        QPoolChunk *head = m_arena->backlog.load(std::memory_order_relaxed);
        do {
            qPoolWriteNext(m_last, head);
            // [P20 push] release on success: as in QPoolArenaHead::pushRemote().
        } while (!m_arena->backlog.compare_exchange_weak(head, m_first, std::memory_order_release,
                                                         std::memory_order_relaxed));
        m_first = nullptr;
        m_arena = nullptr;
    }

private:
    // first ... last, linked, of one arena: onto the segment, or as a new one.
    void append(QPoolChunk *first, QPoolChunk *last) noexcept
    {
        QPoolArenaHead *arena = qPoolArenaOf(first);
        if (arena == m_arena) {
            qPoolWriteNext(m_last, first);
        } else {
            flush();
            m_arena = arena;
            m_first = first;
        }
        m_last = last;
    }

    QPoolArenaHead *m_arena = nullptr;
    QPoolChunk *m_first = nullptr; // the oldest chunk of the segment, linked up to m_last
    QPoolChunk *m_last = nullptr;
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QPOOLCHUNKBATCH_P_H
