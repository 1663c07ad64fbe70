// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "hashworkers.h"
#include "inputblocks.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qthread.h>

// FNV-1a, 64 bits: byte-serial, so a 4 KiB block is a few microseconds of real work.
static quint64 fnv1a64(QByteArrayView data) noexcept
{
    quint64 hash = 0xcbf29ce484222325ULL;
    for (const char c : data) {
        hash ^= quint8(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

HashWorkers::HashWorkers(const InputBlocks &input, int count) : m_input(input)
{
    for (int i = 0; i < count; ++i) {
        auto worker = std::make_unique<Worker>();
        Worker *w = worker.get();
        w->thread = QThread::create([this, w] { run(w); });
        w->thread->setObjectName(QStringLiteral("hash worker %1").arg(i));
        w->reporter = new HashReporter;
        w->reporter->moveToThread(w->thread);
        m_workers.push_back(std::move(worker));
    }
}

HashWorkers::~HashWorkers()
{
    stop();
    for (const auto &w : m_workers) {
        delete w->reporter; // back in this thread (see run())
        delete w->thread;
    }
}

void HashWorkers::start()
{
    for (const auto &w : m_workers)
        w->thread->start();
}

void HashWorkers::run(Worker *worker)
{
    const quint64 blocks = quint64(m_input.count());
    HashReporter *reporter = worker->reporter;
    quint64 emitted = 0;
    while (!m_stopping.load(std::memory_order_relaxed)) {
        const quint64 first = m_next.fetch_add(ChunkBlocks, std::memory_order_relaxed);
        for (quint64 n = first; n < first + ChunkBlocks; ++n)
            Q_EMIT reporter->blockHashed(fnv1a64(m_input.block(qsizetype(n % blocks))));
        Q_EMIT reporter->progress(int((first + ChunkBlocks) % blocks * 1000 / blocks));
        emitted += ChunkBlocks + 1;
        worker->emitted.store(emitted, std::memory_order_relaxed);
    }
    // Hand the reporter back, so that ~HashWorkers deletes it in its own thread.
    reporter->moveToThread(QCoreApplication::instance()->thread());
}

void HashWorkers::stop()
{
    m_stopping.store(true, std::memory_order_relaxed);
    for (const auto &w : m_workers) {
        while (!w->thread->wait(QDeadlineTimer(5)))
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
    }
}

quint64 HashWorkers::emitted() const
{
    quint64 total = 0;
    for (const auto &w : m_workers)
        total += w->emitted.load(std::memory_order_relaxed);
    return total;
}
