// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef HASHWORKERS_H
#define HASHWORKERS_H

#include <QtCore/qobject.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

class QBlockSet;

// What a pass produced: how many hashes, and their XOR. XOR does not depend on order, so every
// split over threads and every delivery order must give the same tally.
struct QHashTally
{
    quint64 count = 0;
    quint64 checksum = 0;

    void add(quint64 hash) noexcept
    {
        ++count;
        checksum ^= hash;
    }
    void merge(const QHashTally &other) noexcept
    {
        count += other.count;
        checksum ^= other.checksum;
    }
    friend bool operator==(const QHashTally &a, const QHashTally &b) noexcept
    {
        return a.count == b.count && a.checksum == b.checksum;
    }
    friend bool operator!=(const QHashTally &a, const QHashTally &b) noexcept { return !(a == b); }
};

// Every block of the set hashed once in the calling thread: the reference a pass must match.
QHashTally qHashAllBlocks(const QBlockSet &blocks);

// The sender of one worker's results; each worker thread creates its own and emits through it.
class QHashReporter : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void blockHashed(quint64 hash);
};

// Worker threads that hash the block set, one pass at a time. They take blocks from a shared
// counter in chunks, and either emit every hash (Emit) or keep a tally of their own (Fold, the
// ceiling: no delivery at all). The threads live as long as the pool, so a measurement pays for
// thread start-up once, not per pass. They need no event loop; each one's reporter lives in it.
class QHashWorkerPool
{
public:
    enum class Mode { Fold, Emit };

    // Blocks taken per grab: large enough that the shared counter is not a hot spot, small
    // enough that the threads finish a pass together.
    static constexpr qsizetype ChunkBlocks = 64;

    QHashWorkerPool(const QBlockSet &blocks, int threadCount);
    ~QHashWorkerPool();

    int threadCount() const { return int(m_threads.size()); }
    QHashReporter *reporter(int worker) const { return m_reporters.at(worker); }

    // Main thread: starts one pass over every block; returns at once.
    void startPass(Mode mode);
    // Main thread: blocks until every worker finished the pass. Returns the workers' combined
    // tally (Fold; empty for Emit, whose results travel through the reporters' signals). For
    // Emit, call it only once every result arrived: a worker may be blocked in an emit until
    // the main thread makes room.
    QHashTally waitForPass();

private:
    void run(int worker);
    template<Mode M>
    QHashTally hashShare(QHashReporter *reporter);

    const QBlockSet &m_blocks;
    std::vector<QHashReporter *> m_reporters; // each owned by its worker thread
    std::vector<std::thread> m_threads;

    alignas(64) std::atomic<qsizetype> m_next { 0 }; // every worker hits it: own cache line

    alignas(64) std::mutex m_lock; // guards the pass state below
    std::condition_variable m_passStarted;
    std::condition_variable m_passFinished; // also: every reporter created
    quint64 m_pass = 0;
    Mode m_mode = Mode::Fold;
    int m_starting = 0; // workers yet to create their reporter
    int m_running = 0;
    bool m_stopping = false;
    QHashTally m_folded;
};

#endif // HASHWORKERS_H
