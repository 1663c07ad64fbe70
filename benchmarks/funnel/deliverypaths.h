// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef DELIVERYPATHS_H
#define DELIVERYPATHS_H

// The harness of tst_bench_funnel: every way of making the call (Path), the receiver that
// checks order and checksum, and the pool of producer threads that makes the calls.

#include "valuesender.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qobject.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>

#include <atomic>
#include <memory>
#include <vector>

// Every way this benchmark can make the call. A new path (QtFastConnect::invoke, say) needs a
// value here, a row in PathTable, a case in connectPath() and one in ProducerPool::emitAll().
enum class Path {
    Queued,
    Funnel,
    Direct,
    Plain,
    InvokeQueued,
    FunnelInvoke,
    FunnelBatched,
    FunnelBatchedInvoke
};

struct PathInfo
{
    Path path;
    const char *arg; // --deliver name, and the series name in the CSV output
    const char *label; // table label
};

// In the order the one-producer table shows them.
inline constexpr PathInfo PathTable[] = {
    { Path::Plain, "plain", "plain member call" },
    { Path::Direct, "direct", "Qt::DirectConnection" },
    { Path::Queued, "queued", "Qt::QueuedConnection" },
    { Path::InvokeQueued, "invoke-queued", "invokeMethod, queued" },
    { Path::Funnel, "funnel", "FunnelConnection" },
    { Path::FunnelInvoke, "funnel-invoke", "QtFastConnect::invoke" },
    { Path::FunnelBatched, "funnel-batched", "connectBatched" },
    { Path::FunnelBatchedInvoke, "funnel-batched-invoke", "invokeBatched" },
};

inline const PathInfo &pathInfo(Path path)
{
    for (const PathInfo &info : PathTable) {
        if (info.path == path)
            return info;
    }
    Q_UNREACHABLE();
    return PathTable[0];
}

inline const char *pathName(Path path)
{
    return pathInfo(path).label;
}

// Paths whose slot runs in the producer thread: nobody waits in an event loop for them.
inline bool runsInProducer(Path path)
{
    return path == Path::Plain || path == Path::Direct;
}

// Every value carries its producer in the top bits and that producer's running sequence number
// below, so that the receiver can check per-producer order as well as the checksum.
inline constexpr int ProducerShift = 48;
inline constexpr quint64 SequenceMask = (quint64(1) << ProducerShift) - 1;

class Receiver : public QObject
{
    Q_OBJECT
public:
    explicit Receiver(int producers) : m_next(size_t(producers), 0) {}

    // Runs in the main thread, except for Qt::DirectConnection (then in the one producer).
    void onValue(quint64 v)
    {
        sum += v;
        quint64 &next = m_next[size_t(v >> ProducerShift)];
        if ((v & SequenceMask) != next)
            ++outOfOrder;
        next = (v & SequenceMask) + 1;
        if (++count == target && loop)
            loop->quit();
    }
    // connectBatched()'s slot: the same work per value.
    void onValues(QList<quint64> values)
    {
        for (quint64 v : std::as_const(values))
            onValue(v);
    }

    quint64 count = 0;
    quint64 sum = 0;
    quint64 outOfOrder = 0;
    quint64 target = 0;
    QEventLoop *loop = nullptr; // null: the slot runs in the producer, nobody waits in a loop

private:
    std::vector<quint64> m_next;
};

// Producer threads are started once per test function and parked between rounds, so that an
// iteration measures delivery, not thread creation. One Sender per thread, as with real workers.
class ProducerPool
{
    Q_DISABLE_COPY_MOVE(ProducerPool)
public:
    explicit ProducerPool(int count)
    {
        for (int i = 0; i < count; ++i) {
            auto w = std::make_unique<Worker>();
            w->tag = quint64(i) << ProducerShift;
            Worker *raw = w.get();
            w->thread.reset(QThread::create([this, raw] { run(raw); }));
            w->thread->start();
            m_workers.push_back(std::move(w));
        }
    }
    ~ProducerPool()
    {
        m_quit.store(true, std::memory_order_relaxed);
        for (auto &w : m_workers)
            w->go.release(); // the semaphore publishes m_quit
        for (auto &w : m_workers)
            w->thread->wait();
    }

    int size() const { return int(m_workers.size()); }
    Sender *sender(int i) const { return &m_workers[size_t(i)]->sender; }

    // How the producers make each call: emit through their Sender (the default, for the
    // connection paths), or call / invoke the receiver themselves. Set it between rounds.
    void setPath(Path path, Receiver *receiver)
    {
        m_path = path; // published by the next go.release()
        m_receiver = receiver;
    }

    // Each producer emits callsEach values; returns at once.
    void startRound(quint64 callsEach)
    {
        m_callsEach = callsEach; // published by go.release()
        for (auto &w : m_workers)
            w->go.release();
    }
    void waitRound() { m_done.acquire(size()); }

    // What the producers emitted so far; call between rounds.
    quint64 emittedSum() const
    {
        quint64 s = 0;
        for (const auto &w : m_workers)
            s += w->sum;
        return s;
    }

private:
    struct Worker
    {
        Sender sender;
        QSemaphore go;
        quint64 tag = 0;
        quint64 sequence = 0;
        quint64 sum = 0;
        std::unique_ptr<QThread> thread;
    };

    void run(Worker *w)
    {
        for (;;) {
            w->go.acquire();
            if (m_quit.load(std::memory_order_relaxed))
                return;
            switch (m_path) {
            case Path::Plain:
                emitAll<Path::Plain>(w);
                break;
            case Path::InvokeQueued:
                emitAll<Path::InvokeQueued>(w);
                break;
            case Path::FunnelInvoke:
                emitAll<Path::FunnelInvoke>(w);
                break;
            case Path::FunnelBatchedInvoke:
                emitAll<Path::FunnelBatchedInvoke>(w);
                break;
            default:
                emitAll<Path::Queued>(w); // through the Sender's signal, whatever connects it
                break;
            }
            m_done.release();
        }
    }

    // One loop per way of calling, so that the loop body has no branch on the path.
    template<Path P>
    void emitAll(Worker *w)
    {
        const quint64 n = m_callsEach;
        Receiver *receiver = m_receiver;
        for (quint64 i = 0; i < n; ++i) {
            const quint64 v = w->tag | w->sequence++;
            w->sum += v;
            if constexpr (P == Path::Plain) {
                receiver->onValue(v);
            } else if constexpr (P == Path::InvokeQueued) {
                QMetaObject::invokeMethod(
                        receiver, [receiver, v] { receiver->onValue(v); }, Qt::QueuedConnection);
            } else if constexpr (P == Path::FunnelInvoke) {
                QtFastConnect::invoke(receiver, &Receiver::onValue, v);
            } else if constexpr (P == Path::FunnelBatchedInvoke) {
                QtFastConnect::invokeBatched(receiver, &Receiver::onValues, v);
            } else {
                Q_EMIT w->sender.value(v);
            }
        }
    }

    std::vector<std::unique_ptr<Worker>> m_workers;
    QSemaphore m_done;
    quint64 m_callsEach = 0;
    Path m_path = Path::Queued;
    Receiver *m_receiver = nullptr;
    std::atomic<bool> m_quit { false };
};

// Connects one producer's Sender for the path (or nothing, for the paths that call the
// receiver without a connection) and tells the pool how to call.
inline bool connectPath(Path path, ProducerPool &pool, int producer, Receiver *receiver)
{
    pool.setPath(path, receiver);
    Sender *sender = pool.sender(producer);
    switch (path) {
    case Path::Plain:
    case Path::InvokeQueued:
    case Path::FunnelInvoke:
    case Path::FunnelBatchedInvoke:
        return true;
    case Path::Queued:
        return bool(QObject::connect(sender, &Sender::value, receiver, &Receiver::onValue,
                                     Qt::QueuedConnection));
    case Path::Funnel:
        return bool(QtFastConnect::connect(sender, &Sender::value, receiver, &Receiver::onValue));
    case Path::FunnelBatched:
        return bool(QtFastConnect::connectBatched(sender, &Sender::value, receiver,
                                                  &Receiver::onValues));
    case Path::Direct:
        return bool(QObject::connect(sender, &Sender::value, receiver, &Receiver::onValue,
                                     Qt::DirectConnection));
    }
    return false;
}

// One round: every producer emits callsEach values; returns once all of them ran.
inline void runRound(ProducerPool &pool, Receiver &receiver, quint64 callsEach)
{
    receiver.target = receiver.count + callsEach * quint64(pool.size());
    pool.startRound(callsEach);
    // The slot only runs inside this loop, so it cannot reach the target before exec().
    if (receiver.loop && receiver.count < receiver.target)
        receiver.loop->exec();
    pool.waitRound();
}

// --deliver mode (deliveronly.cpp): exactly `calls` calls through the path named pathArg, then
// returns the exit code; -1 for bad arguments.
int deliverOnly(const char *pathArg, const char *callsArg);

// --receiver-cost mode (receivercost.cpp): the main thread's CPU time per delivered call while it
// drains a backlog; argv holds <calls> <repetitions> <producers> <path>...; -1 for bad arguments.
int receiverCost(int argc, char **argv);

#endif // DELIVERYPATHS_H
