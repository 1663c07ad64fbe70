// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QPOOLALLOCATOR_H
#define QPOOLALLOCATOR_H

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtCore/qmutex.h>

#include <atomic>
#include <cstddef>
#include <new>

// AddressSanitizer: free chunks are poisoned (see qPoolPoison() below).
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#  define QT_FASTCONNECT_POOL_ASAN
#  include <sanitizer/asan_interface.h>
#endif

// Double-free detection: debug builds and AddressSanitizer builds.
#if !defined(QT_NO_DEBUG) || defined(QT_FASTCONNECT_POOL_ASAN)
#  define QT_FASTCONNECT_POOL_CHECKS
#endif

// The per-thread arena pointer is read on every allocation: initial-exec makes that one
// %fs-relative load instead of a __tls_get_addr call (the default model in a shared library).
#if defined(Q_CC_GNU) || defined(Q_CC_CLANG)
#  define QT_FASTCONNECT_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#  define QT_FASTCONNECT_TLS_INITIAL_EXEC
#endif

QT_BEGIN_NAMESPACE

enum class QPoolThreadModel : quint8 {
    SingleThreaded,
    SharedPool,
    MultiPool,
    MultiThreaded,
};

struct QPoolAllocatorStats
{
    qint64 pagesInUse = 0;       // this pool: pages held by its arenas, live or orphaned
    qint64 pagesReturned = 0;    // this pool: pages given back since the process started
    qint64 arenas = 0;           // this pool: arenas, live or orphaned
    qint64 orphanedArenas = 0;   // this pool: arenas whose thread exited with chunks still out
    quint64 fallbackCount = 0;   // this pool: oversized requests served by ::operator new
    qint64 pagesMapped = 0;      // process: pages obtained from the system, all pools
    qint64 pagesCached = 0;      // process: returned pages kept for reuse, all pools
};

// Machinery behind QPoolAllocator. Not public API: it is here because the allocation and free
// paths are inline, and it may change with every release.
namespace QtFastConnectPrivate {

class QPoolArena;
struct QPoolControl;

inline constexpr std::size_t QPoolPageSize = 4096;
inline constexpr std::size_t QPoolPageHeaderSize = 128;
// Written into the second word of a chunk when it is freed and cleared when it is handed out,
// in builds with QT_FASTCONNECT_POOL_CHECKS; finding it on a free means a double free.
inline constexpr quintptr QPoolFreeMark = quintptr(Q_UINT64_C(0xF4EE0C4A2D1F7A5E));

// A free chunk. An allocated chunk is the caller's bytes; chunks are at least 16 bytes.
struct QPoolChunk
{
    QPoolChunk *next;      // the stack or backlog below this chunk
    quintptr freeMark;     // QPoolFreeMark while free (checking builds only)
};

// The first 128 bytes of every 4 KiB page; the page's chunks follow it.
struct QPoolPageHeader
{
    // Cache line 0: read by every thread that frees a chunk of this page. Written only while no
    // chunk of the page is out (when an arena takes the page), so those reads never race.
    QPoolArena *arena;
    QPoolControl *control;
    quint32 chunkSize;                // bytes
    quint32 chunkCount;               // chunks in this page
    // Cache line 1: owner only (see QPoolArena), apart from line 0 so that cross-thread frees
    // do not contend with the owner's counting.
    alignas(64) quint32 used;         // chunks not on the arena's stack and not uncarved: out,
                                      // or in the backlog; valid only right after countUse()
    QPoolPageHeader *nextPage;        // the arena's page list
};
static_assert(sizeof(QPoolPageHeader) <= QPoolPageHeaderSize);

inline QPoolPageHeader *qPoolPageOf(const void *chunk) noexcept
{
    return reinterpret_cast<QPoolPageHeader *>(reinterpret_cast<quintptr>(chunk)
                                               & ~quintptr(QPoolPageSize - 1));
}

// Free chunks (and uncarved page space) are poisoned under ASan, so that a use after free is
// reported. The allocator itself unpoisons a free chunk's link word around each access.
inline void qPoolPoison(const volatile void *p, std::size_t bytes) noexcept
{
#ifdef QT_FASTCONNECT_POOL_ASAN
    ASAN_POISON_MEMORY_REGION(p, bytes);
#else
    Q_UNUSED(p);
    Q_UNUSED(bytes);
#endif
}

inline void qPoolUnpoison(const volatile void *p, std::size_t bytes) noexcept
{
#ifdef QT_FASTCONNECT_POOL_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, bytes);
#else
    Q_UNUSED(p);
    Q_UNUSED(bytes);
#endif
}

inline QPoolChunk *qPoolReadNext(QPoolChunk *c) noexcept
{
    qPoolUnpoison(&c->next, sizeof(c->next));
    QPoolChunk *next = c->next;
    qPoolPoison(&c->next, sizeof(c->next));
    return next;
}

inline void qPoolWriteNext(QPoolChunk *c, QPoolChunk *next) noexcept
{
    qPoolUnpoison(&c->next, sizeof(c->next));
    c->next = next;
    qPoolPoison(&c->next, sizeof(c->next));
}

// One free-chunk stack and the pages it carves chunks from.
//
// Owner-side state (m_stack, m_bump*, m_pages, the pages' used counts) belongs to the arena's
// owner: its thread (MultiPool, MultiThreaded), the holder of m_stackLock (SharedPool), the one
// thread using the pool (SingleThreaded), or, while the arena is orphaned, the holder of its
// pool's orphan lock. Ownership passes between threads only through those locks.
class Q_FASTCONNECT_EXPORT QPoolArena
{
    Q_DISABLE_COPY_MOVE(QPoolArena)
public:
    explicit constexpr QPoolArena(QPoolControl *control) noexcept : m_control(control) { }

    // Owner: O(1). Null when the stack is empty.
    QPoolChunk *pop() noexcept
    {
        // No per-page counting here: a read-modify-write of the page header on every allocate
        // and free chained the operations through memory. countUse() derives it when needed.
        QPoolChunk *c = m_stack;
        if (Q_LIKELY(c))
            m_stack = qPoolReadNext(c);
        return c;
    }

    // Owner: O(1).
    void push(QPoolChunk *c) noexcept
    {
        qPoolWriteNext(c, m_stack);
        m_stack = c;
    }

    // Any thread, MultiThreaded: lock-free LIFO push onto the backlog. No ABA problem: the only
    // other operation on m_backlog is taking the whole list (adoptBacklog()).
    void pushRemote(QPoolChunk *c) noexcept
    {
        // relaxed: only the first guess of the head; the CAS checks it.
        QPoolChunk *head = m_backlog.load(std::memory_order_relaxed);
        do {
            qPoolWriteNext(c, head);
            // release on success: publishes the link and everything the freeing thread wrote
            // to the chunk to the owner, whose exchange(acquire) in adoptBacklog() takes it.
            // relaxed on failure: the loop retries with the head it read.
        } while (!m_backlog.compare_exchange_weak(head, c, std::memory_order_release,
                                                  std::memory_order_relaxed));
    }

    // Any thread, SharedPool: push onto the backlog under the backlog lock.
    void pushLocked(QPoolChunk *c) noexcept
    {
        m_backlogLock.lock();   // pairs with the unlock in adoptBacklog() and other pushes
        // relaxed: the backlog lock orders these accesses.
        qPoolWriteNext(c, m_backlog.load(std::memory_order_relaxed));
        m_backlog.store(c, std::memory_order_relaxed);
        m_backlogLock.unlock();
    }

    // Owner, out of line: adopts the backlog, else carves a chunk from the newest page, else
    // takes a new page. Never null (qBadAlloc() when no page can be mapped).
    QPoolChunk *refill();
    // Owner: moves the whole backlog onto the stack (one exchange or one locked swap).
    void adoptBacklog() noexcept;
    // Owner: true when no chunk is out or in the backlog (after adoptBacklog()).
    bool isEmpty() noexcept;
    // Owner: adopts the backlog and returns every page with no chunk out. Returns the count.
    qint64 trim() noexcept;
    // Owner: sets every page's used count (off the hot path: O(pages + free chunks)).
    void countUse() noexcept;

    // Owner-side state; cache line 0.
    QPoolChunk *m_stack = nullptr;        // free chunks, LIFO, linked in place
    char *m_bump = nullptr;               // uncarved rest of the newest page
    char *m_bumpEnd = nullptr;
    QPoolPageHeader *m_pages = nullptr;   // every page of this arena
    QPoolControl *const m_control;
    const void *m_owner = nullptr;        // the owning thread's token; null if orphaned or shared
    QPoolArena *m_nextOrphan = nullptr;   // protected by the pool's orphan lock
    QBasicMutex m_stackLock;              // SharedPool: held around pop() and refill()

    // Written by freeing threads; cache line 1.
    alignas(64) std::atomic<QPoolChunk *> m_backlog { nullptr };
    QBasicMutex m_backlogLock;            // SharedPool: held around every m_backlog access
};

// One per QPoolAllocator instantiation: constant-initialized and trivially destructible, so a
// pool works before main() and during static destruction.
struct QPoolControl
{
    Q_DISABLE_COPY_MOVE(QPoolControl)

    constexpr QPoolControl(std::size_t size, QPoolThreadModel threadModel) noexcept
        : chunkSize(quint32(size)), model(threadModel), sharedArena(this)
    { }

    const quint32 chunkSize;
    const QPoolThreadModel model;
    // Statistics; relaxed atomics, they order nothing.
    std::atomic<quint64> fallbacks { 0 };
    std::atomic<qint64> pagesInUse { 0 };
    std::atomic<qint64> pagesReturned { 0 };
    std::atomic<qint64> arenas { 0 };
    std::atomic<qint64> orphanCount { 0 };   // changed under orphanLock
    // MultiPool and MultiThreaded: arenas whose thread exited with chunks out, waiting for a
    // thread that needs an arena. Touched at thread start and exit and by trim() only.
    QBasicMutex orphanLock;
    QPoolArena *orphans = nullptr;            // protected by orphanLock
    // SingleThreaded and SharedPool: the one arena.
    QPoolArena sharedArena;
};

Q_FASTCONNECT_EXPORT QPoolChunk *qPoolAllocateSlow(QPoolControl *control, QPoolArena **slot);
Q_FASTCONNECT_EXPORT void *qPoolAllocateOversized(QPoolControl *control, std::size_t size);
Q_FASTCONNECT_EXPORT void qPoolTrim(QPoolControl *control, QPoolArena **slot) noexcept;
Q_FASTCONNECT_EXPORT QPoolAllocatorStats qPoolStats(QPoolControl *control) noexcept;
Q_FASTCONNECT_EXPORT const void *qPoolCurrentThreadToken() noexcept;
Q_NORETURN Q_DECL_COLD_FUNCTION Q_FASTCONNECT_EXPORT void qPoolDoubleFree(const void *chunk);

inline void *qPoolHandOut(QPoolChunk *c, std::size_t size, std::size_t chunkSize) noexcept
{
    qPoolUnpoison(c, sizeof(QPoolChunk));
    c->freeMark = 0;   // always: a stale mark from a checking build would read as a double free
    qPoolPoison(c, chunkSize);
    qPoolUnpoison(c, size);
    return c;
}

inline QPoolChunk *qPoolTakeBack(void *p, std::size_t chunkSize) noexcept
{
    auto *c = static_cast<QPoolChunk *>(p);
#ifdef QT_FASTCONNECT_POOL_CHECKS
    qPoolUnpoison(c, sizeof(QPoolChunk));
    if (Q_UNLIKELY(c->freeMark == QPoolFreeMark))
        qPoolDoubleFree(c);
    c->freeMark = QPoolFreeMark;
#endif
    qPoolPoison(c, chunkSize);
    return c;
}

} // namespace QtFastConnectPrivate

template <std::size_t ChunkSize, QPoolThreadModel Model = QPoolThreadModel::MultiThreaded>
class QPoolAllocator
{
    static_assert(ChunkSize > 0, "QPoolAllocator: the chunk size must not be 0");

public:
    using ThreadModel = QPoolThreadModel;
    static constexpr std::size_t chunkSize =
            ChunkSize < 16 ? 16 : (ChunkSize + 15) & ~std::size_t(15);
    static constexpr ThreadModel threadModel = Model;
    static constexpr std::size_t chunksPerPage =
            (QtFastConnectPrivate::QPoolPageSize - QtFastConnectPrivate::QPoolPageHeaderSize)
            / chunkSize;
    static_assert(ChunkSize <= QtFastConnectPrivate::QPoolPageSize
                                       - QtFastConnectPrivate::QPoolPageHeaderSize,
                  "QPoolAllocator: the chunk size must be at most 3968 bytes");

    QPoolAllocator() = delete;

    Q_REQUIRED_RESULT static void *allocate(std::size_t size = chunkSize)
    {
        using namespace QtFastConnectPrivate;
        Q_ASSERT_X(size <= chunkSize, "QPoolAllocator::allocate",
                   "request larger than the chunk size");
        if (Q_UNLIKELY(size > chunkSize))
            return qPoolAllocateOversized(&s_control, size);

        QPoolChunk *c;
        if constexpr (Model == QPoolThreadModel::SingleThreaded) {
            c = s_control.sharedArena.pop();
            if (Q_UNLIKELY(!c))
                c = s_control.sharedArena.refill();
        } else if constexpr (Model == QPoolThreadModel::SharedPool) {
            QPoolArena &arena = s_control.sharedArena;
            arena.m_stackLock.lock();     // hands the owner side from the previous holder
            c = arena.pop();
            if (Q_UNLIKELY(!c))
                c = arena.refill();       // takes m_backlogLock inside
            arena.m_stackLock.unlock();
        } else {
            QPoolArena *arena = s_arena;
            c = Q_LIKELY(arena) ? arena->pop() : nullptr;
            if (Q_UNLIKELY(!c))
                c = qPoolAllocateSlow(&s_control, &s_arena);
        }
        return qPoolHandOut(c, size, chunkSize);
    }

    static void deallocate(void *p, std::size_t size = chunkSize) noexcept
    {
        using namespace QtFastConnectPrivate;
        if (Q_UNLIKELY(size > chunkSize)) {
            ::operator delete(p);
            return;
        }
        if (Q_UNLIKELY(!p))
            return;

        QPoolChunk *c = qPoolTakeBack(p, chunkSize);
        QPoolArena *arena = qPoolPageOf(c)->arena;
        if constexpr (Model == QPoolThreadModel::SingleThreaded) {
            arena->push(c);
        } else if constexpr (Model == QPoolThreadModel::SharedPool) {
            arena->pushLocked(c);
        } else if constexpr (Model == QPoolThreadModel::MultiPool) {
            Q_ASSERT_X(arena->m_owner == qPoolCurrentThreadToken(), "QPoolAllocator::deallocate",
                       "a MultiPool chunk must be freed by the thread that allocated it");
            arena->push(c);
        } else {
            // The arena of the page is this thread's own (the usual case) or another's.
            if (Q_LIKELY(arena == s_arena))
                arena->push(c);
            else
                arena->pushRemote(c);
        }
    }

    static quint64 fallbackCount() noexcept
    {
        return s_control.fallbacks.load(std::memory_order_relaxed);
    }

    static QPoolAllocatorStats stats() noexcept
    {
        return QtFastConnectPrivate::qPoolStats(&s_control);
    }

    static void trim() noexcept
    {
        if constexpr (Model == QPoolThreadModel::MultiPool
                      || Model == QPoolThreadModel::MultiThreaded) {
            QtFastConnectPrivate::qPoolTrim(&s_control, &s_arena);
        } else {
            QtFastConnectPrivate::qPoolTrim(&s_control, nullptr);
        }
    }

private:
    static inline QtFastConnectPrivate::QPoolControl s_control { chunkSize, Model };
    // MultiPool and MultiThreaded: this thread's arena; null until its first allocation and
    // again after it exited. Trivially destructible, so it needs no TLS guard or wrapper.
    static inline thread_local QtFastConnectPrivate::QPoolArena *s_arena
            QT_FASTCONNECT_TLS_INITIAL_EXEC = nullptr;
};

class QSizeClassPool
{
public:
    static constexpr std::size_t largestPooledSize = 256;

    QSizeClassPool() = delete;

    Q_REQUIRED_RESULT static void *allocate(std::size_t size)
    {
        if (size <= 32)
            return QPoolAllocator<32>::allocate(size);
        if (size <= 64)
            return QPoolAllocator<64>::allocate(size);
        if (size <= 128)
            return QPoolAllocator<128>::allocate(size);
        if (size <= 256)
            return QPoolAllocator<256>::allocate(size);
        return ::operator new(size);
    }

    static void deallocate(void *p, std::size_t size) noexcept
    {
        if (size <= 32)
            QPoolAllocator<32>::deallocate(p, size);
        else if (size <= 64)
            QPoolAllocator<64>::deallocate(p, size);
        else if (size <= 128)
            QPoolAllocator<128>::deallocate(p, size);
        else if (size <= 256)
            QPoolAllocator<256>::deallocate(p, size);
        else
            ::operator delete(p);
    }
};

#define Q_FASTCONNECT_POOLED \
    static void *operator new(std::size_t size) \
    { return QT_PREPEND_NAMESPACE(QSizeClassPool)::allocate(size); } \
    static void operator delete(void *p, std::size_t size) noexcept \
    { QT_PREPEND_NAMESPACE(QSizeClassPool)::deallocate(p, size); } \
    static void *operator new(std::size_t size, std::align_val_t alignment) \
    { return ::operator new(size, alignment); } \
    static void operator delete(void *p, std::size_t size, std::align_val_t alignment) noexcept \
    { Q_UNUSED(size); ::operator delete(p, alignment); }

QT_END_NAMESPACE

#endif // QPOOLALLOCATOR_H
