// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Delivery by the next event processing (issue 38): a call whose emission happens before the
// receiver's thread starts processing events runs in that processing, as a posted event does
// with Qt::QueuedConnection, even when the funnel's relay still held it: workers that emit and
// are waited for, then one processEvents(); a nested event loop started after the emissions.
// Each scenario also runs with Qt::QueuedConnection (the "qt-queued" rows, the reference: if
// one fails, the test is wrong). Unlike Qt, a delivery pass yields after its budget and leaves
// the rest to the next processing; the tests let that rest run (runResumes()) and count what
// no processing could have run.

#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfunnel.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qrunnable.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtCore/qthreadpool.h>
#include <QtTest/qtest.h>

#include <atomic>
#include <memory>
#include <thread>

namespace {

using QfcTest::ThreadSanitized;

enum Path { QtQueued, Funnel };

class Emitter : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void result(int v);
};

// Counts its calls; lives in the main thread.
class Counter : public QObject
{
    Q_OBJECT
public:
    int seen = 0;
    void onResult(int) { ++seen; }
};

// A QThreadPool job emitting one result. Qt hands it to a pool thread through its own locks,
// which ThreadSanitizer does not see (Qt is not instrumented): the hand-off is annotated.
class EmitJob : public QRunnable
{
public:
    explicit EmitJob(Emitter *e) : m_e(e) { QtFastConnectPrivate::qfcAnnotateRelease(this); }
    void run() override
    {
        QtFastConnectPrivate::qfcAnnotateAcquire(this);
        Q_EMIT m_e->result(1);
    }

private:
    Emitter *const m_e;
};

// A receiver thread that does not run its events until unblock is released (a thread blocked
// in a long task).
class BlockedThread : public QThread
{
public:
    QSemaphore running;
    QSemaphore unblock;

protected:
    void run() override
    {
        running.release();
        unblock.acquire();
        exec();
    }
};

bool connectVia(int path, QFunnel *funnel, Emitter *e, Counter *c, void (Counter::*slot)(int))
{
    if (path == QtQueued)
        return bool(QObject::connect(e, &Emitter::result, c, slot, Qt::QueuedConnection));
    return bool(QtFastConnect::connect(funnel, e, &Emitter::result, c, slot));
}

// Runs the main thread's events until done() or a minute passed (only a hang guard).
template<typename Predicate>
bool processUntil(Predicate done)
{
    QDeadlineTimer deadline(60000);
    while (!done() && !deadline.hasExpired())
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    return done();
}

bool skipQtUnderTsan(int path)
{
    return ThreadSanitized && path == QtQueued;
}

// Runs whose one processing left calls undelivered, and the most it left.
struct ShortRuns
{
    int runs = 0;
    int most = 0;
    void note(int missing)
    {
        if (missing) {
            ++runs;
            most = qMax(most, missing);
        }
    }
    QByteArray describe(const char *what, int of, int calls) const
    {
        return QByteArray::number(runs) + " of " + QByteArray::number(of) + ' ' + what + " (up to "
                + QByteArray::number(most) + " of " + QByteArray::number(calls) + ')';
    }
};

// What the one processing left of a pass that yielded after its budget (1 ms of wall time,
// which ThreadSanitizer, AddressSanitizer or a preempted thread can exceed within a few dozen
// calls) runs in the Resume wake-up it posted, as a later processing would run it: sent here
// without a new processing (QCoreApplication::sendPostedEvents() emits no dispatcher signal,
// so the module does not wait for the relay there). Calls still in the relay's hands, which
// the module's wait exists for, have no wake-up posted yet and stay missing.
void runResumes(const int &seen)
{
    for (int before = -1; seen != before;) {
        before = seen;
        QCoreApplication::sendPostedEvents();
    }
}

// How the main thread waits for the workers before its one processEvents().
enum Wait { PoolOneWorker, PoolEightWorkers, ThreadWait, Semaphore };

} // namespace

class tst_NextProcessing : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void waitedWorkers_data();
    void waitedWorkers();
    void nestedLoopRunsEarlierCalls_data();
    void nestedLoopRunsEarlierCalls();
};

void tst_NextProcessing::waitedWorkers_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("wait");
    const struct
    {
        const char *name;
        Wait wait;
    } waits[] = { { "QThreadPool, 1 worker", PoolOneWorker },
                  { "QThreadPool, 8 workers", PoolEightWorkers },
                  { "QThread::wait()", ThreadWait },
                  { "semaphore", Semaphore } };
    for (const auto &w : waits) {
        QTest::newRow(QByteArray("qt-queued, ") + w.name) << int(QtQueued) << int(w.wait);
        QTest::newRow(QByteArray("funnel, ") + w.name) << int(Funnel) << int(w.wait);
    }
}

// A job queue's shape (the ported library): 100 short jobs, each emitting one result to
// the main thread; the main thread waits for them, processes its events once and expects every
// result to have run, 100 runs. Before the processing hook, 1 to 6 runs in 20 left up to 98
// results undelivered (benchmarks/semantics waitedWorkers).
void tst_NextProcessing::waitedWorkers()
{
    QFETCH(int, path);
    QFETCH(int, wait);
    if (skipQtUnderTsan(path))
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr int Runs = 100;
    constexpr int Jobs = 100;
    QFunnel funnel;
    ShortRuns shortRuns;
    for (int run = 0; run < Runs; ++run) {
        Emitter e;
        Counter c;
        QVERIFY(connectVia(path, &funnel, &e, &c, &Counter::onResult));
        auto job = [&e] { Q_EMIT e.result(1); };
        // Semaphore: the worker, still running while this thread processes, and what it
        // releases (outlives the join: the worker may still be inside release()).
        QSemaphore emitted;
        std::thread signaller;
        switch (Wait(wait)) {
        case PoolOneWorker:
        case PoolEightWorkers: {
            QThreadPool pool;
            pool.setMaxThreadCount(wait == PoolOneWorker ? 1 : 8);
            for (int i = 0; i < Jobs; ++i)
                pool.start(new EmitJob(&e));
            pool.waitForDone();
            break;
        }
        case ThreadWait: {
            std::unique_ptr<QThread> t(QThread::create([&] {
                for (int i = 0; i < Jobs; ++i)
                    job();
            }));
            t->start();
            QVERIFY(t->wait(60000));
            break;
        }
        case Semaphore:
            signaller = std::thread([&] {
                for (int i = 0; i < Jobs; ++i)
                    job();
                emitted.release();
            });
            emitted.acquire();
            break;
        }
        QCoreApplication::processEvents();
        runResumes(c.seen);
        shortRuns.note(Jobs - c.seen);
        if (signaller.joinable())
            signaller.join();
        QVERIFY(processUntil([&] { return c.seen == Jobs; }));
    }
    QVERIFY2(shortRuns.runs == 0,
             shortRuns
                     .describe("runs left results undelivered by the one processEvents() after "
                               "the wait",
                               Runs, Jobs)
                     .constData());
}

void tst_NextProcessing::nestedLoopRunsEarlierCalls_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<bool>("smallAndBlocked");
    QTest::newRow("qt-queued") << int(QtQueued) << false;
    QTest::newRow("qt-queued, a blocked receiver thread") << int(QtQueued) << true;
    QTest::newRow("funnel") << int(Funnel) << false;
    QTest::newRow("funnel, capacity 64, a blocked receiver thread") << int(Funnel) << true;
}

// A worker emits two calls (an idle funnel hands the first to the inbox, the relay takes the
// second), then lets the main thread go on; the main thread starts a nested event loop that its
// first event ends (a queued quit() posted after the emissions): both calls have run when it
// returns, 200 runs. With a small capacity and another receiver thread blocked in a slot (its
// calls stay pending there), as in the random scenario that found a 158 ms nested loop end
// without a call emitted before it (issue 38). Few calls: a pass yields after its budget of
// wall time (QFunnelPassBudget::Base), which a thread preempted on a busy machine can exceed
// within a few dozen calls; its Resume then runs in the next processing.
void tst_NextProcessing::nestedLoopRunsEarlierCalls()
{
    QFETCH(int, path);
    QFETCH(bool, smallAndBlocked);
    if (skipQtUnderTsan(path))
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr int Runs = 200;
    constexpr int Calls = 2;
    constexpr int BlockedCalls = 8;
    QFunnel funnel;
    if (smallAndBlocked)
        funnel.setCapacity(64);

    // The blocked receiver thread: held before its event loop until the test ends.
    BlockedThread blockedThread;
    Counter blocked;
    blocked.moveToThread(&blockedThread);
    Emitter toBlocked;
    if (smallAndBlocked) {
        blockedThread.start();
        blockedThread.running.acquire();
        QVERIFY(connectVia(path, &funnel, &toBlocked, &blocked, &Counter::onResult));
    }

    ShortRuns shortRuns;
    for (int run = 0; run < Runs; ++run) {
        Emitter e;
        Counter c;
        QVERIFY(connectVia(path, &funnel, &e, &c, &Counter::onResult));
        QSemaphore emitted;
        std::thread worker([&] {
            if (smallAndBlocked && run == 0) {
                for (int i = 0; i < BlockedCalls; ++i)
                    Q_EMIT toBlocked.result(i);
            }
            for (int i = 0; i < Calls; ++i)
                Q_EMIT e.result(i);
            emitted.release();
        });
        emitted.acquire();
        QEventLoop loop;
        QMetaObject::invokeMethod(&loop, &QEventLoop::quit, Qt::QueuedConnection);
        loop.exec();
        runResumes(c.seen);
        shortRuns.note(Calls - c.seen);
        worker.join();
        QVERIFY(processUntil([&] { return c.seen == Calls; }));
    }
    if (smallAndBlocked) {
        blockedThread.unblock.release();
        blockedThread.quit();
        QVERIFY(blockedThread.wait(60000));
    }
    QVERIFY2(shortRuns.runs == 0,
             shortRuns
                     .describe("nested loops ended before calls emitted ahead of them ran", Runs,
                               Calls)
                     .constData());
}

QTEST_MAIN(tst_NextProcessing)
#include "tst_nextprocessing.moc"
