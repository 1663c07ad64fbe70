// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QPOOLALLOCATOR_H
#define QPOOLALLOCATOR_H

#include <QtFastConnect/qfastconnectglobal.h>

#include <atomic>
#include <cstddef>
#include <new>

// AddressSanitizer: free chunks are poisoned (see qPoolPoison() below).
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define QT_FASTCONNECT_POOL_ASAN
#include <sanitizer/asan_interface.h>
#endif

// Double-free detection: debug builds and AddressSanitizer builds.
#if !defined(QT_NO_DEBUG) || defined(QT_FASTCONNECT_POOL_ASAN)
#define QT_FASTCONNECT_POOL_CHECKS
#endif

QT_BEGIN_NAMESPACE

// One model is left. Its value is part of the ABI (it is in the mangled name of every
// QPoolAllocator<N> and in each QPoolHandle); 0 to 2 were the models that 0.9.0 also had
// (SingleThreaded, SharedPool, MultiPool), which the library refuses (qFatal()) at a pool's
// first use by a binary built against that release.
enum class QPoolThreadModel : quint8 {
    MultiThreaded = 3,
};

struct QPoolAllocatorStats
{
    qint64 pagesInUse = 0; // this pool: pages held by its arenas, live or orphaned
    qint64 pagesReturned = 0; // this pool: pages given back since the process started
    qint64 arenas = 0; // this pool: arenas, live or orphaned
    qint64 orphanedArenas = 0; // this pool: arenas whose thread exited with chunks still out
    quint64 fallbackCount = 0; // this pool: oversized requests served by ::operator new
    qint64 pagesMapped = 0; // process: pages obtained from the system, all pools
    qint64 pagesCached = 0; // process: returned pages kept for reuse, all pools
};

// Machinery behind QPoolAllocator. Not public API, but part of the library's ABI: the allocation
// and free paths are inline (a call per allocation would cost more than the allocation), so
// binaries built against this header read and write what is declared here, and only that:
//   - a free chunk's two words (QPoolChunk);
//   - the page geometry: 4 KiB pages aligned to 4 KiB, whose first word points to the
//     QPoolArenaHead of the arena owning the page, and whose chunks start at byte 128;
//   - QPoolArenaHead: an arena's free-chunk stack, its backlog and their two locks;
//   - QPoolHandle: one per pool, a static member of QPoolAllocator<N, Model> in each shared
//     object that instantiates it.
// Everything else (the rest of the arena and of the page header, the pool's statistics and
// orphaned arenas, the page cache) is the library's (qpoolallocator_p.h), reached through the
// exported functions below, and may change with every release. Changing anything in this
// namespace changes the ABI: scripts/abi-check.sh reports it.
//
// Thread-local storage: the per-thread arena pointer is a static thread_local member of the
// template, with the compiler's default TLS model. In an executable the linker relaxes its
// access to a load relative to the thread pointer (no call); in a shared object (a plugin) it
// is a __tls_get_addr() call, which works however the object is loaded. Initial-exec, faster in
// a shared object, takes static TLS space, which a dlopen()ed object may not get ("cannot
// allocate memory in static TLS block"; tests/auto/plugin).
namespace QtFastConnectPrivate {

struct QPoolControl; // opaque: created by the library at a pool's first use

inline constexpr std::size_t QPoolPageSize = 4096;
inline constexpr std::size_t QPoolPageHeaderSize = 128;
// Written into the second word of a chunk when it is freed and cleared when it is handed out,
// in builds with QT_FASTCONNECT_POOL_CHECKS; finding it on a free means a double free.
inline constexpr quintptr QPoolFreeMark = quintptr(Q_UINT64_C(0xF4EE0C4A2D1F7A5E));

// A free chunk. An allocated chunk is the caller's bytes; chunks are at least 16 bytes.
struct QPoolChunk
{
    QPoolChunk *next; // the stack or backlog below this chunk
    quintptr freeMark; // QPoolFreeMark while free (checking builds only)
};

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

// The part of an arena that the inline paths use: its free-chunk stack and the backlog that
// other threads free into. The arena's owner side (stack) belongs to its thread; ownership
// passes between threads only through locks (an orphaned arena's, see qpoolallocator_p.h).
struct QPoolArenaHead
{
    // Owner: O(1). Null when the stack is empty.
    QPoolChunk *pop() noexcept
    {
        // No per-page counting here: a read-modify-write of the page header on every allocate
        // and free chained the operations through memory. The library counts when it must.
        QPoolChunk *c = stack;
        if (Q_LIKELY(c))
            stack = qPoolReadNext(c);
        return c;
    }

    // Owner: O(1).
    void push(QPoolChunk *c) noexcept
    {
        qPoolWriteNext(c, stack);
        stack = c;
    }

    // Any thread: lock-free LIFO push onto the backlog. No ABA problem: the only
    // other operation on the backlog is taking the whole list (the library's adoptBacklog()).
    void pushRemote(QPoolChunk *c) noexcept
    {
        // relaxed: only the first guess of the head; the CAS checks it.
        QPoolChunk *head = backlog.load(std::memory_order_relaxed);
        do {
            qPoolWriteNext(c, head);
            // [P20 push] release on success: publishes the link and everything the freeing thread
            // wrote to the chunk to the owner, whose exchange(acquire) in adoptBacklog() takes
            // it. relaxed on failure: the loop retries with the head it read.
        } while (!backlog.compare_exchange_weak(head, c, std::memory_order_release,
                                                std::memory_order_relaxed));
    }

    // Owner side; cache line 0.
    QPoolChunk *stack = nullptr; // free chunks, LIFO, linked in place
    // Written by freeing threads; cache line 1, so that they do not contend with the owner.
    // (0.9.0 also had a lock after each of the two, for SharedPool: the offsets and the size,
    // 128 bytes, are unchanged without them.)
    alignas(64) std::atomic<QPoolChunk *> backlog { nullptr };
};

// One per QPoolAllocator<N, Model> in each shared object that instantiates it: constant-
// initialized and trivially destructible, so a pool works before main() and during static
// destruction. The library creates the rest of the pool (its QPoolControl) at first use.
struct QPoolHandle
{
    Q_DISABLE_COPY_MOVE(QPoolHandle)

    constexpr QPoolHandle(std::size_t size, QPoolThreadModel threadModel) noexcept
        : chunkSize(quint32(size)), model(threadModel)
    {}

    // A head that stays empty (never pushed to), the value of each thread's arena pointer until
    // its first allocation and after its exit, so that the inline path tests for no arena and
    // for an empty stack at once. (In 0.9.0 also the one arena of a SingleThreaded or
    // SharedPool pool: hence its name.)
    QPoolArenaHead sharedArena;
    // Null until the library creates it; never destroyed.
    std::atomic<QPoolControl *> control { nullptr };
    const quint32 chunkSize;
    const QPoolThreadModel model;
};

// The head of the arena that owns chunk, from the first word of its page.
inline QPoolArenaHead *qPoolArenaOf(const void *chunk) noexcept
{
    return *reinterpret_cast<QPoolArenaHead *const *>(reinterpret_cast<quintptr>(chunk)
                                                      & ~quintptr(QPoolPageSize - 1));
}

// The stack of this thread's arena of the pool, *slot, is empty,
// or *slot is &pool->sharedArena (no arena yet). Sets *slot on the thread's first allocation.
// Never null (qBadAlloc() when no page can be mapped). slotOf returns &slot's thread_local in
// the calling thread: at thread exit the arena is released through a fresh address, because
// under emulated TLS (MinGW-w64's GCC) the storage the first address pointed to may have been
// freed by then. (The overload without it, for binaries built against the first release,
// keeps the address.)
using QPoolSlotOf = QPoolArenaHead **(*)() noexcept;
Q_FASTCONNECT_EXPORT QPoolChunk *qPoolAllocateSlow(QPoolHandle *pool, QPoolSlotOf slotOf);
Q_FASTCONNECT_EXPORT QPoolChunk *qPoolAllocateSlow(QPoolHandle *pool, QPoolArenaHead **slot);
// Binaries built against 0.9.0 only (its SingleThreaded and SharedPool models): qFatal().
Q_FASTCONNECT_EXPORT QPoolChunk *qPoolRefillShared(QPoolHandle *pool);
Q_FASTCONNECT_EXPORT void *qPoolAllocateOversized(QPoolHandle *pool, std::size_t size);
Q_FASTCONNECT_EXPORT void qPoolTrim(QPoolHandle *pool, QPoolArenaHead **slot) noexcept;
Q_FASTCONNECT_EXPORT QPoolAllocatorStats qPoolStats(QPoolHandle *pool) noexcept;
// Binaries built against 0.9.0 only (debug builds, its MultiPool model): whether arena is the
// calling thread's.
Q_FASTCONNECT_EXPORT bool qPoolIsCurrentThreadArena(const QPoolArenaHead *arena) noexcept;
Q_NORETURN Q_DECL_COLD_FUNCTION Q_FASTCONNECT_EXPORT void qPoolDoubleFree(const void *chunk);

inline void *qPoolHandOut(QPoolChunk *c, std::size_t size, std::size_t chunkSize) noexcept
{
    qPoolUnpoison(c, sizeof(QPoolChunk));
    c->freeMark = 0; // always: a stale mark from a checking build would read as a double free
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

template<std::size_t ChunkSize, QPoolThreadModel Model = QPoolThreadModel::MultiThreaded>
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
            return qPoolAllocateOversized(&s_pool, size);

        QPoolChunk *c = s_arena->pop();
        if (Q_UNLIKELY(!c))
            c = qPoolAllocateSlow(&s_pool, &arenaSlot);
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
        QPoolArenaHead *arena = qPoolArenaOf(c);
        // The arena of the page is this thread's own (the usual case) or another's.
        if (Q_LIKELY(arena == s_arena))
            arena->push(c);
        else
            arena->pushRemote(c);
    }

    static quint64 fallbackCount() noexcept { return stats().fallbackCount; }

    static QPoolAllocatorStats stats() noexcept
    {
        return QtFastConnectPrivate::qPoolStats(&s_pool);
    }

    static void trim() noexcept { QtFastConnectPrivate::qPoolTrim(&s_pool, &s_arena); }

private:
    static inline QtFastConnectPrivate::QPoolHandle s_pool { chunkSize, Model };
    // This thread's arena; &s_pool.sharedArena (always empty)
    // until its first allocation and again after it exited. Constant-initialized and trivially
    // destructible, so it needs no TLS guard or wrapper. The default TLS model, not initial-exec:
    // see the top of QtFastConnectPrivate above.
    static inline thread_local QtFastConnectPrivate::QPoolArenaHead *s_arena = &s_pool.sharedArena;
    static QtFastConnectPrivate::QPoolArenaHead **arenaSlot() noexcept { return &s_arena; }
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

#define Q_FASTCONNECT_POOLED                                                                       \
    static void *operator new(std::size_t size)                                                    \
    {                                                                                              \
        return QT_PREPEND_NAMESPACE(QSizeClassPool)::allocate(size);                               \
    }                                                                                              \
    static void operator delete(void *p, std::size_t size) noexcept                                \
    {                                                                                              \
        QT_PREPEND_NAMESPACE(QSizeClassPool)::deallocate(p, size);                                 \
    }                                                                                              \
    static void *operator new(std::size_t size, std::align_val_t alignment)                        \
    {                                                                                              \
        return ::operator new(size, alignment);                                                    \
    }                                                                                              \
    static void operator delete(void *p, std::size_t size, std::align_val_t alignment) noexcept    \
    {                                                                                              \
        Q_UNUSED(size);                                                                            \
        ::operator delete(p, alignment);                                                           \
    }

QT_END_NAMESPACE

#endif // QPOOLALLOCATOR_H
