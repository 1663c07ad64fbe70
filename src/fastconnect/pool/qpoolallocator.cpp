// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qpoolallocator_p.h"
#include "../qfunnelplatform_p.h"

#include <QtCore/qabstracteventdispatcher.h>
#include <QtCore/qthread.h>
#include <QtCore/qthreadstorage.h>
#include <QtCore/qvarlengtharray.h>
#include <QtCore/private/qcoreapplication_p.h>

#include <cstdlib>
#include <utility>

#if defined(QT_FASTCONNECT_POOL_ASAN) && __has_include(<sanitizer/lsan_interface.h>)
#include <sanitizer/lsan_interface.h>
#define QT_FASTCONNECT_POOL_LSAN_ROOTS
#endif

QT_BEGIN_NAMESPACE

/*!
    \class QPoolAllocator
    \inmodule QtFastConnect
    \brief The QPoolAllocator class hands out fixed-size memory chunks from per-thread arenas,
    in a few instructions per allocation and per free, including frees from other threads.

    \code
    template <std::size_t ChunkSize,
              QPoolThreadModel Model = QPoolThreadModel::MultiThreaded>
    class QPoolAllocator;
    \endcode

    QPoolAllocator is for many small objects of one size that are allocated and freed at a
    high rate, in particular objects that one thread allocates and another frees, such as the
    per-emission calls of a funnel connection: the emitting thread allocates them, the
    receiver's thread frees them. With glibc's \c malloc such a cross-thread free costs from
    one to several hundred instructions; here it is about fifteen, one of them a
    compare-and-swap.

    The class is a set of static functions: there are no instances. Each combination of
    \c ChunkSize and \c Model is one pool for the whole process (strictly: for each shared
    object that instantiates it, see below).

    \section1 Chunks and pages

    Every chunk has chunkSize bytes: \c ChunkSize rounded up to a multiple of 16, at least 16,
    at most 3,968. Chunks are 16-byte aligned. They are carved from 4 KiB pages aligned to
    4 KiB, whose first 128 bytes are a header naming the arena the page belongs to, so a free
    finds its arena by masking the chunk's address: no size or owner is stored per chunk.
    A page holds chunksPerPage chunks (124 chunks of 32 bytes, 62 of 64, 31 of 128, 15 of 256).
    Pages are mapped 32 at a time (128 KiB), so system calls are rare.

    Each arena keeps its free chunks on a stack linked through the chunks themselves (a free
    chunk's first word points to the next one), so allocate() and deallocate() are O(1): they
    pop and push. An arena whose stack is empty first takes the chunks that other threads freed
    into its \e backlog, then carves a new chunk from its newest page, then takes a page.

    \section1 Arenas and threads

    Each thread has its own arena. A chunk freed by its own thread goes back onto that thread's
    stack, with no lock and no atomic operation; a chunk freed by another thread is pushed onto
    the owning arena's backlog with a lock-free compare-and-swap, and the owner takes its whole
    backlog with one atomic exchange when its stack runs dry. The \c Model parameter has one
    value, QPoolThreadModel::MultiThreaded, the default. (The first release also had
    single-threaded, locked and same-thread-only models. Measured beside glibc's \c malloc and
    mimalloc, the locked one was slower than \c malloc, and the other two gained under half a
    nanosecond per allocation and free over MultiThreaded, which is about twice as fast as
    mimalloc already: they were removed.)

    A thread gets its arena at its first allocation. When the thread exits, an arena with no
    chunk out is destroyed and its pages are returned; an arena with chunks still out (held by
    other threads, or leaked) is \e orphaned: kept, its chunks still freeable from any thread,
    and adopted by the next thread of the same pool that needs an arena. A thread allocating
    after its arena was released (from a \c thread_local destructor that runs later) is served
    from an orphaned or new arena, which is orphaned again at once.

    A thread started by QThread releases its arenas earlier, when Qt finishes the thread (with
    its QThreadStorage data, after the QThread::finished() signal), so that they are destroyed or
    orphaned when QThread::wait() returns: with Qt 6.4 on Unix, wait() returns before the thread
    runs its \c thread_local destructors. To tell a QThread from other threads, a thread's first
    allocation creates Qt's per-thread data for a thread that has none (as a QObject created in
    it would), once Qt knows its main thread.

    \section1 Returning memory

    Pages that have no chunk out are given back by trim(), not automatically: an explicit call
    keeps allocation-heavy phases free of system calls. Returned pages keep their address range
    and are reused (by any pool) before new pages are mapped; on systems with 4 KiB pages their
    memory is released with \c{madvise(MADV_DONTNEED)}. Arenas of exited threads are returned
    when the thread exits (no chunks out) or by a later trim() (once their chunks have come
    back); for a QThread, by the time QThread::wait() returns (see above).

    One automatic case: a thread about to wait for room in a full QFunnel returns its arenas'
    pages that have no chunk out, keeping their memory resident for the next arena that needs a
    page. So the pages of several producers follow the calls in flight of all of them, not the
    sum of each one's peak. An explicit trim() also releases the memory of those resident
    pages.

    \section1 Oversized requests

    allocate() and deallocate() take the size of the request, like \c std::allocator. A size
    larger than chunkSize is a programming error: debug builds assert; release builds serve it
    with \c{::operator new} and count it in fallbackCount(). deallocate() must receive the same
    size as allocate() did, so that it recognises such blocks.

    \section1 Memory checkers

    Under AddressSanitizer, free chunks and uncarved page space are poisoned, so a use after
    free is reported; an allocated chunk is addressable for exactly the size that was
    requested. Debug builds and AddressSanitizer builds detect a double free (the chunk's second
    word holds a marker while it is free) and abort with qFatal(). LeakSanitizer scans the
    pages, so heap blocks that only pool chunks point to are not reported as leaks. Valgrind's
    memcheck does not see individual chunks: it sees pages.

    \section1 Shared objects

    The per-thread arena pointer and a small handle of the pool are static members of the
    template; the library creates the rest of the pool at its first use. Qt builds libraries
    with hidden visibility, so each shared object that instantiates QPoolAllocator<N, Model> has
    its own pool. A chunk may still be freed through any of them: the page header, not the
    caller, names the arena. stats() and fallbackCount() describe the calling shared object's
    pool.

    The per-thread arena pointer uses the compiler's default thread-local storage model, so a
    plugin that instantiates QPoolAllocator (directly, or through QtFastConnect::connect() and
    QtFastConnect::invoke()) loads with \c dlopen() however little static TLS space is left.
    A plugin that uses the pool must stay loaded while any thread that allocated from it
    runs, or chunks of it are pending.

    \section1 Origin

    The design follows a published "fast and thread-safe pool allocator for Qt" that was never
    merged into Qt: 4 KiB aligned pages whose header names the arena, an arena per thread, and
    cross-thread frees into the owner's backlog. It measured three times faster than mimalloc
    single-threaded.

    \sa QSizeClassPool, Q_FASTCONNECT_POOLED, QPoolAllocatorStats
*/

/*!
    \enum QPoolThreadModel
    \relates QPoolAllocator

    How a QPoolAllocator's arenas relate to threads. One value is left (see \l{Arenas and threads}).

    \value MultiThreaded    An arena per thread; any thread may free any chunk. The default.
*/

/*!
    \typedef QPoolAllocator::ThreadModel
    Synonym for QPoolThreadModel.
*/

/*!
    \variable QPoolAllocator::chunkSize
    The size of every chunk, in bytes: \c ChunkSize rounded up to a multiple of 16, at least 16.
*/

/*!
    \variable QPoolAllocator::threadModel
    The pool's thread model, \c Model.
*/

/*!
    \variable QPoolAllocator::chunksPerPage
    How many chunks one 4 KiB page holds: (4,096 − 128) / chunkSize.
*/

/*!
    \fn template <std::size_t ChunkSize, QPoolThreadModel Model> void *QPoolAllocator<ChunkSize, Model>::allocate(std::size_t size)

    Returns a chunk of chunkSize bytes, 16-byte aligned, uninitialized, for a request of
    \a size bytes (by default chunkSize). Never returns null: when no memory can be mapped it
    calls qBadAlloc(), like \c{::operator new}.

    Takes O(1) time; about a dozen instructions when the calling thread's arena has a free
    chunk. Any thread may call it.

    A \a size larger than chunkSize is a programming error: it asserts in debug builds; release
    builds return a block from \c{::operator new} and count it (see fallbackCount()). Under
    AddressSanitizer exactly \a size bytes of the chunk are addressable.

    \sa deallocate()
*/

/*!
    \fn template <std::size_t ChunkSize, QPoolThreadModel Model> void QPoolAllocator<ChunkSize, Model>::deallocate(void *p, std::size_t size)

    Frees the chunk \a p, which allocate() returned for a request of \a size bytes (the same
    size; by default chunkSize). A null \a p does nothing. Takes O(1) time.

    Any thread may call it: a free from another thread than the one that allocated \a p costs
    one compare-and-swap on the owning arena's backlog.

    Freeing a chunk twice is undefined behavior; debug and AddressSanitizer builds detect a
    chunk freed again before it was handed out again, and abort with qFatal(). A pointer that
    did not come from this pool, or a \a size different from the one allocated, is undefined
    behavior.

    \sa allocate()
*/

/*!
    \fn template <std::size_t ChunkSize, QPoolThreadModel Model> quint64 QPoolAllocator<ChunkSize, Model>::fallbackCount()

    Returns how many requests larger than chunkSize this pool served with \c{::operator new}
    since the process started. Always 0 in a debug build that passed its assertions. Any thread
    may call it; the count is exact once the allocating threads have been synchronized with.
*/

/*!
    \fn template <std::size_t ChunkSize, QPoolThreadModel Model> QPoolAllocatorStats QPoolAllocator<ChunkSize, Model>::stats()

    Returns this pool's page and arena counts and the process-wide page counts. Any thread may
    call it; the numbers are a snapshot and may be stale while other threads allocate.
*/

/*!
    \fn template <std::size_t ChunkSize, QPoolThreadModel Model> void QPoolAllocator<ChunkSize, Model>::trim()

    Returns this pool's pages that have no chunk out, and destroys orphaned arenas that have
    no chunk out any more. Takes time proportional to the free chunks and pages it looks at.

    It trims the calling thread's own arena and every orphaned arena of the pool; other
    threads' arenas are theirs to trim. Chunks that other threads freed into the caller's arena
    count as back once this call has adopted them.

    The arenas of a thread that was joined (\c{std::thread::join()}) or waited for
    (QThread::wait()) are orphaned or destroyed already: once every chunk of theirs is back,
    trim() destroys them, and stats() no longer counts them.

    Returned pages are kept for reuse by any pool; their memory, and that of the pages which
    threads waiting in a QFunnel left resident, is released to the system where the page size
    is 4 KiB (see QPoolAllocatorStats::pagesCached).
*/

/*!
    \struct QPoolAllocatorStats
    \inmodule QtFastConnect
    \brief The QPoolAllocatorStats struct is a snapshot of a QPoolAllocator's pages and
    arenas.

    \list
    \li \c pagesInUse: pages (4 KiB each) this pool's arenas hold, live or orphaned.
    \li \c pagesReturned: pages this pool has given back since the process started.
    \li \c arenas: this pool's arenas, live or orphaned.
    \li \c orphanedArenas: arenas whose thread exited with chunks still out.
    \li \c fallbackCount: oversized requests served by \c{::operator new}.
    \li \c pagesMapped: pages obtained from the system by all pools of the process.
    \li \c pagesCached: returned pages, of all pools, kept for reuse.
    \endlist

    \sa QPoolAllocator::stats()
*/

/*!
    \class QSizeClassPool
    \inmodule QtFastConnect
    \brief The QSizeClassPool class allocates from one of four QPoolAllocator size classes
    chosen by the size of the request.

    Requests of up to 32, 64, 128 and 256 bytes come from QPoolAllocator<32>,
    QPoolAllocator<64>, QPoolAllocator<128> and QPoolAllocator<256> (MultiThreaded); larger
    ones from \c{::operator new}, which is not an error here. When the size is a compile-time
    constant (a \c{sizeof}), the choice is made at compile time.

    \sa Q_FASTCONNECT_POOLED
*/

/*!
    \fn void *QSizeClassPool::allocate(std::size_t size)
    Returns a block of at least \a size bytes, 16-byte aligned. Any thread may call it.
*/

/*!
    \fn void QSizeClassPool::deallocate(void *p, std::size_t size)
    Frees \a p, which allocate() returned for \a size bytes (the same size). Any thread may
    call it. A null \a p does nothing.
*/

/*!
    \variable QSizeClassPool::largestPooledSize
    The largest request served from a pool, 256 bytes.
*/

/*!
    \macro Q_FASTCONNECT_POOLED
    \relates QSizeClassPool

    Placed in a class body, gives the class a class-specific \c{operator new} and
    \c{operator delete} that allocate from QSizeClassPool, so \c{new T} and \c{delete p} use
    the pools for objects of up to 256 bytes and the heap for larger ones. Types with an
    alignment above 16 bytes use the aligned global operators instead.

    Deleting through a base class pointer needs a virtual destructor, as always: the size
    passed to \c{operator delete} must be the object's.

    \code
    struct Call
    {
        Q_FASTCONNECT_POOLED
        Call *next;
        int value;
    };
    \endcode
*/

namespace QtFastConnectPrivate {

namespace {

constexpr qsizetype PagesPerBatch = 32; // 128 KiB per system call

static_assert(std::is_standard_layout_v<QPoolArena>, "QPoolArena::fromOwnHead() needs it");

// The default TLS model (not initial-exec) for all of the pool's thread-locals: they are read
// on slow paths only, and a dlopen()ed library cannot count on static TLS space.
// Its address identifies the thread (QPoolArena::m_owner).
thread_local char tlThreadToken = 0;
// Set when this thread's arenas have been released: when Qt finished the thread (a QThread),
// or at its exit.
thread_local bool tlArenasReleased = false;
// Set while this thread's ReleaseAtFinish is in Qt's thread storage and its ThreadArenas exist.
thread_local bool tlReleaseAtFinish = false;

// Guards the creation of every pool's QPoolControl.
Q_CONSTINIT QBasicMutex controlCreationLock;

QPoolControl *controlOf(QPoolHandle *pool)
{
    // [P24 get] acquire: pairs with the release store below, so the control is seen constructed.
    if (QPoolControl *control = pool->control.load(std::memory_order_acquire))
        return control;
    if (Q_UNLIKELY(pool->model != QPoolThreadModel::MultiThreaded)) {
        // A binary built against 0.9.0, which also had SingleThreaded (0), SharedPool (1) and
        // MultiPool (2).
        qFatal("QPoolAllocator: thread model %d was removed after QtFastConnect 0.9.0 (only"
               " MultiThreaded is left): rebuild against this release",
               int(pool->model));
    }
    controlCreationLock.lock();
    // relaxed: the lock orders it against the store of another creator.
    QPoolControl *control = pool->control.load(std::memory_order_relaxed);
    if (!control) {
        // Never deleted: chunks, pages and the pool handle refer to it until the process ends.
        control = new QPoolControl(pool);
        // [P24 publish] release: publishes the constructed control to lock-free readers (above).
        pool->control.store(control, std::memory_order_release);
    }
    controlCreationLock.unlock();
    return control;
}

// Free pages of all pools, and the pages of the process. A page passes from the arena (and
// thread) that returned it to the one that takes it through the lock, which is held for a few
// instructions at a time and never while making a system call.
struct PageCache
{
    QBasicMutex lock;
    void **pages = nullptr; // protected by lock; DiscardedTag marks a page given back
    qsizetype count = 0; // protected by lock
    qsizetype capacity = 0; // protected by lock; at least total, so returning a page
            // never allocates
    qsizetype total = 0; // protected by lock; every page ever mapped
    qsizetype resident = 0; // protected by lock; cached pages kept resident (no tag)
    std::atomic<qint64> mapped { 0 }; // relaxed: statistics only (total, readable unlocked)
};
// Constant-initialized and trivially destructible: usable during static destruction.
Q_CONSTINIT PageCache pageCache;

char *mapPoolPages(qsizetype count)
{
    const std::size_t bytes = std::size_t(count) * QPoolPageSize;
    char *p = mapPages(bytes);
    Q_ASSERT((reinterpret_cast<quintptr>(p) & (QPoolPageSize - 1)) == 0);
#ifdef QT_FASTCONNECT_POOL_LSAN_ROOTS
    // LeakSanitizer does not look into mmap()ed memory: heap blocks that only pool chunks point
    // to would be reported as leaks. The pages are never unmapped while the process runs.
    if (p)
        __lsan_register_root_region(p, bytes);
#endif
    return p;
}

void unmapPoolPages(char *p, qsizetype count)
{
#ifdef QT_FASTCONNECT_POOL_LSAN_ROOTS
    __lsan_unregister_root_region(p, std::size_t(count) * QPoolPageSize);
#endif
    unmapPages(p, std::size_t(count) * QPoolPageSize);
}

// A cached page whose memory was given back to the system (discardPage()) carries this tag in
// its address's low bit: taking it costs a page fault, taking an untagged one does not.
constexpr quintptr DiscardedTag = 1;

void *acquirePage()
{
    pageCache.lock.lock();
    if (pageCache.count > 0) {
        const auto entry = reinterpret_cast<quintptr>(pageCache.pages[--pageCache.count]);
        if (!(entry & DiscardedTag))
            --pageCache.resident;
        pageCache.lock.unlock();
        return reinterpret_cast<void *>(entry & ~DiscardedTag);
    }
    pageCache.lock.unlock();

    // Map outside the lock; a thread racing us maps its own batch, which is harmless.
    char *batch = mapPoolPages(PagesPerBatch);
    if (!batch)
        qBadAlloc();

    pageCache.lock.lock();
    // Make room for every page of the batch now, so that returning pages never allocates.
    if (pageCache.capacity < pageCache.total + PagesPerBatch) {
        const qsizetype capacity = qMax(2 * pageCache.capacity, pageCache.total + PagesPerBatch);
        void *grown = std::realloc(pageCache.pages, std::size_t(capacity) * sizeof(void *));
        if (!grown) {
            pageCache.lock.unlock();
            unmapPoolPages(batch, PagesPerBatch);
            qBadAlloc();
        }
        pageCache.pages = static_cast<void **>(grown);
        pageCache.capacity = capacity;
    }
    pageCache.total += PagesPerBatch;
    // Fresh pages are not resident yet.
    for (qsizetype i = PagesPerBatch - 1; i > 0; --i) {
        pageCache.pages[pageCache.count++] = reinterpret_cast<void *>(
                quintptr(batch + i * qsizetype(QPoolPageSize)) | DiscardedTag);
    }
    pageCache.lock.unlock();
    pageCache.mapped.fetch_add(PagesPerBatch, std::memory_order_relaxed);
    return batch;
}

// Returns a page with no chunk out to the cache: for ReturnToSystem after giving its memory
// back (the next use faults in a zero page); for KeepResident as it is.
void releasePage(void *page, QPoolArena::PageFate fate)
{
    quintptr entry = reinterpret_cast<quintptr>(page);
    if (fate == QPoolArena::ReturnToSystem) {
        discardPage(page, QPoolPageSize); // a system call: not under the lock
        entry |= DiscardedTag;
    }
    qPoolPoison(page, QPoolPageSize); // under ASan, unaddressable until an arena takes it
    pageCache.lock.lock();
    Q_ASSERT(pageCache.count < pageCache.capacity); // capacity covers every mapped page
    pageCache.pages[pageCache.count++] = reinterpret_cast<void *>(entry);
    if (fate == QPoolArena::KeepResident)
        ++pageCache.resident;
    pageCache.lock.unlock();
}

// Gives the memory of the cache's resident pages back to the system; for an explicit trim().
// A page is taken out of the cache while its memory is discarded (so that no arena takes it
// meanwhile), at most a handful at a time; stops after as many as were resident when called.
void discardResidentPages()
{
    pageCache.lock.lock();
    qsizetype left = pageCache.resident;
    pageCache.lock.unlock();
    while (left > 0) {
        void *taken[16];
        qsizetype n = 0;
        pageCache.lock.lock();
        for (qsizetype i = pageCache.count - 1; i >= 0 && n < qsizetype(std::size(taken)); --i) {
            const auto entry = reinterpret_cast<quintptr>(pageCache.pages[i]);
            if (entry & DiscardedTag)
                continue;
            taken[n++] = pageCache.pages[i];
            pageCache.pages[i] = pageCache.pages[--pageCache.count]; // order does not matter
            --pageCache.resident;
        }
        pageCache.lock.unlock();
        if (!n)
            return;
        left -= n;
        for (qsizetype i = 0; i < n; ++i)
            releasePage(taken[i], QPoolArena::ReturnToSystem);
    }
}

// Destroys an arena with no chunk out, returning its pages, or orphans it.
void releaseArena(QPoolControl *control, QPoolArena *arena)
{
    arena->adoptBacklog();
    if (arena->isEmpty()) {
        arena->trim(QPoolArena::ReturnToSystem); // every page is free: returns them all
        Q_ASSERT(!arena->m_pages);
        delete arena;
        control->arenas.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    // Chunks are out. Frees into the backlog may arrive at any time from now on; the arena's
    // owner side passes to the orphan list (and from it to the next adopter) under the lock.
    arena->m_owner = nullptr;
    control->orphanLock.lock();
    arena->m_nextOrphan = control->orphans;
    control->orphans = arena;
    control->orphanCount.fetch_add(1, std::memory_order_relaxed);
    control->orphanLock.unlock();
}

// An orphaned arena to adopt, or a new one. Not yet registered for thread exit.
QPoolArena *takeArena(QPoolControl *control)
{
    control->orphanLock.lock(); // hands over the owner side from the orphaning thread
    QPoolArena *arena = control->orphans;
    if (arena) {
        control->orphans = std::exchange(arena->m_nextOrphan, nullptr);
        control->orphanCount.fetch_sub(1, std::memory_order_relaxed);
    }
    control->orphanLock.unlock();
    if (!arena) {
        arena = new QPoolArena(control);
        control->arenas.fetch_add(1, std::memory_order_relaxed);
    }
    arena->m_owner = &tlThreadToken;
    return arena;
}

// This thread's arenas, one per pool it allocated from. Constructed at the thread's first
// arena (the only time it is touched before exit); its destructor releases them.
struct ThreadArenas
{
    struct Entry
    {
        QPoolHandle *pool;
        QPoolControl *control;
        QPoolArena *arena; // this thread's
        // The pool's thread_local arena pointer in this thread: a function that returns its
        // address, or (binaries built against the first release) the address itself.
        QPoolSlotOf slotOf;
        QPoolArenaHead **slot;
    };
    QVarLengthArray<Entry, 8> entries;

    // Releases every arena: at the thread's exit, or earlier when Qt finishes a QThread.
    void release()
    {
        tlArenasReleased = true;
        for (const Entry &e : std::as_const(entries)) {
            // From now on this thread's frees of these chunks go to the backlog.
            // The pool's always-empty head sends a later allocation to qPoolAllocateSlow(). The
            // address is asked for again: under emulated TLS, the thread's storage may have
            // been freed and made anew since the first allocation (see QFunnelThreadObject).
            *(e.slotOf ? e.slotOf() : e.slot) = &e.pool->sharedArena;
            releaseArena(e.control, e.arena);
        }
        entries.clear();
    }

    ~ThreadArenas()
    {
        tlReleaseAtFinish = false; // a ReleaseAtFinish that Qt destroys later does nothing
        release();
    }
};
using ThreadArenasOf = QFunnelThreadObject<ThreadArenas>;

// Releases a QThread's arenas when Qt finishes the thread, so that they are orphaned or gone
// when QThread::wait() returns and a trim() that follows finds them. Qt destroys a thread's
// QThreadStorage data in QThreadPrivate::finish(), after finished() and before it wakes wait();
// thread_local destructors, ~ThreadArenas among them, run later, when the thread function
// returns: after wait() has returned, with Qt 6.4 on Unix (and on Windows if wait() came after
// finish()).
struct ReleaseAtFinish
{
    ~ReleaseAtFinish()
    {
        // Qt also destroys a marker it finds left over when a QThread restarts, and an adopted
        // thread's in its exit, maybe after ~ThreadArenas, or in another thread on Windows.
        if (m_thread == &tlThreadToken && std::exchange(tlReleaseAtFinish, false))
            ThreadArenasOf::local().release();
    }
    const char *const m_thread = &tlThreadToken;
};

// At the thread's first arena: registers ReleaseAtFinish if the thread is a running QThread.
void releaseAtQThreadFinish()
{
    // Not before Qt knows its main thread: it takes the first thread that asks for its QThread
    // to be it. [P31 read] Acquire, as Qt's own readers: the QThread is seen constructed.
    const QThread *mainThread = QCoreApplicationPrivate::theMainThread.loadAcquire();
    if (!mainThread)
        return;
    // Makes Qt's data for a thread that has none (an adopted thread), as a QObject made in it
    // would. Qt finishes the main thread when the application object is destroyed, and an
    // adopted thread at its exit: neither is wanted. A QThread has an event dispatcher from
    // start() to the end of finish(), an adopted thread only if it ran an event loop.
    if (QThread::currentThread() == mainThread || !QAbstractEventDispatcher::instance())
        return;
    // Never destroyed: threads may finish during static destruction.
    static auto *const markers = new QThreadStorage<ReleaseAtFinish *>;
    markers->setLocalData(new ReleaseAtFinish); // first: it may destroy a marker left over
    tlReleaseAtFinish = true;
}

// A thread allocating after its arenas were released (after Qt finished it, or in a
// thread_local destructor that ran after ours): serve it from an orphan (or new arena) and
// orphan that again at once.
QPoolChunk *allocateAfterRelease(QPoolControl *control)
{
    QPoolArena *arena = takeArena(control);
    QPoolChunk *c = arena->pop();
    if (!c)
        c = arena->refill();
    releaseArena(control, arena); // c is out, so this orphans it
    return c;
}

} // namespace

QPoolChunk *QPoolArena::refill()
{
    adoptBacklog();
    if (QPoolChunk *c = pop())
        return c;

    const quint32 chunkSize = m_control->chunkSize;
    if (m_bump == m_bumpEnd) {
        void *memory = acquirePage();
        qPoolUnpoison(memory, QPoolPageHeaderSize);
        auto *page = new (memory) QPoolPageHeader;
        page->head = &m_ownHead;
        page->arena = this;
        page->control = m_control;
        page->chunkSize = chunkSize;
        page->chunkCount = quint32((QPoolPageSize - QPoolPageHeaderSize) / chunkSize);
        page->used = 0;
        page->nextPage = m_pages;
        m_pages = page;
        m_bump = reinterpret_cast<char *>(page) + QPoolPageHeaderSize;
        m_bumpEnd = m_bump + std::size_t(page->chunkCount) * chunkSize;
        qPoolPoison(m_bump, QPoolPageSize - QPoolPageHeaderSize);
        m_control->pagesInUse.fetch_add(1, std::memory_order_relaxed);
    }
    auto *c = reinterpret_cast<QPoolChunk *>(m_bump);
    m_bump += chunkSize;
    return c;
}

void QPoolArena::adoptBacklog() noexcept
{
    // relaxed: a cheap look that skips the exchange when nothing is there; a push it misses is
    // adopted next time.
    if (!m_ownHead.backlog.load(std::memory_order_relaxed))
        return;
    // [P20 adopt] acquire: pairs with the release CAS in pushRemote(), so the links and whatever
    // the freeing threads wrote to the chunks happen before the owner reuses them.
    QPoolChunk *list = m_ownHead.backlog.exchange(nullptr, std::memory_order_acquire);
    if (!list)
        return;

    // Put the list on top of the stack: as it is, if the stack is empty (refill()'s case, on
    // the allocation path), else after a walk to its tail.
    if (!m_ownHead.stack) {
        m_ownHead.stack = list;
        return;
    }
    QPoolChunk *tail = list;
    while (QPoolChunk *next = qPoolReadNext(tail))
        tail = next;
    qPoolWriteNext(tail, m_ownHead.stack);
    m_ownHead.stack = list;
}

void QPoolArena::countUse() noexcept
{
    // Carved chunks minus the free ones on the stack: what is out, or in the backlog.
    for (QPoolPageHeader *page = m_pages; page; page = page->nextPage)
        page->used = page->chunkCount;
    if (m_bump != m_bumpEnd)
        qPoolPageOf(m_bump)->used -= quint32((m_bumpEnd - m_bump) / m_control->chunkSize);
    for (QPoolChunk *c = m_ownHead.stack; c; c = qPoolReadNext(c))
        --qPoolPageOf(c)->used;
}

bool QPoolArena::isEmpty() noexcept
{
    countUse();
    for (const QPoolPageHeader *page = m_pages; page; page = page->nextPage) {
        if (page->used)
            return false;
    }
    return true;
}

qint64 QPoolArena::trim(PageFate fate) noexcept
{
    adoptBacklog();
    countUse();
    qint64 freePages = 0;
    for (const QPoolPageHeader *page = m_pages; page; page = page->nextPage) {
        if (!page->used)
            ++freePages;
    }
    if (!freePages)
        return 0;

    // Drop the free pages' chunks from the stack, keeping the order of the others.
    QPoolChunk *head = nullptr;
    QPoolChunk *last = nullptr;
    for (QPoolChunk *c = m_ownHead.stack; c;) {
        QPoolChunk *next = qPoolReadNext(c);
        if (qPoolPageOf(c)->used) {
            if (last)
                qPoolWriteNext(last, c);
            else
                head = c;
            last = c;
        }
        c = next;
    }
    if (last)
        qPoolWriteNext(last, nullptr);
    m_ownHead.stack = head;
    if (m_bump != m_bumpEnd && !qPoolPageOf(m_bump)->used)
        m_bump = m_bumpEnd = nullptr;

    QPoolPageHeader **link = &m_pages;
    while (QPoolPageHeader *page = *link) {
        if (page->used) {
            link = &page->nextPage;
        } else {
            *link = page->nextPage;
            releasePage(page, fate);
        }
    }
    m_control->pagesInUse.fetch_sub(freePages, std::memory_order_relaxed);
    m_control->pagesReturned.fetch_add(freePages, std::memory_order_relaxed);
    return freePages;
}

namespace {
QPoolChunk *allocateSlow(QPoolHandle *pool, QPoolSlotOf slotOf, QPoolArenaHead **slot)
{
    if (QPoolArenaHead *head = *slot; head != &pool->sharedArena)
        return QPoolArena::fromOwnHead(head)->refill();

    QPoolControl *control = controlOf(pool);
    if (tlArenasReleased)
        return allocateAfterRelease(control);
    QPoolArena *arena = takeArena(control);
    ThreadArenas &arenas = ThreadArenasOf::local(); // the first local() registers its destructor
    if (arenas.entries.isEmpty())
        releaseAtQThreadFinish(); // the thread's first arena
    arenas.entries.append({ pool, control, arena, slotOf, slot });
    *slot = arena->head();
    if (QPoolChunk *c = arena->pop()) // an adopted orphan may have free chunks
        return c;
    return arena->refill();
}
} // namespace

QPoolChunk *qPoolAllocateSlow(QPoolHandle *pool, QPoolSlotOf slotOf)
{
    return allocateSlow(pool, slotOf, slotOf());
}

QPoolChunk *qPoolAllocateSlow(QPoolHandle *pool, QPoolArenaHead **slot)
{
    return allocateSlow(pool, nullptr, slot);
}

QPoolChunk *qPoolRefillShared(QPoolHandle *pool)
{
    controlOf(pool); // refuses the pool: no model of this release calls this
    Q_UNREACHABLE();
    return nullptr;
}

void *qPoolAllocateOversized(QPoolHandle *pool, std::size_t size)
{
    controlOf(pool)->fallbacks.fetch_add(1, std::memory_order_relaxed);
    return ::operator new(size);
}

namespace {
void trimThreadArenas(QPoolHandle *pool, QPoolControl *control, QPoolArenaHead **slot)
{
    if (slot && *slot != &pool->sharedArena)
        QPoolArena::fromOwnHead(*slot)->trim(QPoolArena::ReturnToSystem);

    // The orphans' owner side belongs to the holder of the orphan lock.
    QVarLengthArray<QPoolArena *, 8> empty;
    control->orphanLock.lock();
    QPoolArena **link = &control->orphans;
    while (QPoolArena *arena = *link) {
        arena->trim(QPoolArena::ReturnToSystem);
        if (arena->m_pages) {
            link = &arena->m_nextOrphan;
        } else {
            // No chunk out, so no thread can free into it any more.
            *link = arena->m_nextOrphan;
            control->orphanCount.fetch_sub(1, std::memory_order_relaxed);
            empty.append(arena);
        }
    }
    control->orphanLock.unlock();
    for (QPoolArena *arena : std::as_const(empty)) {
        delete arena;
        control->arenas.fetch_sub(1, std::memory_order_relaxed);
    }
}
} // namespace

void qPoolTrim(QPoolHandle *pool, QPoolArenaHead **slot) noexcept
{
    // [P24 get] acquire: pairs with the release store in controlOf(). No control: nothing to
    // trim.
    QPoolControl *control = pool->control.load(std::memory_order_acquire);
    if (!control)
        return;
    trimThreadArenas(pool, control, slot);
    // Also the pages that waiting threads left resident for other arenas: an explicit trim
    // gives memory back.
    discardResidentPages();
}

void qPoolTrimCurrentThread() noexcept
{
    if (tlArenasReleased)
        return;
    // This thread owns its arenas' owner side.
    for (const ThreadArenas::Entry &e : std::as_const(ThreadArenasOf::local().entries))
        e.arena->trim(QPoolArena::KeepResident);
}

QPoolAllocatorStats qPoolStats(QPoolHandle *pool) noexcept
{
    QPoolAllocatorStats s;
    // [P24 get] acquire: pairs with the release store in controlOf(). No control: all zero so
    // far.
    if (const QPoolControl *control = pool->control.load(std::memory_order_acquire)) {
        s.pagesInUse = control->pagesInUse.load(std::memory_order_relaxed);
        s.pagesReturned = control->pagesReturned.load(std::memory_order_relaxed);
        s.arenas = control->arenas.load(std::memory_order_relaxed);
        s.orphanedArenas = control->orphanCount.load(std::memory_order_relaxed);
        s.fallbackCount = control->fallbacks.load(std::memory_order_relaxed);
    }
    s.pagesMapped = pageCache.mapped.load(std::memory_order_relaxed);
    pageCache.lock.lock();
    s.pagesCached = pageCache.count;
    pageCache.lock.unlock();
    return s;
}

bool qPoolIsCurrentThreadArena(const QPoolArenaHead *arena) noexcept
{
    // Only a binary built against 0.9.0 would call this (MultiPool, debug builds), and controlOf()
    // refuses such a pool before it hands out a chunk: not reached.
    return QPoolArena::fromOwnHead(const_cast<QPoolArenaHead *>(arena))->m_owner == &tlThreadToken;
}

void qPoolDoubleFree(const void *chunk)
{
    const QPoolPageHeader *page = qPoolPageOf(chunk);
    qFatal("QPoolAllocator: double free of the %u-byte chunk %p (arena %p)", page->chunkSize, chunk,
           static_cast<const void *>(page->arena));
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
