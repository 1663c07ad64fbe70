// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "childprocess.h"
#include "threadlocaldestructors.h"

#include <QtFastConnect/qpoolallocator.h>
// The page header beyond its first word is the library's: for the geometry checks only.
#include <QtFastConnect/private/qpoolallocator_p.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qprocess.h>
#include <QtCore/qscopeguard.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#ifdef QT_FASTCONNECT_POOL_ASAN
#include <sanitizer/lsan_interface.h>
#endif

using QtFastConnectPrivate::QPoolArena;
using QtFastConnectPrivate::qPoolPageOf;

// Every test uses pools of its own (a distinct ChunkSize argument makes a distinct pool), so the
// page and arena counts it checks start from zero.

namespace {

constexpr quintptr PageMask = QtFastConnectPrivate::QPoolPageSize - 1;

qint64 pagesFor(std::size_t chunks, std::size_t perPage)
{
    return qint64((chunks + perPage - 1) / perPage);
}

// Fills a chunk with a pattern derived from tag, word by word; checkPattern() verifies it.
void fillPattern(void *p, std::size_t bytes, quint64 tag)
{
    auto *w = static_cast<quint64 *>(p);
    for (std::size_t i = 0; i < bytes / sizeof(quint64); ++i)
        w[i] = tag ^ (Q_UINT64_C(0x9E3779B97F4A7C15) * (i + 1));
}

bool checkPattern(const void *p, std::size_t bytes, quint64 tag)
{
    auto *w = static_cast<const quint64 *>(p);
    for (std::size_t i = 0; i < bytes / sizeof(quint64); ++i) {
        if (w[i] != (tag ^ (Q_UINT64_C(0x9E3779B97F4A7C15) * (i + 1))))
            return false;
    }
    return true;
}

// Where a chunk sits: on a pool page of the right chunk size, after the header, on a chunk
// boundary. Returns an empty string when all is well.
template<typename Pool>
QByteArray chunkCheck(const void *p)
{
    const auto addr = reinterpret_cast<quintptr>(p);
    if (addr % 16)
        return "chunk not 16-byte aligned";
    const auto *page = qPoolPageOf(p);
    if (reinterpret_cast<quintptr>(page) != (addr & ~PageMask))
        return "page header is not at the 4 KiB boundary below the chunk";
    if (page->chunkSize != Pool::chunkSize)
        return "page header names chunk size " + QByteArray::number(page->chunkSize);
    if (page->chunkCount != Pool::chunksPerPage)
        return "page header names chunk count " + QByteArray::number(page->chunkCount);
    if (!page->arena)
        return "page header names no arena";
    // What inline code reads (public ABI): the first word of the page is the arena's head.
    if (QtFastConnectPrivate::qPoolArenaOf(p) != page->arena->head())
        return "the page's first word is not its arena's head";
    const quintptr offset = addr - reinterpret_cast<quintptr>(page);
    if (offset < QtFastConnectPrivate::QPoolPageHeaderSize)
        return "chunk overlaps the page header";
    if ((offset - QtFastConnectPrivate::QPoolPageHeaderSize) % Pool::chunkSize)
        return "chunk not on a chunk boundary";
    if (offset + Pool::chunkSize > QtFastConnectPrivate::QPoolPageSize)
        return "chunk crosses the page end";
    return {};
}

} // namespace

class tst_QPoolAllocator : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void chunkGeometry();
    void multiThreaded();
    void multiThreadedCrossThreadFree();
    void arenaPerThread();
    void orphanedArenaIsAdopted();
    void allocationAfterThreadExitCleanup();
    void qthreadArenasReleasedBeforeWaitReturns();
    void stressMultiThreaded();
    void pageReuseAndReturn();
    void fallbackForOversizedRequests();
    void sizeClasses();
    void addressSanitizer();
    void doubleFreeIsFatal();
    void removedThreadModelIsFatal();
    void oversizedRequestAsserts();

private:
    template<typename Pool>
    void checkAllocateFreeReuse();
    template<typename Pool>
    void stress(int threads, int operations);
};

void tst_QPoolAllocator::chunkGeometry()
{
    QCOMPARE((QPoolAllocator<1>::chunkSize), std::size_t(16));
    QCOMPARE((QPoolAllocator<16>::chunkSize), std::size_t(16));
    QCOMPARE((QPoolAllocator<17>::chunkSize), std::size_t(32));
    QCOMPARE((QPoolAllocator<100>::chunkSize), std::size_t(112));
    QCOMPARE((QPoolAllocator<3968>::chunkSize), std::size_t(3968));
    QCOMPARE((QPoolAllocator<32>::chunksPerPage), std::size_t(124));
    QCOMPARE((QPoolAllocator<64>::chunksPerPage), std::size_t(62));
    QCOMPARE((QPoolAllocator<128>::chunksPerPage), std::size_t(31));
    QCOMPARE((QPoolAllocator<256>::chunksPerPage), std::size_t(15));
    QCOMPARE((QPoolAllocator<3968>::chunksPerPage), std::size_t(1));
    QCOMPARE(QPoolAllocator<64>::threadModel, QPoolThreadModel::MultiThreaded);
}

// Allocate, free, reuse, in the calling thread; the pool must be fresh.
template<typename Pool>
void tst_QPoolAllocator::checkAllocateFreeReuse()
{
    const std::size_t count = 3 * Pool::chunksPerPage + 5; // four pages
    std::vector<void *> chunks;
    std::set<void *> addresses;
    const QPoolArena *arena = nullptr;
    for (std::size_t i = 0; i < count; ++i) {
        void *p = Pool::allocate(Pool::chunkSize);
        QVERIFY(p);
        const QByteArray error = chunkCheck<Pool>(p);
        QVERIFY2(error.isEmpty(), error.constData());
        if (!arena)
            arena = qPoolPageOf(p)->arena;
        QCOMPARE(qPoolPageOf(p)->arena, arena); // one thread, one arena
        QVERIFY2(addresses.insert(p).second, "a live chunk was handed out twice");
        fillPattern(p, Pool::chunkSize, i);
        chunks.push_back(p);
    }
    // No chunk overlaps another: every pattern survived the writes to all the others.
    for (std::size_t i = 0; i < count; ++i)
        QVERIFY(checkPattern(chunks[i], Pool::chunkSize, i));
    QCOMPARE(Pool::stats().pagesInUse, pagesFor(count, Pool::chunksPerPage));

    // A freed chunk is handed out again (LIFO).
    void *last = chunks.back();
    Pool::deallocate(last, Pool::chunkSize);
    void *again = Pool::allocate(Pool::chunkSize);
    QCOMPARE(again, last);

    // Everything freed, then allocated again: the same chunks, no new page.
    for (void *p : chunks)
        Pool::deallocate(p, Pool::chunkSize);
    std::set<void *> reused;
    std::vector<void *> second;
    for (std::size_t i = 0; i < count; ++i) {
        void *p = Pool::allocate(Pool::chunkSize);
        QVERIFY2(reused.insert(p).second, "a live chunk was handed out twice");
        second.push_back(p);
    }
    QVERIFY(reused == addresses);
    QCOMPARE(Pool::stats().pagesInUse, pagesFor(count, Pool::chunksPerPage));
    for (void *p : second)
        Pool::deallocate(p); // the default size is the chunk size
}

void tst_QPoolAllocator::multiThreaded()
{
    using Pool = QPoolAllocator<160, QPoolThreadModel::MultiThreaded>;
    checkAllocateFreeReuse<Pool>();
    if (QTest::currentTestFailed())
        return;
    QCOMPARE(Pool::stats().arenas, 1); // the main thread's
}

// MultiThreaded: chunks allocated by one thread and freed by another land in the owner's
// backlog, and the owner reuses them once its own stack is empty.
void tst_QPoolAllocator::multiThreadedCrossThreadFree()
{
    using Pool = QPoolAllocator<192>;
    const std::size_t count = 4 * Pool::chunksPerPage; // four full pages
    std::vector<void *> chunks;
    for (std::size_t i = 0; i < count; ++i) {
        chunks.push_back(Pool::allocate());
        fillPattern(chunks.back(), Pool::chunkSize, i);
    }
    const QPoolArena *mine = qPoolPageOf(chunks.front())->arena;

    std::atomic<int> badPatterns { 0 };
    std::thread freer([&] {
        for (std::size_t i = 0; i < count; ++i) {
            if (!checkPattern(chunks[i], Pool::chunkSize, i))
                ++badPatterns;
            Pool::deallocate(chunks[i]);
        }
    });
    freer.join();
    QCOMPARE(badPatterns.load(), 0);
    QCOMPARE(Pool::stats().arenas, 1); // the freeing thread got none

    std::set<void *> again;
    for (std::size_t i = 0; i < count; ++i) {
        void *p = Pool::allocate();
        QCOMPARE(qPoolPageOf(p)->arena, mine);
        again.insert(p);
    }
    QVERIFY(again == std::set<void *>(chunks.begin(), chunks.end()));
    QCOMPARE(Pool::stats().pagesInUse, 4);
    for (void *p : again)
        Pool::deallocate(p);
}

void tst_QPoolAllocator::arenaPerThread()
{
    using Pool = QPoolAllocator<208>;
    const std::size_t count = Pool::chunksPerPage + 3;
    std::mutex lock;
    std::condition_variable cv;
    int allocatedThreads = 0;
    std::vector<const QPoolArena *> arenas(2);
    std::vector<QByteArray> errors(2);
    std::atomic<qint64> arenasWhileBothLive { -1 };

    auto worker = [&](int index) {
        std::vector<void *> chunks;
        for (std::size_t i = 0; i < count; ++i) {
            void *p = Pool::allocate();
            if (!arenas[index])
                arenas[index] = qPoolPageOf(p)->arena;
            if (qPoolPageOf(p)->arena != arenas[index])
                errors[index] = "one thread used two arenas";
            fillPattern(p, Pool::chunkSize, quint64(index) << 32 | i);
            chunks.push_back(p);
        }
        {
            // Both threads hold chunks here, so both arenas exist.
            std::unique_lock<std::mutex> locker(lock);
            if (++allocatedThreads == 2) {
                arenasWhileBothLive = Pool::stats().arenas;
                cv.notify_all();
            }
            cv.wait(locker, [&] { return allocatedThreads == 2; });
        }
        for (std::size_t i = 0; i < count; ++i) {
            if (!checkPattern(chunks[i], Pool::chunkSize, quint64(index) << 32 | i))
                errors[index] = "chunk contents changed";
            Pool::deallocate(chunks[i]);
        }
        // Reused by the same thread.
        void *p = Pool::allocate();
        if (std::find(chunks.begin(), chunks.end(), p) == chunks.end())
            errors[index] = "a freed chunk was not reused";
        Pool::deallocate(p);
    };
    std::thread a(worker, 0);
    std::thread b(worker, 1);
    a.join();
    b.join();
    QVERIFY2(errors[0].isEmpty(), errors[0].constData());
    QVERIFY2(errors[1].isEmpty(), errors[1].constData());
    QVERIFY(arenas[0] && arenas[1]);
    QVERIFY(arenas[0] != arenas[1]);
    QCOMPARE(arenasWhileBothLive.load(), 2);
    // Both threads exited with no chunk out: their arenas and pages were returned.
    const QPoolAllocatorStats s = Pool::stats();
    QCOMPARE(s.arenas, 0);
    QCOMPARE(s.orphanedArenas, 0);
    QCOMPARE(s.pagesInUse, 0);
    QCOMPARE(s.pagesReturned, 2 * pagesFor(count, Pool::chunksPerPage));
}

// Thread A allocates and exits while thread B frees A's chunks; one chunk is still out when A
// has exited, so A's arena is orphaned. A new thread C then adopts it.
void tst_QPoolAllocator::orphanedArenaIsAdopted()
{
    using Pool = QPoolAllocator<96>;
    const std::size_t count = 500;
    const qint64 pages = pagesFor(count, Pool::chunksPerPage);
    std::vector<void *> chunks;
    const QPoolArena *arenaA = nullptr;
    std::promise<void> allocated;
    std::atomic<int> badPatterns { 0 };

    std::thread a([&] {
        for (std::size_t i = 0; i < count; ++i) {
            chunks.push_back(Pool::allocate());
            fillPattern(chunks.back(), Pool::chunkSize, i);
        }
        arenaA = qPoolPageOf(chunks.front())->arena;
        allocated.set_value();
        // ... and exits at once, while b frees.
    });
    std::thread b([&] {
        allocated.get_future().wait();
        for (std::size_t i = 1; i < count; ++i) { // chunks[0] stays out
            if (!checkPattern(chunks[i], Pool::chunkSize, i))
                ++badPatterns;
            Pool::deallocate(chunks[i]);
        }
    });
    a.join();
    b.join();
    QCOMPARE(badPatterns.load(), 0);

    QPoolAllocatorStats s = Pool::stats();
    QCOMPARE(s.arenas, 1);
    QCOMPARE(s.orphanedArenas, 1);
    QCOMPARE(s.pagesInUse, pages);
    QVERIFY(checkPattern(chunks[0], Pool::chunkSize, 0));
    Pool::deallocate(chunks[0]); // this thread has no arena in the pool: into the backlog
    QCOMPARE(Pool::stats().arenas, 1);

    const QPoolArena *arenaC = nullptr;
    bool reused = false;
    QPoolAllocatorStats duringC;
    std::thread c([&] {
        void *p = Pool::allocate();
        arenaC = qPoolPageOf(p)->arena;
        reused = std::find(chunks.begin(), chunks.end(), p) != chunks.end();
        duringC = Pool::stats();
        Pool::deallocate(p);
    });
    c.join();
    QCOMPARE(arenaC, arenaA);
    QVERIFY(reused);
    QCOMPARE(duringC.arenas, 1);
    QCOMPARE(duringC.orphanedArenas, 0);
    QCOMPARE(duringC.pagesInUse, pages); // no new page

    // C exited with every chunk back: the arena is gone and its pages were returned.
    s = Pool::stats();
    QCOMPARE(s.arenas, 0);
    QCOMPARE(s.orphanedArenas, 0);
    QCOMPARE(s.pagesInUse, 0);
    QCOMPARE(s.pagesReturned, pages);
}

namespace {
using LatePool = QPoolAllocator<144>;

// Constructed before the thread's first pool allocation, so destroyed after the pool released
// the thread's arenas: its destructor allocates from a thread with no arena left.
struct LateAllocator
{
    std::atomic<int> *result = nullptr; // 1: the chunk was good, 2: it was not
    ~LateAllocator()
    {
        if (!result)
            return;
        void *p = LatePool::allocate();
        fillPattern(p, LatePool::chunkSize, 42);
        const bool good =
                chunkCheck<LatePool>(p).isEmpty() && checkPattern(p, LatePool::chunkSize, 42);
        LatePool::deallocate(p);
        result->store(good ? 1 : 2);
    }
};
thread_local LateAllocator tlLateAllocator;
} // namespace

void tst_QPoolAllocator::allocationAfterThreadExitCleanup()
{
    QFC_SKIP_UNLESS_THREAD_LOCAL_DESTRUCTORS_WORK();
    std::atomic<int> result { 0 };
    std::thread t([&] {
        tlLateAllocator.result = &result;
        LatePool::deallocate(LatePool::allocate());
    });
    t.join();
    QCOMPARE(result.load(), 1);
    // The late chunk came from an arena that was orphaned again at once; it has come back.
    QCOMPARE(LatePool::stats().orphanedArenas, 1);
    LatePool::trim();
    const QPoolAllocatorStats s = LatePool::stats();
    QCOMPARE(s.arenas, 0);
    QCOMPARE(s.orphanedArenas, 0);
    QCOMPARE(s.pagesInUse, 0);
}

namespace {
using FinishPool = QPoolAllocator<240>;

// The gate's semaphores outlive the test function: the thread touches them after the test has
// opened the gate, and Qt 6.4's wait() does not wait for that (a gate on the test's stack let
// the thread write into the frames of the tests after it).
QSemaphore gateReached;
QSemaphore gateOpen;
QSemaphore gateLeft;

// Constructed after the thread's first pool allocation, so destroyed before ~ThreadArenas: holds
// the thread in its thread_local destructors until the test lets it go.
struct ExitGate
{
    bool armed = false;
    ~ExitGate()
    {
        if (!armed)
            return;
        gateReached.release();
        gateOpen.tryAcquire(1, 10000); // never for good, should the test fail first
        gateLeft.release();
    }
};
thread_local ExitGate tlExitGate;
} // namespace

// A QThread's arenas are released when Qt finishes the thread, before QThread::wait() returns:
// then the arena without chunks out is gone, and the one with a chunk out is an orphan that
// trim() destroys once the chunk came back. Qt 6.4 on Unix wakes wait() before the thread runs
// its thread_local destructors, so this checks while the thread is held in them.
void tst_QPoolAllocator::qthreadArenasReleasedBeforeWaitReturns()
{
    QFC_SKIP_UNLESS_THREAD_LOCAL_DESTRUCTORS_WORK();
    using KeptPool = QPoolAllocator<272>;
    void *kept = nullptr;
    std::unique_ptr<QThread> t(QThread::create([&] {
        FinishPool::deallocate(FinishPool::allocate());
        kept = KeptPool::allocate();
        tlExitGate.armed = true;
    }));
    // The thread leaves the gate before the test returns, however it ends: it must not outlive
    // what it uses.
    bool opened = false;
    const auto joinGate = qScopeGuard([&opened] {
        if (!opened)
            gateOpen.release();
        gateLeft.tryAcquire(1, 20000);
    });
    t->start();
    QVERIFY(gateReached.tryAcquire(1, 10000));
    // Where Qt's wait() returns only after the thread_local destructors (newer Qt joins the
    // thread; isFinished() may already say true), it times out here: then the thread goes on,
    // and the checks come after them.
    const bool waitReturnsFirst = t->wait(2000);
    bool waited = waitReturnsFirst;
    if (!waitReturnsFirst) {
        gateOpen.release();
        opened = true;
        waited = t->wait(10000);
    }

    const QPoolAllocatorStats empty = FinishPool::stats();
    const QPoolAllocatorStats orphan = KeptPool::stats();
    KeptPool::deallocate(kept);
    KeptPool::trim();
    const QPoolAllocatorStats trimmed = KeptPool::stats();
    QVERIFY(waited);
    qInfo("QThread::wait() returned %s the thread's thread_local destructors",
          waitReturnsFirst ? "before" : "after");

    QCOMPARE(empty.arenas, 0);
    QCOMPARE(empty.pagesInUse, 0);
    QCOMPARE(orphan.arenas, 1);
    QCOMPARE(orphan.orphanedArenas, 1);
    QCOMPARE(trimmed.arenas, 0);
    QCOMPARE(trimmed.pagesInUse, 0);
}

// Random allocations and frees on several threads, a third of the frees on another thread than
// the allocating one; every chunk carries its owner and index and is checked before its free.
template<typename Pool>
void tst_QPoolAllocator::stress(int threads, int operations)
{
    struct Live
    {
        void *p;
        quint64 tag;
    };
    struct Inbox
    {
        std::mutex lock;
        std::vector<Live> items; // chunks handed over by the previous thread
    };
    std::vector<Inbox> inboxes(threads);
    std::atomic<int> finished { 0 };
    std::atomic<qint64> failures { 0 };
    std::atomic<qint64> crossThreadFrees { 0 };
    const int perThread = operations / threads;

    auto worker = [&](int id) {
        std::mt19937 rng(1234 + id);
        std::vector<Live> live;
        live.reserve(4096);
        quint64 index = 0;
        qint64 crossFrees = 0;
        auto release = [&](const Live &c) {
            if (!checkPattern(c.p, Pool::chunkSize, c.tag))
                ++failures;
            Pool::deallocate(c.p);
        };
        auto drainInbox = [&] {
            std::vector<Live> taken;
            {
                std::lock_guard<std::mutex> locker(inboxes[id].lock);
                taken.swap(inboxes[id].items);
            }
            for (const Live &c : taken)
                release(c);
            crossFrees += qint64(taken.size());
            return int(taken.size());
        };

        int done = 0; // allocations and frees
        while (done < perThread) {
            const unsigned r = rng() % 100;
            if (live.empty() || (r < 50 && live.size() < 3000)) {
                const Live c { Pool::allocate(), quint64(id) << 48 | index++ };
                if (reinterpret_cast<quintptr>(c.p) % 16)
                    ++failures;
                fillPattern(c.p, Pool::chunkSize, c.tag);
                live.push_back(c);
                ++done;
            } else if (r < 80) {
                const std::size_t i = rng() % live.size();
                release(live[i]);
                live[i] = live.back();
                live.pop_back();
                ++done;
            } else if (r < 95) {
                // Hand a chunk to the next thread, which frees it.
                const std::size_t i = rng() % live.size();
                Inbox &next = inboxes[(id + 1) % threads];
                {
                    std::lock_guard<std::mutex> locker(next.lock);
                    next.items.push_back(live[i]);
                }
                live[i] = live.back();
                live.pop_back();
            } else {
                done += drainInbox();
            }
        }
        for (const Live &c : live)
            release(c);
        // Hand-overs happen only in the loop above: once everyone is out of it, the inboxes
        // are final.
        finished.fetch_add(1);
        while (finished.load() < threads)
            std::this_thread::yield();
        drainInbox();
        crossThreadFrees += crossFrees;
    };

    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i)
        pool.emplace_back(worker, i);
    for (std::thread &t : pool)
        t.join();

    QCOMPARE(failures.load(), 0);
    QVERIFY(crossThreadFrees.load() > operations / 20);
    // Every chunk is back: after trim() nothing of the pool is left.
    Pool::trim();
    const QPoolAllocatorStats s = Pool::stats();
    QCOMPARE(s.pagesInUse, 0);
    QCOMPARE(s.arenas, 0);
    QCOMPARE(s.orphanedArenas, 0);
    QVERIFY(s.pagesReturned > 0);
}

void tst_QPoolAllocator::stressMultiThreaded()
{
    stress<QPoolAllocator<72, QPoolThreadModel::MultiThreaded>>(4, 1000000);
}

void tst_QPoolAllocator::pageReuseAndReturn()
{
    using Pool = QPoolAllocator<224>;
    const std::size_t perPage = Pool::chunksPerPage;
    std::vector<void *> chunks;
    for (std::size_t i = 0; i < 3 * perPage; ++i)
        chunks.push_back(Pool::allocate());
    QCOMPARE(Pool::stats().pagesInUse, 3);
    std::set<quintptr> pages;
    for (void *p : chunks)
        pages.insert(reinterpret_cast<quintptr>(p) & ~PageMask);
    QCOMPARE(pages.size(), std::size_t(3));

    // Freed pages are kept and reused without trim().
    for (void *p : chunks)
        Pool::deallocate(p);
    QCOMPARE(Pool::stats().pagesInUse, 3);
    chunks.clear();
    for (std::size_t i = 0; i < 3 * perPage; ++i) {
        chunks.push_back(Pool::allocate());
        QVERIFY(pages.count(reinterpret_cast<quintptr>(chunks.back()) & ~PageMask));
    }
    QCOMPARE(Pool::stats().pagesInUse, 3);

    // One chunk stays out: trim() returns the other two pages only.
    void *kept = chunks.front();
    const quintptr keptPage = reinterpret_cast<quintptr>(kept) & ~PageMask;
    for (std::size_t i = 1; i < chunks.size(); ++i)
        Pool::deallocate(chunks[i]);
    QPoolAllocatorStats before = Pool::stats();
    Pool::trim();
    QPoolAllocatorStats after = Pool::stats();
    QCOMPARE(after.pagesInUse, 1);
    QCOMPARE(after.pagesReturned, before.pagesReturned + 2);
    QVERIFY(after.pagesCached >= 2);

    // The rest of the kept page is still free and served first; none of the returned pages'
    // chunks is handed out any more.
    chunks.clear();
    for (std::size_t i = 1; i < perPage; ++i) {
        chunks.push_back(Pool::allocate());
        QCOMPARE(reinterpret_cast<quintptr>(chunks.back()) & ~PageMask, keptPage);
    }
    QCOMPARE(Pool::stats().pagesInUse, 1);

    // A new page comes from the returned ones, not from the system.
    before = Pool::stats();
    chunks.push_back(Pool::allocate());
    after = Pool::stats();
    QCOMPARE(after.pagesInUse, 2);
    QCOMPARE(after.pagesMapped, before.pagesMapped);
    QCOMPARE(after.pagesCached, before.pagesCached - 1);
    fillPattern(chunks.back(), Pool::chunkSize, 7); // the recycled page is writable
    QVERIFY(checkPattern(chunks.back(), Pool::chunkSize, 7));

    Pool::deallocate(kept);
    for (void *p : chunks)
        Pool::deallocate(p);
    Pool::trim();
    QCOMPARE(Pool::stats().pagesInUse, 0);
    QCOMPARE(Pool::stats().pagesReturned, 4);
    QCOMPARE(Pool::stats().arenas, 1); // this thread's arena stays, empty
}

namespace {
template<typename Pool>
bool oversizedRoundTrip()
{
    const quint64 before = Pool::fallbackCount();
    void *p = Pool::allocate(Pool::chunkSize + 1000);
    std::memset(p, 0x5a, Pool::chunkSize + 1000); // the whole request is usable
    const bool counted = Pool::fallbackCount() == before + 1
            && Pool::stats().fallbackCount == before + 1 && Pool::stats().pagesInUse == 0;
    Pool::deallocate(p, Pool::chunkSize + 1000);
    return counted && Pool::fallbackCount() == before + 1;
}
} // namespace

void tst_QPoolAllocator::fallbackForOversizedRequests()
{
#ifndef QT_NO_DEBUG
    QSKIP("An oversized request asserts in debug builds");
#else
    QVERIFY((oversizedRoundTrip<QPoolAllocator<24, QPoolThreadModel::MultiThreaded>>()));
    // A request of exactly the chunk size is not a fallback.
    using Pool = QPoolAllocator<24>;
    Pool::deallocate(Pool::allocate(Pool::chunkSize), Pool::chunkSize);
    QCOMPARE(Pool::fallbackCount(), quint64(1));
#endif
}

namespace {
template<std::size_t Size>
struct Pooled
{
    Q_FASTCONNECT_POOLED
    char bytes[Size];
};

struct alignas(64) OverAligned
{
    Q_FASTCONNECT_POOLED
    char bytes[48];
};

template<std::size_t Size>
std::size_t pooledChunkSize()
{
    auto *p = new Pooled<Size>;
    std::memset(p->bytes, 1, Size);
    const std::size_t chunk = qPoolPageOf(p)->chunkSize;
    delete p;
    return chunk;
}
} // namespace

void tst_QPoolAllocator::sizeClasses()
{
    QCOMPARE(pooledChunkSize<8>(), std::size_t(32));
    QCOMPARE(pooledChunkSize<32>(), std::size_t(32));
    QCOMPARE(pooledChunkSize<40>(), std::size_t(64));
    QCOMPARE(pooledChunkSize<100>(), std::size_t(128));
    QCOMPARE(pooledChunkSize<256>(), std::size_t(256));

    // Larger objects come from the heap, and go back to it.
    const qint64 pagesBefore = QPoolAllocator<256>::stats().pagesInUse;
    auto *big = new Pooled<300>;
    std::memset(big->bytes, 2, sizeof(big->bytes));
    delete big;
    QCOMPARE(QPoolAllocator<256>::stats().pagesInUse, pagesBefore);

    auto *aligned = new OverAligned;
    QCOMPARE(reinterpret_cast<quintptr>(aligned) % 64, quintptr(0));
    delete aligned;

    // Pooled objects may be deleted by another thread.
    std::vector<Pooled<60> *> objects;
    for (int i = 0; i < 1000; ++i)
        objects.push_back(new Pooled<60>);
    std::thread([&] { qDeleteAll(objects); }).join();
    std::set<void *> reused;
    for (int i = 0; i < 1000; ++i)
        reused.insert(new Pooled<60>);
    QVERIFY(reused == std::set<void *>(objects.begin(), objects.end()));
    for (void *p : reused)
        delete static_cast<Pooled<60> *>(p);
}

void tst_QPoolAllocator::addressSanitizer()
{
#ifndef QT_FASTCONNECT_POOL_ASAN
    QSKIP("Only under AddressSanitizer");
#else
    using Pool = QPoolAllocator<56>; // 64-byte chunks
    char *p = static_cast<char *>(Pool::allocate(20));
    QVERIFY(!__asan_region_is_poisoned(p, 20)); // the request is addressable
    QVERIFY(__asan_address_is_poisoned(p + 24)); // the rest of the chunk is not
    char *q = static_cast<char *>(Pool::allocate());
    QVERIFY(!__asan_region_is_poisoned(q, Pool::chunkSize));
    Pool::deallocate(q);
    for (std::size_t i = 0; i < Pool::chunkSize; i += 8)
        QVERIFY(__asan_address_is_poisoned(q + i)); // free: all of it, link word included
    // Uncarved space of the page is poisoned too.
    char *uncarved = reinterpret_cast<char *>(qPoolPageOf(p)) + 4096 - Pool::chunkSize;
    QVERIFY(uncarved != p && uncarved != q);
    QVERIFY(__asan_address_is_poisoned(uncarved));
    Pool::deallocate(p, 20);
    QVERIFY(__asan_address_is_poisoned(p));

    // LeakSanitizer scans the pool's pages: heap blocks that only chunks point to are no leak.
    std::vector<void *> chunks;
    for (int i = 0; i < 1000; ++i) {
        chunks.push_back(Pool::allocate(sizeof(int *)));
        *static_cast<int **>(chunks.back()) = new int(i);
    }
    QCOMPARE(__lsan_do_recoverable_leak_check(), 0);
    for (void *c : chunks) {
        delete *static_cast<int **>(c);
        Pool::deallocate(c, sizeof(int *));
    }
#endif
}

namespace {
// What a child scenario did.
struct ChildResult
{
    bool crashed;
    int exitCode;
    QByteArray stderrOutput;
};

// Runs this binary again with TST_QPOOLALLOCATOR_CHILD=scenario (see childMain()). The caller
// then waits with QFC_WAIT_FOR_CHILD_START(), which skips the test where an emulator cannot
// start a child (the ARM stages on a machine without a binfmt_misc handler for the CPU, where
// the child "did not finish": both ARM stages of a clean-clone run on a fresh machine).
[[maybe_unused]] void startChild(QProcess &child, const char *scenario)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("TST_QPOOLALLOCATOR_CHILD"), QString::fromLatin1(scenario));
    child.setProcessEnvironment(env);
    child.start(QCoreApplication::applicationFilePath(), {});
}

[[maybe_unused]] ChildResult finishChild(QProcess &child)
{
    if (!child.waitForFinished(30000))
        return { false, -1, "child did not finish" };
    return { child.exitStatus() == QProcess::CrashExit, child.exitCode(),
             child.readAllStandardError() };
}
} // namespace

void tst_QPoolAllocator::doubleFreeIsFatal()
{
#ifndef QT_FASTCONNECT_POOL_CHECKS
    QSKIP("Double frees are detected in debug and AddressSanitizer builds only");
#else
    QProcess child;
    startChild(child, "double-free");
    QFC_WAIT_FOR_CHILD_START(child);
    const ChildResult r = finishChild(child);
    QVERIFY2(r.crashed || r.exitCode != 0, r.stderrOutput.constData());
    QVERIFY2(r.stderrOutput.contains("QPoolAllocator: double free of the 48-byte chunk"),
             r.stderrOutput.constData());
#endif
}

// A binary built against 0.9.0 may instantiate a model this release no longer has (0 to 2): the
// library refuses the pool at its first use, in every build.
void tst_QPoolAllocator::removedThreadModelIsFatal()
{
    QProcess child;
    startChild(child, "removed-model");
    QFC_WAIT_FOR_CHILD_START(child);
    const ChildResult r = finishChild(child);
    QVERIFY2(r.crashed || r.exitCode != 0, r.stderrOutput.constData());
    QVERIFY2(r.stderrOutput.contains("thread model 1 was removed after QtFastConnect 0.9.0"),
             r.stderrOutput.constData());
}

void tst_QPoolAllocator::oversizedRequestAsserts()
{
#ifdef QT_NO_DEBUG
    QSKIP("Oversized requests assert in debug builds only");
#else
    QProcess child;
    startChild(child, "oversized");
    QFC_WAIT_FOR_CHILD_START(child);
    const ChildResult r = finishChild(child);
    QVERIFY2(r.crashed || r.exitCode != 0, r.stderrOutput.constData());
    QVERIFY2(r.stderrOutput.contains("request larger than the chunk size"),
             r.stderrOutput.constData());
#endif
}

// Scenarios that end the process; run in a child by the tests above.
static int childMain(const QByteArray &scenario)
{
    if (scenario == "double-free") {
        using Pool = QPoolAllocator<48>;
        void *keep = Pool::allocate(); // so the freed chunk is not the only one
        void *p = Pool::allocate();
        Pool::deallocate(p);
        Pool::deallocate(p);
        Pool::deallocate(keep);
        return 0; // not reached in a checking build
    }
    if (scenario == "removed-model") {
        // What 0.9.0's inline QPoolAllocator<64, SharedPool> did on its first allocation.
        static QtFastConnectPrivate::QPoolHandle handle(64, QPoolThreadModel(1));
        QtFastConnectPrivate::qPoolRefillShared(&handle);
        return 0; // not reached
    }
    if (scenario == "oversized") {
        using Pool = QPoolAllocator<48>;
        Pool::deallocate(Pool::allocate(100), 100);
        return 0; // not reached in a debug build
    }
    return 2;
}

int main(int argc, char *argv[])
{
    const QByteArray scenario = qgetenv("TST_QPOOLALLOCATOR_CHILD");
    if (!scenario.isEmpty())
        return childMain(scenario);

    QCoreApplication app(argc, argv);
    tst_QPoolAllocator tc;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&tc, argc, argv);
}

#include "tst_qpoolallocator.moc"
