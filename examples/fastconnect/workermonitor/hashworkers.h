// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef HASHWORKERS_H
#define HASHWORKERS_H

#include <QtCore/qobject.h>

#include <atomic>
#include <memory>
#include <vector>

class InputBlocks;
class QThread;

// The sender of one worker's results. Each lives in its worker's thread, so that emitting does
// not cross threads before the connection takes over.
class HashReporter : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void blockHashed(quint64 hash); // every block, every pass
    void progress(int permille); // of the current pass, after every chunk of blocks
};

// Worker threads that hash the input's blocks with FNV-1a, pass after pass, until stopped. They
// take blocks from a shared counter in chunks and emit every hash: no pacing, so the
// connection decides what the GUI thread gets to see and how much piles up.
class HashWorkers
{
public:
    static constexpr qsizetype ChunkBlocks = 16;

    HashWorkers(const InputBlocks &input, int count);
    ~HashWorkers();

    int count() const { return int(m_workers.size()); }
    HashReporter *reporter(int worker) const { return m_workers.at(size_t(worker))->reporter; }

    void start();
    // GUI thread: stops the workers and joins them. It runs the GUI thread's events while it
    // waits, because a funnel producer may be blocked until that thread makes room.
    void stop();

    // Signals emitted so far, over all workers (results and progress).
    quint64 emitted() const;

private:
    struct Worker
    {
        QThread *thread = nullptr;
        HashReporter *reporter = nullptr;
        // Written by its worker only (relaxed: a statistic); own cache line each.
        alignas(64) std::atomic<quint64> emitted { 0 };
    };
    void run(Worker *worker);

    const InputBlocks &m_input;
    std::vector<std::unique_ptr<Worker>> m_workers;
    alignas(64) std::atomic<quint64> m_next { 0 }; // next block, counted over all passes
    std::atomic<bool> m_stopping { false };
};

#endif // HASHWORKERS_H
