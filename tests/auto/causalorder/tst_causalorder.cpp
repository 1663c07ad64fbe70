// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Causal order (issue 38): if one thread's emission happens before another's (here through a
// semaphore), the first call runs first in the receiver's thread, as Qt's one posted-event list
// per thread gives it. Each scenario runs with Qt::QueuedConnection too (the "qt-queued" rows,
// the reference: if one fails, the test is wrong) and with funnel connections, counting every
// call that ran before a call whose emission happened before its own.

#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

namespace {

class Emitter : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void created(int i);
    void processed(int i);
    void stage(int stage, int i);
};

enum Path { QtQueued, Funnel };

template<typename Func1, typename Func2>
bool connectVia(Path path, QFunnel *funnel, const Emitter *e, Func1 signal, const QObject *r,
                Func2 slot)
{
    if (path == QtQueued)
        return bool(QObject::connect(e, signal, r, slot, Qt::QueuedConnection));
    return bool(QtFastConnect::connect(funnel, e, signal, r, slot));
}

// Items per round: the sanitizers run the same interleavings slower.
constexpr int Items = QfcTest::Sanitized ? 5000 : 20000;
constexpr int Rounds = QfcTest::Sanitized ? 2 : 10;

// Runs the main thread's events until done() or 60 s.
template<typename Done>
bool processUntil(Done done)
{
    QDeadlineTimer deadline(60000);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return true;
}

// A thread running f, started now, waited for when it goes.
struct Running
{
    std::unique_ptr<QThread> thread;
    template<typename F>
    explicit Running(F f) : thread(QThread::create(std::move(f)))
    {
        thread->start();
    }
    ~Running() { thread->wait(); }
};

// created(i) and processed(i) to one receiver, counting the processed(i) that ran before
// created(i).
struct Pairs
{
    QFunnel funnel;
    Emitter e;
    QObject r;
    std::vector<char> created = std::vector<char>(size_t(Items), 0);
    int processed = 0;
    int inversions = 0;

    bool connect(Path path)
    {
        return connectVia(path, &funnel, &e, &Emitter::created, &r,
                          [this](int i) { created[size_t(i)] = 1; })
                && connectVia(path, &funnel, &e, &Emitter::processed, &r, [this](int i) {
                       ++processed;
                       inversions += created[size_t(i)] ? 0 : 1;
                   });
    }
    QString failure(int round) const
    {
        return QStringLiteral("round %1: processed(i) ran before created(i) for %2 of %3 items")
                .arg(round)
                .arg(inversions)
                .arg(Items);
    }
};

} // namespace

class tst_CausalOrder : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void causalPairs_data() { paths(); }
    void causalPairs();
    void pipeline_data() { paths(); }
    void pipeline();
    void pairsIntoTheReceiversOwnThread_data() { paths(); }
    void pairsIntoTheReceiversOwnThread();
    void oneFloodingThreadKeepsItsOrder_data() { paths(); }
    void oneFloodingThreadKeepsItsOrder();

private:
    static void paths()
    {
        QTest::addColumn<int>("path");
        QTest::newRow("qt-queued") << int(QtQueued);
        QTest::newRow("funnel") << int(Funnel);
    }
};

void tst_CausalOrder::causalPairs()
{
    // Thread 1 emits created(i) and hands i to thread 2, which emits processed(i): a pipeline
    // of two worker stages (download, then decode) reporting to one receiver.
    QFETCH(int, path);
    for (int round = 0; round < Rounds; ++round) {
        Pairs p;
        QVERIFY(p.connect(Path(path)));
        QSemaphore handOff;
        {
            Running first([&] {
                for (int i = 0; i < Items; ++i) {
                    Q_EMIT p.e.created(i);
                    handOff.release();
                }
            });
            Running second([&] {
                for (int i = 0; i < Items; ++i) {
                    handOff.acquire();
                    Q_EMIT p.e.processed(i);
                }
            });
            QVERIFY(processUntil([&] { return p.processed == Items; }));
        }
        QVERIFY2(p.inversions == 0, qPrintable(p.failure(round)));
        QVERIFY(std::all_of(p.created.cbegin(), p.created.cend(), [](char c) { return c == 1; }));
    }
}

void tst_CausalOrder::pipeline()
{
    // Three threads hand each item on, each emitting stage(k, i): no stage of an item runs
    // before an earlier one.
    QFETCH(int, path);
    constexpr int Stages = 3;
    for (int round = 0; round < Rounds; ++round) {
        QFunnel funnel;
        Emitter e;
        QObject r;
        std::vector<int> reached(size_t(Items), 0); // stages of each item that ran
        int last = 0;
        int inversions = 0;
        QVERIFY(connectVia(Path(path), &funnel, &e, &Emitter::stage, &r, [&](int stage, int i) {
            inversions += reached[size_t(i)] == stage ? 0 : 1;
            reached[size_t(i)] = stage + 1;
            last += stage == Stages - 1 ? 1 : 0;
        }));
        QSemaphore handOff[Stages - 1];
        {
            std::vector<std::unique_ptr<Running>> threads;
            for (int k = 0; k < Stages; ++k) {
                threads.push_back(std::make_unique<Running>([&, k] {
                    for (int i = 0; i < Items; ++i) {
                        if (k > 0)
                            handOff[k - 1].acquire();
                        Q_EMIT e.stage(k, i);
                        if (k < Stages - 1)
                            handOff[k].release();
                    }
                }));
            }
            QVERIFY(processUntil([&] { return last == Items; }));
        }
        QVERIFY2(inversions == 0,
                 qPrintable(QStringLiteral("round %1: %2 stages ran before an earlier stage of "
                                           "their item, of %3 items")
                                    .arg(round)
                                    .arg(inversions)
                                    .arg(Items)));
    }
}

void tst_CausalOrder::pairsIntoTheReceiversOwnThread()
{
    // A worker emits created(i) and hands i to the receiver's own thread, which emits
    // processed(i) to the receiver (a controller that reacts to a worker's progress): Qt posts
    // both, so created(i) runs first; the funnel's call from the receiver's own thread must not
    // overtake the worker's still on its way.
    QFETCH(int, path);
    for (int round = 0; round < Rounds; ++round) {
        Pairs p;
        QVERIFY(p.connect(Path(path)));
        QSemaphore handOff;
        {
            Running worker([&] {
                for (int i = 0; i < Items; ++i) {
                    Q_EMIT p.e.created(i);
                    handOff.release();
                }
            });
            int emitted = 0;
            QVERIFY(processUntil([&] {
                while (emitted < Items && handOff.tryAcquire())
                    Q_EMIT p.e.processed(emitted++);
                return p.processed == Items;
            }));
        }
        QVERIFY2(p.inversions == 0, qPrintable(p.failure(round)));
    }
}

void tst_CausalOrder::oneFloodingThreadKeepsItsOrder()
{
    // One thread alone floods the receiver, so that a relay round finds several of its batches,
    // whose calls may share a stamp (a thread alone reuses its last one): its order holds.
    QFETCH(int, path);
    constexpr int Calls = 200000;
    for (int round = 0; round < Rounds; ++round) {
        QFunnel funnel;
        Emitter e;
        QObject r;
        int next = 0;
        int outOfOrder = 0;
        QVERIFY(connectVia(Path(path), &funnel, &e, &Emitter::created, &r, [&](int i) {
            outOfOrder += i == next ? 0 : 1;
            next = i + 1;
        }));
        {
            Running flood([&] {
                for (int i = 0; i < Calls; ++i)
                    Q_EMIT e.created(i);
            });
            QVERIFY(processUntil([&] { return next == Calls; }));
        }
        QVERIFY2(outOfOrder == 0,
                 qPrintable(QStringLiteral("round %1: %2 of %3 calls out of order")
                                    .arg(round)
                                    .arg(outOfOrder)
                                    .arg(Calls)));
    }
}

QTEST_GUILESS_MAIN(tst_CausalOrder)

#include "tst_causalorder.moc"
