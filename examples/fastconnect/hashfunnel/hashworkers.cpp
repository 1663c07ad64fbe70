// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "hashworkers.h"
#include "blockset.h"
#include "fnv1a.h"

QHashTally qHashAllBlocks(const QBlockSet &blocks)
{
    QHashTally tally;
    for (qsizetype i = 0; i < blocks.blockCount(); ++i)
        tally.add(qFnv1a64(blocks.block(i)));
    return tally;
}

QHashWorkerPool::QHashWorkerPool(const QBlockSet &blocks, int threadCount)
    : m_blocks(blocks), m_reporters(threadCount, nullptr), m_starting(threadCount)
{
    m_threads.reserve(threadCount);
    for (int i = 0; i < threadCount; ++i)
        m_threads.emplace_back([this, i] { run(i); });
    // Return only once every reporter exists, so that the caller can connect them.
    std::unique_lock locker(m_lock);
    m_passFinished.wait(locker, [this] { return m_starting == 0; });
}

QHashWorkerPool::~QHashWorkerPool()
{
    {
        std::lock_guard locker(m_lock);
        m_stopping = true;
    }
    m_passStarted.notify_all();
    for (std::thread &t : m_threads)
        t.join();
}

void QHashWorkerPool::startPass(Mode mode)
{
    {
        std::lock_guard locker(m_lock);
        Q_ASSERT(m_running == 0);
        // Reset under the lock: a worker reads the counter only after it saw the new pass.
        m_next.store(0, std::memory_order_relaxed);
        m_mode = mode;
        m_folded = QHashTally();
        m_running = threadCount();
        ++m_pass;
    }
    m_passStarted.notify_all();
}

QHashTally QHashWorkerPool::waitForPass()
{
    std::unique_lock locker(m_lock);
    m_passFinished.wait(locker, [this] { return m_running == 0; });
    return m_folded;
}

// The hot loop; one instantiation per mode, so that the ceiling carries no trace of emission.
template<QHashWorkerPool::Mode M>
QHashTally QHashWorkerPool::hashShare(QHashReporter *reporter)
{
    QHashTally tally;
    const qsizetype total = m_blocks.blockCount();
    for (;;) {
        const qsizetype first = m_next.fetch_add(ChunkBlocks, std::memory_order_relaxed);
        if (first >= total)
            break;
        const qsizetype end = qMin(first + ChunkBlocks, total);
        for (qsizetype i = first; i < end; ++i) {
            const quint64 hash = qFnv1a64(m_blocks.block(i));
            if constexpr (M == Mode::Emit)
                Q_EMIT reporter->blockHashed(hash);
            else
                tally.add(hash);
        }
    }
    return tally;
}

void QHashWorkerPool::run(int worker)
{
    // Created here, the reporter lives in this thread. That matters: when a signal is emitted
    // outside its sender's thread, Qt locks the receiver's signal-slot mutex on every emission
    // to read the receiver's thread, and with one receiver for all workers that lock would be
    // contended by every worker and charged to the delivery scheme.
    QHashReporter reporter;
    {
        std::lock_guard locker(m_lock);
        m_reporters[worker] = &reporter;
        if (--m_starting == 0)
            m_passFinished.notify_all();
    }

    quint64 donePass = 0;
    for (;;) {
        Mode mode;
        {
            std::unique_lock locker(m_lock);
            m_passStarted.wait(locker, [&] { return m_stopping || m_pass != donePass; });
            if (m_stopping)
                return;
            donePass = m_pass;
            mode = m_mode;
        }
        const QHashTally tally = mode == Mode::Fold ? hashShare<Mode::Fold>(&reporter)
                                                    : hashShare<Mode::Emit>(&reporter);
        std::lock_guard locker(m_lock);
        m_folded.merge(tally);
        if (--m_running == 0)
            m_passFinished.notify_all();
    }
}
