// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QPOOLALLOCATOR_P_H
#define QPOOLALLOCATOR_P_H

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

#include <QtFastConnect/qpoolallocator.h>
#include <QtCore/qmutex.h>

#include <cstddef>

QT_BEGIN_NAMESPACE

// The parts of QPoolAllocator that inline code never touches: they may change in any release
// without breaking binaries built against qpoolallocator.h.
namespace QtFastConnectPrivate {

class QPoolArena;

// The first 128 bytes of every 4 KiB page; the page's chunks follow it.
struct QPoolPageHeader
{
    // Cache line 0: read by every thread that frees a chunk of this page. Written only while no
    // chunk of the page is out (when an arena takes the page), so those reads never race.
    QPoolArenaHead *head; // word 0, read by qPoolArenaOf(): public ABI
    QPoolArena *arena;
    QPoolControl *control;
    quint32 chunkSize; // bytes
    quint32 chunkCount; // chunks in this page
    // Cache line 1: owner only (see QPoolArena), apart from line 0 so that cross-thread frees
    // do not contend with the owner's counting.
    alignas(64) quint32 used; // chunks not on the arena's stack and not uncarved: out,
            // or in the backlog; valid only right after countUse()
    QPoolPageHeader *nextPage; // the arena's page list
};
static_assert(sizeof(QPoolPageHeader) <= QPoolPageHeaderSize);
static_assert(offsetof(QPoolPageHeader, head) == 0, "qPoolArenaOf() reads the first word");

inline QPoolPageHeader *qPoolPageOf(const void *chunk) noexcept
{
    return reinterpret_cast<QPoolPageHeader *>(reinterpret_cast<quintptr>(chunk)
                                               & ~quintptr(QPoolPageSize - 1));
}

// One free-chunk stack (its head, which inline code uses) and the pages it carves chunks from.
//
// Owner-side state (the head's stack, m_bump*, m_pages, the pages' used counts) belongs to the
// arena's owner: its thread, or, while the arena is orphaned, the holder of its pool's orphan
// lock. Ownership passes between threads only through that lock.
class QPoolArena
{
    Q_DISABLE_COPY_MOVE(QPoolArena)
public:
    explicit QPoolArena(QPoolControl *control) noexcept : m_control(control) {}

    // The arena whose head is head.
    static QPoolArena *fromOwnHead(QPoolArenaHead *head) noexcept
    {
        // m_ownHead is the first member of this standard-layout class.
        return reinterpret_cast<QPoolArena *>(head);
    }

    QPoolArenaHead *head() noexcept { return &m_ownHead; }
    QPoolChunk *pop() noexcept { return m_ownHead.pop(); }

    // Owner: adopts the backlog, else carves a chunk from the newest page, else takes a new
    // page. Never null (qBadAlloc() when no page can be mapped).
    QPoolChunk *refill();
    // Owner: moves the whole backlog onto the stack (one exchange).
    void adoptBacklog() noexcept;
    // Owner: true when no chunk is out or in the backlog (after adoptBacklog()).
    bool isEmpty() noexcept;
    // What trim() does with a page's memory: gives it back to the system (an explicit trim, an
    // arena's end), or keeps it resident for the next arena that needs a page.
    enum PageFate { ReturnToSystem, KeepResident };
    // Owner: adopts the backlog and returns every page with no chunk out to the process's page
    // cache. Returns the count.
    qint64 trim(PageFate fate) noexcept;
    // Owner: sets every page's used count (off the hot path: O(pages + free chunks)).
    void countUse() noexcept;

    QPoolArenaHead m_ownHead; // first: see fromOwnHead()
    char *m_bump = nullptr; // uncarved rest of the newest page
    char *m_bumpEnd = nullptr;
    QPoolPageHeader *m_pages = nullptr; // every page of this arena
    QPoolControl *const m_control;
    const void *m_owner = nullptr; // the owning thread's token; null if orphaned
    QPoolArena *m_nextOrphan = nullptr; // protected by the pool's orphan lock
};

// The library's part of a pool, one per QPoolHandle: created at the pool's first use and never
// destroyed, so a pool works during static destruction.
struct QPoolControl
{
    Q_DISABLE_COPY_MOVE(QPoolControl)

    explicit QPoolControl(QPoolHandle *pool) noexcept : chunkSize(pool->chunkSize) {}

    const quint32 chunkSize;
    // Statistics; relaxed atomics, they order nothing.
    std::atomic<quint64> fallbacks { 0 };
    std::atomic<qint64> pagesInUse { 0 };
    std::atomic<qint64> pagesReturned { 0 };
    std::atomic<qint64> arenas { 0 };
    std::atomic<qint64> orphanCount { 0 }; // changed under orphanLock
    // Arenas whose thread exited with chunks out, waiting for a
    // thread that needs an arena. Touched at thread start and exit and by trim() only.
    QBasicMutex orphanLock;
    QPoolArena *orphans = nullptr; // protected by orphanLock
};

// Returns to the process's page cache every page that no chunk of the calling thread's arenas
// occupies, kept resident for the next arena that needs a
// page. For a thread about to wait: its peak of chunks need not stay its own while other threads
// need pages.
void qPoolTrimCurrentThread() noexcept;

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QPOOLALLOCATOR_P_H
