// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// A plugin (a MODULE library that tst_plugin dlopen()s) using the module the way an
// application's plugin would: QtFastConnect::connect(), QtFastConnect::invoke() and
// QPoolAllocator, all instantiated here, in -fPIC code loaded at run time. Its producer threads
// deliver calls to a receiver in the test's main thread, which counts them.

#include "plugin.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtFastConnect/qpoolallocator.h>
#include <QtCore/qobject.h>
#include <QtCore/qthread.h>

#include <atomic>
#include <memory>
#include <new>
#include <vector>

namespace {

// Allocated by a producer from the plugin's own pool, freed by the receiver's thread.
struct Payload
{
    quint64 producer;
    quint64 seq;
    quint64 check;
};
using PayloadPool = QPoolAllocator<sizeof(Payload)>;

quint64 checkOf(quint64 producer, quint64 seq)
{
    return (producer * Q_UINT64_C(0x9E3779B97F4A7C15)) ^ seq;
}

enum Path { Emitted, Invoked, Pooled, PathCount };

class Receiver : public QObject
{
    Q_OBJECT
public:
    void reset(int producers)
    {
        // Producer p's calls through path k have the seqs k, k + PathCount, ...
        m_next.resize(std::size_t(producers) * PathCount);
        for (std::size_t i = 0; i < m_next.size(); ++i)
            m_next[i] = i % PathCount;
    }

    // Calls of one path from one producer arrive in the order it made them.
    void take(Path path, quint64 producer, quint64 seq)
    {
        if (QThread::currentThread() != thread())
            ++errors;
        const std::size_t i = std::size_t(producer) * PathCount + path;
        if (i >= m_next.size() || m_next[i] != seq)
            ++errors;
        else
            m_next[i] = seq + PathCount;
        ++counts[path];
        // relaxed: polled by the main thread, which is this thread; the producers never read it.
        received.fetch_add(1, std::memory_order_relaxed);
    }

    void takePayload(Payload *p)
    {
        if (p->check != checkOf(p->producer, p->seq))
            ++errors;
        take(Pooled, p->producer, p->seq);
        p->~Payload();
        PayloadPool::deallocate(p); // a cross-thread free into the producer's arena
    }

    std::atomic<qint64> received { 0 };
    qint64 counts[PathCount] = {};
    qint64 errors = 0; // this thread only
    std::atomic<qint64> producerErrors { 0 };
    std::vector<QThread *> producers;

public Q_SLOTS:
    void onEmitted(quint64 producer, quint64 seq) { take(Emitted, producer, seq); }
    void onInvoked(quint64 producer, quint64 seq) { take(Invoked, producer, seq); }

private:
    std::vector<quint64> m_next; // per producer and path: the next seq expected
};

class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(quint64 producer, quint64 seq);
};

void produce(Receiver *receiver, quint64 producer, int calls)
{
    // The sender lives in this thread, as the README advises.
    Sender sender;
    if (!QtFastConnect::connect(&sender, &Sender::value, receiver, &Receiver::onEmitted)) {
        receiver->producerErrors.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    for (quint64 seq = 0; seq < quint64(calls); ++seq) {
        bool ok = true;
        switch (Path(seq % PathCount)) {
        case Emitted:
            Q_EMIT sender.value(producer, seq);
            break;
        case Invoked:
            ok = QtFastConnect::invoke(receiver, &Receiver::onInvoked, producer, seq);
            break;
        case Pooled: {
            auto *p =
                    new (PayloadPool::allocate()) Payload { producer, seq, checkOf(producer, seq) };
            ok = QtFastConnect::invoke(receiver, [receiver, p] { receiver->takePayload(p); });
            break;
        }
        case PathCount:
            break;
        }
        if (!ok)
            receiver->producerErrors.fetch_add(1, std::memory_order_relaxed);
    }
    QtFastConnect::flush();
}

} // namespace

extern "C" {

Q_DECL_EXPORT QObject *qfcPluginCreateReceiver()
{
    return new Receiver;
}

Q_DECL_EXPORT bool qfcPluginStartProducers(QObject *object, int producers, int callsEach)
{
    auto *receiver = static_cast<Receiver *>(object);
    if (!receiver->producers.empty() || producers <= 0 || callsEach % PathCount)
        return false;
    receiver->reset(producers);
    for (int i = 0; i < producers; ++i) {
        QThread *t = QThread::create(produce, receiver, quint64(i), callsEach);
        receiver->producers.push_back(t);
        t->start();
    }
    return true;
}

Q_DECL_EXPORT PluginResults qfcPluginResults(QObject *object)
{
    auto *receiver = static_cast<Receiver *>(object);
    PluginResults r = {};
    r.received = receiver->received.load(std::memory_order_relaxed);
    r.emitted = receiver->counts[Emitted];
    r.invoked = receiver->counts[Invoked];
    r.pooled = receiver->counts[Pooled];
    r.errors = receiver->errors + receiver->producerErrors.load(std::memory_order_relaxed);
    const QPoolAllocatorStats stats = PayloadPool::stats();
    r.poolArenas = stats.arenas;
    r.poolPages = stats.pagesInUse;
    return r;
}

Q_DECL_EXPORT bool qfcPluginFinish(QObject *object)
{
    auto *receiver = static_cast<Receiver *>(object);
    bool ok = true;
    for (QThread *t : receiver->producers) {
        ok = t->wait(60000) && ok;
        delete t;
    }
    receiver->producers.clear();
    // The producers exited with chunks out (the receiver freed them later): their arenas were
    // orphaned, and are destroyed now that every chunk is back.
    PayloadPool::trim();
    return ok;
}

Q_DECL_EXPORT void qfcPluginDestroyReceiver(QObject *object)
{
    delete static_cast<Receiver *>(object);
}

} // extern "C"

#include "plugin.moc"
