// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// QPoolAllocator (its one thread model, MultiThreaded) against the process's malloc()/free(),
// in the pattern of a published pool-allocator experiment: allocate a batch of fixed-size
// chunks, free the even indices, then the odd ones; chunks of 16, 32 and 64 bytes, batches of
// 100, 200 and 400.
//
//   singleThread    the pattern in the main thread: malloc and MultiThreaded
//   threadPerCpu    the pattern in one thread per CPU at once, each on its own chunks:
//                   malloc, MultiThreaded (ns per pair per thread)
//   crossThread     a producer thread allocates each batch and hands it to a consumer thread
//                   through a single-producer single-consumer ring; the consumer reads each
//                   chunk and frees it (even indices, then odd), as a funnel's receiver does:
//                   malloc, MultiThreaded, and the bare hand-off of preallocated objects (the
//                   same ring and memory traffic without any allocation: the floor)
//
// Every iteration hands out PairsPerIteration chunks (per thread in threadPerCpu) and frees
// them; the threaded rows pin each thread to a CPU of its own (see Crew). cleanupTestCase()
// prints one table, ns per allocate+free pair (the median iteration of a row's measurement) and
// each pool row's speed-up over malloc measured in the same run: the machine may be shared, so
// compare ratios of one run, not absolute figures of different runs. The default run takes
// about 30 s on two cores.
//
// The malloc rows call the process's malloc() and free(), so LD_PRELOAD swaps the allocator
// (scripts/allocator-comparison.sh does that for mimalloc, jemalloc and tcmalloc). Environment:
//   TST_BENCH_POOLALLOCATOR_CSV=<file>     cleanupTestCase() also writes the results to <file>
//                                          as CSV: "# malloc=<file providing malloc()>", a
//                                          header line, then one line per row
//   TST_BENCH_POOLALLOCATOR_ROWS=<list>    comma-separated allocators to run, of malloc,
//                                          MultiThreaded, handoff (default: all)
//
// -callgrind (e.g. "tst_bench_poolallocator -callgrind singleThread", about 15 s): the
// single-thread rows report instruction reads per iteration (divide by PairsPerIteration,
// printed at the end, for instructions per pair; LD_PRELOAD works there too); the threaded rows
// are skipped, as valgrind serializes the threads and counts their spinning.

#include <QtFastConnect/qpoolallocator.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#if defined(Q_OS_LINUX)
#include <pthread.h>
#include <sched.h>
#define HAVE_THREAD_AFFINITY
#endif
#if __has_include(<dlfcn.h>)
#include <dlfcn.h>
#define HAVE_DLADDR
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

enum class Allocator { Malloc, MultiThreaded, HandOff };
static constexpr Allocator AllAllocators[] = { Allocator::Malloc, Allocator::MultiThreaded,
                                               Allocator::HandOff };

enum class Section { SingleThread, ThreadPerCpu, CrossThread };
static constexpr Section AllSections[] = { Section::SingleThread, Section::ThreadPerCpu,
                                           Section::CrossThread };

static const char *allocatorName(Allocator a)
{
    switch (a) {
    case Allocator::Malloc:
        return "malloc";
    case Allocator::MultiThreaded:
        return "MultiThreaded";
    case Allocator::HandOff:
        return "handoff";
    }
    return "?";
}

static const char *sectionName(Section s)
{
    switch (s) {
    case Section::SingleThread:
        return "single";
    case Section::ThreadPerCpu:
        return "percpu";
    case Section::CrossThread:
        return "cross";
    }
    return "?";
}

static constexpr int ChunkSizes[] = { 16, 32, 64 };
static constexpr int BatchSizes[] = { 100, 200, 400 };
// Chunks allocated and freed per iteration (per thread in threadPerCpu): a multiple of every
// batch size, and at 2 ns per pair still 80 µs.
static constexpr int PairsPerIteration = 40000;
// Batches in flight between producer and consumer in crossThread.
static constexpr int RingSlots = 8;

// Wall-clock rows are meaningless under valgrind, which serializes the threads.
static bool underCallgrind()
{
    return QCoreApplication::arguments().contains(QStringLiteral("-callgrindchild"));
}

// The file that provides the malloc() the malloc rows call: the C library, or whatever
// LD_PRELOAD put in front of it.
static QByteArray mallocProvider()
{
#ifdef HAVE_DLADDR
    Dl_info info;
    void *(*fn)(std::size_t) = &::malloc;
    if (dladdr(reinterpret_cast<void *>(fn), &info) && info.dli_fname && *info.dli_fname)
        return QByteArray(info.dli_fname);
#endif
    return QByteArray("unknown");
}

// TST_BENCH_POOLALLOCATOR_ROWS, if set: the allocators to run.
static bool allocatorSelected(Allocator a)
{
    const QByteArray rows = qgetenv("TST_BENCH_POOLALLOCATOR_ROWS");
    if (rows.trimmed().isEmpty())
        return true;
    for (const QByteArray &name : rows.split(',')) {
        if (name.trimmed().compare(allocatorName(a), Qt::CaseInsensitive) == 0)
            return true;
    }
    return false;
}

static inline void cpuRelax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Spins briefly, then yields: the machine has few cores and may be busy with other work.
template<typename Predicate>
static void spinUntil(Predicate done)
{
    for (int spins = 0; !done(); ++spins) {
        if (spins < 128)
            cpuRelax();
        else
            std::this_thread::yield();
    }
}

static qint64 nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

// The allocators, behind one static interface. `objects` is the hand-off's preallocated slot
// memory; the allocators ignore it.
template<int Size>
struct MallocPolicy
{
    static void *allocate(char *, int) { return std::malloc(Size); }
    static void deallocate(void *p) { std::free(p); }
};

template<int Size, QPoolThreadModel Model>
struct PoolPolicy
{
    using Pool = QPoolAllocator<std::size_t(Size), Model>;
    static void *allocate(char *, int) { return Pool::allocate(Size); }
    static void deallocate(void *p) { Pool::deallocate(p, Size); }
};

template<int Size>
struct HandOffPolicy
{
    static void *allocate(char *objects, int i) { return objects + std::size_t(i) * Size; }
    static void deallocate(void *) {}
};

// Every chunk's first word carries its index in the batch, written when it is handed out and
// read back before it is freed; the sum checks that no chunk was handed out twice at once.
static inline void writePayload(void *p, int i)
{
    *static_cast<quintptr *>(p) = quintptr(i);
}

static inline quintptr readPayload(const void *p)
{
    return *static_cast<const quintptr *>(p);
}

static quint64 expectedSum(int batch, quint64 batches)
{
    return quint64(batch) * quint64(batch - 1) / 2 * batches;
}

// One iteration of the single-thread pattern: returns the payload sum.
template<typename A>
static quint64 runPattern(void **ptrs, int batch)
{
    quint64 sum = 0;
    for (int round = PairsPerIteration / batch; round > 0; --round) {
        for (int i = 0; i < batch; ++i) {
            void *p = A::allocate(nullptr, i);
            writePayload(p, i);
            ptrs[i] = p;
        }
        for (int i = 0; i < batch; i += 2) {
            sum += readPayload(ptrs[i]);
            A::deallocate(ptrs[i]);
        }
        for (int i = 1; i < batch; i += 2) {
            sum += readPayload(ptrs[i]);
            A::deallocate(ptrs[i]);
        }
    }
    return sum;
}

// crossThread's hand-off: RingSlots batches of pointers, filled by the producer in turn.
struct HandOffRing
{
    HandOffRing(int batchSize, int chunkSize)
        : batch(batchSize), pointers(std::size_t(RingSlots) * std::size_t(batchSize)),
          objects(new char[std::size_t(RingSlots) * std::size_t(batchSize)
                           * std::size_t(chunkSize)]),
          objectBytesPerSlot(std::size_t(batchSize) * std::size_t(chunkSize))
    {}

    const int batch;
    std::vector<void *> pointers; // slot s: [s * batch, (s + 1) * batch)
    std::unique_ptr<char[]> objects; // the hand-off row's "chunks"
    const std::size_t objectBytesPerSlot;
    // Batches produced and consumed so far; each written by one side only.
    alignas(64) std::atomic<quint64> produced { 0 };
    alignas(64) std::atomic<quint64> consumed { 0 };
    char padding[64 - sizeof(std::atomic<quint64>)];
};

template<typename A>
static void produce(HandOffRing &ring, int batches)
{
    const int batch = ring.batch;
    quint64 head = ring.produced.load(std::memory_order_relaxed);
    for (int b = 0; b < batches; ++b) {
        // acquire: the consumer is done with the slot (and, for the hand-off, its objects).
        spinUntil([&] {
            return head - ring.consumed.load(std::memory_order_acquire) < quint64(RingSlots);
        });
        const std::size_t slot = std::size_t(head % RingSlots);
        void **ptrs = ring.pointers.data() + slot * std::size_t(batch);
        char *objects = ring.objects.get() + slot * ring.objectBytesPerSlot;
        for (int i = 0; i < batch; ++i) {
            void *p = A::allocate(objects, i);
            writePayload(p, i);
            ptrs[i] = p;
        }
        // release: publishes the pointers and the payloads.
        ring.produced.store(++head, std::memory_order_release);
    }
}

template<typename A>
static quint64 consume(HandOffRing &ring, int batches)
{
    const int batch = ring.batch;
    quint64 sum = 0;
    quint64 tail = ring.consumed.load(std::memory_order_relaxed);
    for (int b = 0; b < batches; ++b) {
        spinUntil([&] { return ring.produced.load(std::memory_order_acquire) != tail; });
        void **ptrs = ring.pointers.data() + std::size_t(tail % RingSlots) * std::size_t(batch);
        for (int i = 0; i < batch; i += 2) {
            sum += readPayload(ptrs[i]);
            A::deallocate(ptrs[i]);
        }
        for (int i = 1; i < batch; i += 2) {
            sum += readPayload(ptrs[i]);
            A::deallocate(ptrs[i]);
        }
        ring.consumed.store(++tail, std::memory_order_release);
    }
    return sum;
}

using PatternFn = quint64 (*)(void **, int);
using ProduceFn = void (*)(HandOffRing &, int);
using ConsumeFn = quint64 (*)(HandOffRing &, int);

struct Kernels
{
    PatternFn pattern = nullptr;
    ProduceFn produce = nullptr;
    ConsumeFn consume = nullptr;
};

template<typename A>
static Kernels kernelsOf()
{
    return { &runPattern<A>, &produce<A>, &consume<A> };
}

template<int Size>
static Kernels kernelsFor(Allocator a)
{
    switch (a) {
    case Allocator::Malloc:
        return kernelsOf<MallocPolicy<Size>>();
    case Allocator::MultiThreaded:
        return kernelsOf<PoolPolicy<Size, QPoolThreadModel::MultiThreaded>>();
    case Allocator::HandOff:
        return kernelsOf<HandOffPolicy<Size>>();
    }
    return {};
}

static Kernels kernelsFor(Allocator a, int chunkSize)
{
    switch (chunkSize) {
    case 16:
        return kernelsFor<16>(a);
    case 32:
        return kernelsFor<32>(a);
    case 64:
        return kernelsFor<64>(a);
    }
    return {};
}

// The CPUs this process may run on.
static std::vector<int> allowedCpus()
{
    std::vector<int> cpus;
#ifdef HAVE_THREAD_AFFINITY
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (CPU_ISSET(cpu, &set))
                cpus.push_back(cpu);
        }
    }
#endif
    return cpus;
}

static void pinThread(std::thread &thread, int cpu)
{
#ifdef HAVE_THREAD_AFFINITY
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set);
#else
    Q_UNUSED(thread);
    Q_UNUSED(cpu);
#endif
}

// Threads that run one job per round, all at once: each waits for the others at a barrier
// before it reads the clock, so that the time between rounds (and waking the threads) is not
// measured. A round takes from the earliest start to the latest end.
//
// Where there are CPUs enough, each thread is pinned to a CPU of its own: otherwise the
// scheduler at times puts a producer and its consumer on one CPU, where they take turns without
// any cache line crossing between cores, and the cross-thread rows measure something else
// (about three times faster for malloc) in some iterations and not in others.
class Crew
{
    Q_DISABLE_COPY_MOVE(Crew)
public:
    using Job = std::function<void(int index)>;

    Crew(int count, Job job) : m_job(std::move(job)), m_slots(std::size_t(count))
    {
        const std::vector<int> cpus = allowedCpus();
        for (int i = 0; i < count; ++i) {
            std::thread &thread = m_slots[std::size_t(i)].thread;
            thread = std::thread([this, i] { run(i); });
            if (int(cpus.size()) >= count)
                pinThread(thread, cpus[std::size_t(i)]);
        }
    }
    ~Crew()
    {
        m_quit = true; // published by the semaphores
        for (Slot &s : m_slots)
            s.go.release();
        for (Slot &s : m_slots)
            s.thread.join();
    }

    // One round; returns its duration in ns.
    qint64 round()
    {
        m_arrived.store(0, std::memory_order_relaxed); // published by the semaphores
        for (Slot &s : m_slots)
            s.go.release();
        m_done.acquire(int(m_slots.size()));
        qint64 start = m_slots.front().startNs;
        qint64 end = m_slots.front().endNs;
        for (const Slot &s : m_slots) {
            start = std::min(start, s.startNs);
            end = std::max(end, s.endNs);
        }
        return end - start;
    }

private:
    struct Slot
    {
        std::thread thread;
        QSemaphore go;
        qint64 startNs = 0;
        qint64 endNs = 0;
    };

    void run(int i)
    {
        Slot &self = m_slots[std::size_t(i)];
        const int count = int(m_slots.size());
        for (;;) {
            self.go.acquire();
            if (m_quit)
                return;
            m_arrived.fetch_add(1, std::memory_order_relaxed);
            spinUntil([&] { return m_arrived.load(std::memory_order_relaxed) == count; });
            self.startNs = nowNs();
            m_job(i);
            self.endNs = nowNs();
            m_done.release();
        }
    }

    Job m_job;
    std::vector<Slot> m_slots;
    QSemaphore m_done;
    std::atomic<int> m_arrived { 0 };
    bool m_quit = false;
};

static int threadsPerCpuRow()
{
    return std::max(1, QThread::idealThreadCount());
}

class tst_BenchPoolAllocator : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void singleThread_data();
    void singleThread();
    void threadPerCpu_data();
    void threadPerCpu();
    void crossThread_data();
    void crossThread();
    void cleanupTestCase();

private:
    void addRows(std::initializer_list<Allocator> allocators);
    void record(Section section, Allocator a, int chunk, int batch,
                std::vector<qint64> &&iterationNs);
    void printTable() const;
    void writeCsv() const;

    using Key = std::tuple<Section, int, int>; // section, chunk size, batch size
    // Per invocation of a row, the time of each iteration (PairsPerIteration pairs). QTest
    // invokes a row with 1, 2, 4, ... iterations until they take long enough (then once more
    // per -median N).
    std::map<Key, std::map<Allocator, std::vector<std::vector<qint64>>>> m_samples;

    // ns per pair of a row: the median iteration of the invocations with the most iterations
    // (the accepted measurement), so that an iteration hit by preemption does not count.
    // Negative when the row did not run. Sets *iterations to the number of iterations used.
    double nsPerPair(const Key &key, Allocator a, qsizetype *iterations = nullptr) const;
};

void tst_BenchPoolAllocator::addRows(std::initializer_list<Allocator> allocators)
{
    QTest::addColumn<int>("allocator");
    QTest::addColumn<int>("chunk");
    QTest::addColumn<int>("batch");
    for (int chunk : ChunkSizes) {
        for (int batch : BatchSizes) {
            for (Allocator a : allocators) {
                if (!allocatorSelected(a))
                    continue;
                QTest::addRow("%s, %d B x %d", allocatorName(a), chunk, batch)
                        << int(a) << chunk << batch;
            }
        }
    }
}

void tst_BenchPoolAllocator::record(Section section, Allocator a, int chunk, int batch,
                                    std::vector<qint64> &&iterationNs)
{
    m_samples[Key(section, chunk, batch)][a].push_back(std::move(iterationNs));
}

double tst_BenchPoolAllocator::nsPerPair(const Key &key, Allocator a, qsizetype *iterations) const
{
    const auto row = m_samples.find(key);
    if (row == m_samples.end())
        return -1;
    const auto cell = row->second.find(a);
    if (cell == row->second.end())
        return -1;
    std::size_t most = 0;
    for (const std::vector<qint64> &invocation : cell->second)
        most = std::max(most, invocation.size());
    std::vector<qint64> times;
    for (const std::vector<qint64> &invocation : cell->second) {
        if (invocation.size() == most)
            times.insert(times.end(), invocation.begin(), invocation.end());
    }
    if (times.empty())
        return -1;
    if (iterations)
        *iterations = qsizetype(times.size());
    std::sort(times.begin(), times.end());
    const std::size_t n = times.size();
    const double median =
            n % 2 ? double(times[n / 2]) : (double(times[n / 2 - 1]) + double(times[n / 2])) / 2;
    return median / PairsPerIteration;
}

void tst_BenchPoolAllocator::singleThread_data()
{
    addRows({ Allocator::Malloc, Allocator::MultiThreaded });
}

void tst_BenchPoolAllocator::singleThread()
{
    QFETCH(int, allocator);
    QFETCH(int, chunk);
    QFETCH(int, batch);
    const Kernels k = kernelsFor(Allocator(allocator), chunk);
    QVERIFY(k.pattern);

    std::vector<void *> ptrs(static_cast<std::size_t>(batch));
    // Warm-up: pages, arenas and malloc's bins are set up here.
    quint64 sum = k.pattern(ptrs.data(), batch);
    quint64 iterations = 1;

    std::vector<qint64> times;
    QBENCHMARK {
        QElapsedTimer clock;
        clock.start();
        sum += k.pattern(ptrs.data(), batch);
        times.push_back(clock.nsecsElapsed());
        ++iterations;
    }
    QCOMPARE(sum, expectedSum(batch, iterations * quint64(PairsPerIteration / batch)));
    record(Section::SingleThread, Allocator(allocator), chunk, batch, std::move(times));
}

void tst_BenchPoolAllocator::threadPerCpu_data()
{
    if (underCallgrind())
        QSKIP("wall-clock rows of several threads; run singleThread under -callgrind");
    addRows({ Allocator::Malloc, Allocator::MultiThreaded });
}

void tst_BenchPoolAllocator::threadPerCpu()
{
    QFETCH(int, allocator);
    QFETCH(int, chunk);
    QFETCH(int, batch);
    const Kernels k = kernelsFor(Allocator(allocator), chunk);
    QVERIFY(k.pattern);

    const int threads = threadsPerCpuRow();
    std::vector<quint64> sums(std::size_t(threads), 0);
    // Each thread's pointer array; 16 spare entries keep neighbours off each other's lines.
    std::vector<std::vector<void *>> ptrs(std::size_t(threads),
                                          std::vector<void *>(std::size_t(batch) + 16));
    Crew crew(threads, [&](int i) {
        sums[std::size_t(i)] += k.pattern(ptrs[std::size_t(i)].data(), batch);
    });
    crew.round(); // warm-up: each thread's arena and pages
    quint64 rounds = 1;

    std::vector<qint64> times; // for PairsPerIteration pairs per thread
    QBENCHMARK {
        times.push_back(crew.round());
        ++rounds;
    }
    for (quint64 s : sums)
        QCOMPARE(s, expectedSum(batch, rounds * quint64(PairsPerIteration / batch)));
    record(Section::ThreadPerCpu, Allocator(allocator), chunk, batch, std::move(times));
}

void tst_BenchPoolAllocator::crossThread_data()
{
    if (underCallgrind())
        QSKIP("wall-clock rows of two threads; run singleThread under -callgrind");
    addRows({ Allocator::Malloc, Allocator::MultiThreaded, Allocator::HandOff });
}

void tst_BenchPoolAllocator::crossThread()
{
    QFETCH(int, allocator);
    QFETCH(int, chunk);
    QFETCH(int, batch);
    const Kernels k = kernelsFor(Allocator(allocator), chunk);
    QVERIFY(k.produce && k.consume);

    HandOffRing ring(batch, chunk);
    const int batches = PairsPerIteration / batch;
    quint64 sum = 0;
    Crew crew(2, [&](int i) {
        if (i == 0)
            k.produce(ring, batches);
        else
            sum += k.consume(ring, batches);
    });
    crew.round(); // warm-up: the producer's arena, the ring's cache lines
    quint64 rounds = 1;

    std::vector<qint64> times;
    QBENCHMARK {
        times.push_back(crew.round());
        ++rounds;
    }
    QCOMPARE(sum, expectedSum(batch, rounds * quint64(batches)));
    record(Section::CrossThread, Allocator(allocator), chunk, batch, std::move(times));
}

void tst_BenchPoolAllocator::cleanupTestCase()
{
    if (underCallgrind()) {
        qInfo("Under callgrind: each singleThread row's count is for one iteration of %d "
              "allocate+free pairs; divide by %d for instructions per pair. The threaded rows "
              "were skipped.",
              PairsPerIteration, PairsPerIteration);
        return;
    }
    printTable();
    writeCsv();
}

void tst_BenchPoolAllocator::printTable() const
{
    if (m_samples.empty())
        return;
    // The columns that have any result.
    std::vector<Allocator> columns;
    for (Allocator a : AllAllocators) {
        for (const auto &[key, row] : m_samples) {
            if (row.count(a)) {
                columns.push_back(a);
                break;
            }
        }
    }

    qInfo("ns per allocate+free pair measured in this run, and each pool row's speed-up over "
          "malloc in the same row (the machine may be shared: compare within one run only)");
    qInfo("malloc() from %s; %d pairs per iteration (per thread); %d threads in the per-CPU "
          "rows",
          mallocProvider().constData(), PairsPerIteration, threadsPerCpuRow());

    QByteArray header = QByteArray("section  chunk x batch").leftJustified(24);
    for (Allocator a : columns)
        header += QByteArray(allocatorName(a)).rightJustified(16);
    qInfo("%s", header.constData());

    auto cell = [](double value, double mallocValue, Allocator a) {
        if (value < 0)
            return QByteArray("-").rightJustified(16);
        QByteArray text = QByteArray::number(value, 'f', 1);
        if (a != Allocator::Malloc && a != Allocator::HandOff && mallocValue > 0)
            text += " " + QByteArray::number(mallocValue / value, 'f', 2) + "x";
        return text.rightJustified(16);
    };

    for (Section section : AllSections) {
        const char *label = section == Section::SingleThread ? "1 thread"
                : section == Section::ThreadPerCpu           ? "per CPU"
                                                             : "cross";
        std::map<Allocator, std::vector<double>> logs; // for the geometric means
        bool any = false;
        for (int chunk : ChunkSizes) {
            for (int batch : BatchSizes) {
                const Key key(section, chunk, batch);
                if (!m_samples.count(key))
                    continue;
                any = true;
                const double mallocNs = nsPerPair(key, Allocator::Malloc);
                QByteArray line = QByteArray(label).leftJustified(9)
                        + (QByteArray::number(chunk) + " B x " + QByteArray::number(batch))
                                  .leftJustified(15);
                for (Allocator a : columns) {
                    const double v = nsPerPair(key, a);
                    line += cell(v, mallocNs, a);
                    if (v > 0)
                        logs[a].push_back(std::log(v));
                }
                qInfo("%s", line.constData());
            }
        }
        if (!any)
            continue;
        auto geomean = [&logs](Allocator a) {
            const auto it = logs.find(a);
            if (it == logs.end() || it->second.empty())
                return -1.0;
            double s = 0;
            for (double l : it->second)
                s += l;
            return std::exp(s / double(it->second.size()));
        };
        // Over the rows where the column ran; the malloc ratio is meaningful when both ran
        // in every row, which is the case unless rows were filtered out.
        QByteArray line =
                QByteArray(label).leftJustified(9) + QByteArray("geomean").leftJustified(15);
        const double mallocMean = geomean(Allocator::Malloc);
        for (Allocator a : columns)
            line += cell(geomean(a), mallocMean, a);
        qInfo("%s", line.constData());
    }
}

void tst_BenchPoolAllocator::writeCsv() const
{
    const QByteArray path = qgetenv("TST_BENCH_POOLALLOCATOR_CSV");
    if (path.isEmpty())
        return;
    FILE *f = std::fopen(path.constData(), "w");
    if (!f) {
        qWarning("cannot write %s", path.constData());
        return;
    }
    std::fprintf(f, "# malloc=%s\n", mallocProvider().constData());
    std::fprintf(f, "section,allocator,chunk,batch,threads,ns_per_pair,iterations\n");
    for (const auto &[key, row] : m_samples) {
        const auto &[section, chunk, batch] = key;
        const int threads = section == Section::SingleThread ? 1
                : section == Section::ThreadPerCpu           ? threadsPerCpuRow()
                                                             : 2;
        for (const auto &cell : row) {
            qsizetype iterations = 0;
            const double v = nsPerPair(key, cell.first, &iterations);
            if (v < 0)
                continue;
            std::fprintf(f, "%s,%s,%d,%d,%d,%.3f,%lld\n", sectionName(section),
                         allocatorName(cell.first), chunk, batch, threads, v,
                         static_cast<long long>(iterations));
        }
    }
    std::fclose(f);
}

QTEST_GUILESS_MAIN(tst_BenchPoolAllocator)

#include "tst_bench_poolallocator.moc"
