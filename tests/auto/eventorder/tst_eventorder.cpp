// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Order of funnel calls among the other events their emitting thread posts to the receiver's
// thread (issue 22): QThread::finished, deleteLater(), queued invokes and posted events, as
// ordinary Qt code relies on them. Each scenario also runs with Qt::QueuedConnection (the
// "qt-queued" rows, the reference: if one fails, the test is wrong).

#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qpointer.h>
#include <QtCore/qregularexpression.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace {

using QfcTest::Sanitized;
using QfcTest::ThreadSanitized;

// Only guards against a hang.
constexpr int HangTimeoutMs = Sanitized ? 300000 : 120000;

enum Path { QtQueued, Funnel };

void busyWaitNs(qint64 ns)
{
    const QDeadlineTimer until { std::chrono::nanoseconds(ns) };
    while (!until.hasExpired()) {}
}

// A process keeping the other core busy while a scenario runs.
class BusyCore
{
public:
    explicit BusyCore(bool on)
    {
        if (on)
            m_thread = std::thread([this] {
                while (!m_stop.load(std::memory_order_relaxed)) {}
            });
    }
    ~BusyCore()
    {
        m_stop.store(true, std::memory_order_relaxed);
        if (m_thread.joinable())
            m_thread.join();
    }

private:
    std::atomic<bool> m_stop { false };
    std::thread m_thread;
};

class Results : public QObject
{
    Q_OBJECT
public:
    qint64 slowNs = 0;
    int count = 0;
    int misordered = 0;
    int atFinished = -1;
    void onResult(int v)
    {
        if (v != count)
            ++misordered;
        ++count;
        if (slowNs)
            busyWaitNs(slowNs);
    }
};

class ResultThread : public QThread
{
    Q_OBJECT
public:
    int n = 0;
    bool flushAtEnd = true;
Q_SIGNALS:
    void result(int v);
    void done(); // emitted by the thread itself, after its results

protected:
    void run() override
    {
        for (int i = 0; i < n; ++i)
            Q_EMIT result(i);
        if (flushAtEnd)
            QtFastConnect::flush();
        Q_EMIT done();
    }
};

class CallSender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void call(int i);
};

// A posted event a thread sends between its emissions; its number travels through Qt's posted
// event list, which ThreadSanitizer cannot see into: published for it explicitly.
class MarkerEvent : public QEvent
{
public:
    static QEvent::Type type()
    {
        static const int t = QEvent::registerEventType();
        return QEvent::Type(t);
    }
    explicit MarkerEvent(int i) : QEvent(type()), index(i)
    {
        QtFastConnectPrivate::qfcAnnotateRelease(this);
    }
    const int index;
};

// Receives markers and calls in the main thread and checks their order.
class Log : public QObject
{
    Q_OBJECT
public:
    bool barrierAfterEachCall = false;
    qint64 slowNs = 0;
    int markers = 0;
    int calls = 0;
    int callsBeforeTheirMarker = 0; // a call ran before the marker posted ahead of it
    int markersBeforeEarlierCall = 0; // a marker ran before a call emitted ahead of it

    Q_INVOKABLE void marker(int i)
    {
        if (i != markers)
            qFatal("marker %d arrived as number %d", i, markers);
        // Every call emitted before marker i was posted (0 .. i-1) has run?
        if (calls < i)
            ++markersBeforeEarlierCall;
        ++markers;
    }
    void call(int i)
    {
        if (i != calls)
            qFatal("call %d arrived as number %d", i, calls);
        // Marker i was posted before call i was emitted.
        if (markers <= i)
            ++callsBeforeTheirMarker;
        ++calls;
        if (slowNs)
            busyWaitNs(slowNs);
    }
    bool event(QEvent *e) override
    {
        // Before its type is read: a marker's (a no-op for other events).
        QtFastConnectPrivate::qfcAnnotateAcquire(e);
        if (e->type() == MarkerEvent::type()) {
            marker(static_cast<MarkerEvent *>(e)->index);
            return true;
        }
        return QObject::event(e);
    }
};

class Doomed : public QObject
{
    Q_OBJECT
public:
    static inline int callsAtDestruction = -1;
    int calls = 0;
    qint64 slowNs = 0;
    ~Doomed() override { callsAtDestruction = calls; }
    void onCall(int)
    {
        ++calls;
        if (slowNs)
            busyWaitNs(slowNs);
    }
};

// Its first call moves it to the main thread and then blocks its old thread, inside the
// delivery pass, until released; later calls log in the main thread.
class MovingReceiver : public QObject
{
    Q_OBJECT
public:
    QThread *target = nullptr;
    std::atomic<bool> moved { false };
    std::atomic<bool> release { false };
    QList<int> log; // main thread only
    void onCall(int i)
    {
        if (i > 0) {
            log.append(i);
            return;
        }
        moveToThread(target);
        moved.store(true, std::memory_order_release);
        while (!release.load(std::memory_order_acquire))
            QThread::yieldCurrentThread();
    }
};

template<typename Predicate>
bool waitFor(Predicate done)
{
    QDeadlineTimer deadline(HangTimeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    }
    return true;
}

// The full sizes (20 runs of 200,000 results, 100,000 marker iterations) with
// QFC_EVENTORDER_FULL=1; CI runs fewer, to stay within its time.
bool fullSize()
{
    return qEnvironmentVariableIntValue("QFC_EVENTORDER_FULL") > 0;
}

bool skipQtUnderTsan(int path)
{
    return ThreadSanitized && path == QtQueued;
}

} // namespace

class tst_EventOrder : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // First: the thread-exit warning is printed once per process.
    void noExitWarningWhenAllRan();
    void finishedSeesAllResults_data();
    void finishedSeesAllResults();
    void markersKeepTheirPlace_data();
    void markersKeepTheirPlace();
    void flushThenDeleteLater_data();
    void flushThenDeleteLater();
    void flushBarrierWhileAnotherThreadHoldsThePass_data();
    void flushBarrierWhileAnotherThreadHoldsThePass();
};

static const QRegularExpression
        exitWarning(QStringLiteral("a thread exited with calls emitted after its last flush"));

// A thread that emits, waits until its receiver ran every call and exits without flush(): its
// calls all ran, so the thread-exit warning would be a false alarm (an idle relay may still hold
// the thread's batch open).
void tst_EventOrder::noExitWarningWhenAllRan()
{
    QTest::failOnWarning(exitWarning);
    Results results;
    CallSender sender;
    QVERIFY(QtFastConnect::connect(&sender, &CallSender::call, &results, &Results::onResult));
    std::atomic<bool> ran { false };
    std::thread producer([&] {
        for (int i = 0; i < 1000; ++i)
            Q_EMIT sender.call(i);
        while (!ran.load(std::memory_order_acquire)) // pairs with the main thread's release
            std::this_thread::yield();
    });
    const bool all = waitFor([&] { return results.count == 1000; });
    ran.store(true, std::memory_order_release);
    producer.join(); // after the thread's exit, thread_local destructors included
    QVERIFY(all);
    QCOMPARE(results.misordered, 0);
    QCoreApplication::sendPostedEvents(); // where the warning's task would run
}

// How a thread's last signal reaches the main thread in finishedSeesAllResults().
enum Ending { Finished, QueuedDone, AutoDone };

void tst_EventOrder::finishedSeesAllResults_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<bool>("flush");
    QTest::addColumn<int>("ending");
    QTest::addColumn<int>("slotNs");
    QTest::addColumn<bool>("busyCore");
    const struct
    {
        const char *name;
        Ending ending;
    } endings[] = { { "finished()", Finished },
                    { "queued done()", QueuedDone },
                    { "auto done()", AutoDone } };
    for (const auto &e : endings) {
        const QByteArray n = e.name;
        QTest::newRow("qt-queued, " + n) << int(QtQueued) << false << int(e.ending) << 0 << false;
        QTest::newRow("qt-queued, 1 us slot, " + n)
                << int(QtQueued) << false << int(e.ending) << 1000 << false;
        QTest::newRow("funnel, no flush, " + n)
                << int(Funnel) << false << int(e.ending) << 0 << false;
        QTest::newRow("funnel, no flush, 1 us slot, " + n)
                << int(Funnel) << false << int(e.ending) << 1000 << false;
        QTest::newRow("funnel, no flush, busy core, " + n)
                << int(Funnel) << false << int(e.ending) << 0 << true;
    }
    QTest::newRow("funnel, flush, finished()")
            << int(Funnel) << true << int(Finished) << 0 << false;
    QTest::newRow("funnel, flush, 1 us slot, busy core, finished()")
            << int(Funnel) << true << int(Finished) << 1000 << true;
}

// A QThread emits its results and returns: the handler of its last signal, a plain Qt
// connection in the main thread (QThread::finished(), or the thread's own done() signal,
// queued or automatic), must see every result, in order, as with Qt::QueuedConnection, with
// or without flush() at the end of run() (issue 38): the passes that run them yield to the
// event loop (1 us slots) and the other core is busy, and still no result runs after it.
void tst_EventOrder::finishedSeesAllResults()
{
    QFETCH(int, path);
    QFETCH(bool, flush);
    QFETCH(int, ending);
    QFETCH(int, slotNs);
    QFETCH(bool, busyCore);
    if (skipQtUnderTsan(path))
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    const int n = fullSize() ? 200000 : Sanitized ? 20000 : 50000;
    // Two runs in CI: before the emission hook, every run without flush() failed.
    const int runs = fullSize() ? 20 : 2;
    BusyCore busy(busyCore);
    for (int run = 0; run < runs; ++run) {
        Results results;
        results.slowNs = slotNs;
        ResultThread thread;
        thread.n = n;
        thread.flushAtEnd = flush;
        if (path == Funnel)
            QVERIFY(QtFastConnect::connect(&thread, &ResultThread::result, &results,
                                           &Results::onResult));
        else
            QVERIFY(QObject::connect(&thread, &ResultThread::result, &results, &Results::onResult,
                                     Qt::QueuedConnection));
        const auto atEnd = [&results] { results.atFinished = results.count; };
        if (ending == Finished)
            QObject::connect(&thread, &QThread::finished, &results, atEnd);
        else
            QObject::connect(&thread, &ResultThread::done, &results, atEnd,
                             ending == QueuedDone ? Qt::QueuedConnection : Qt::AutoConnection);
        thread.start();
        QVERIFY(waitFor([&] { return results.atFinished >= 0; }));
        QVERIFY(thread.wait(HangTimeoutMs));
        QVERIFY2(results.atFinished == n,
                 qPrintable(QStringLiteral("run %1: %2 of %3 results before the last signal")
                                    .arg(run)
                                    .arg(results.atFinished)
                                    .arg(n)));
        QCOMPARE(results.misordered, 0);
    }
}

void tst_EventOrder::markersKeepTheirPlace_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<bool>("invokeMethod"); // else QCoreApplication::postEvent()
    QTest::addColumn<bool>("flush");
    QTest::addColumn<int>("slotNs");
    QTest::addColumn<int>("pauseUs"); // between iterations: 0 is a flood
    QTest::newRow("qt-queued, invokeMethod") << int(QtQueued) << true << false << 0 << 0;
    QTest::newRow("qt-queued, postEvent") << int(QtQueued) << false << false << 0 << 0;
    QTest::newRow("funnel, invokeMethod") << int(Funnel) << true << false << 0 << 0;
    QTest::newRow("funnel, postEvent") << int(Funnel) << false << false << 0 << 0;
    QTest::newRow("funnel, postEvent, paced") << int(Funnel) << false << false << 0 << 50;
    QTest::newRow("funnel, invokeMethod, flush") << int(Funnel) << true << true << 0 << 0;
    QTest::newRow("funnel, postEvent, flush") << int(Funnel) << false << true << 0 << 0;
    QTest::newRow("funnel, postEvent, flush, 1 us slot")
            << int(Funnel) << false << true << 1000 << 0;
}

// One thread alternates a queued event to r (a queued invokeMethod() or a posted event) and a
// funnel emission to r. A call never runs before the marker posted ahead of it (point 1 of the
// issue); with flush() after each emission, it runs before the marker posted after it (point
// 2). Without flush(), how often it does is printed, not asserted: it depends on the load (a
// flood, or a thread that pauses 50 us between iterations, which the receiver keeps up with).
void tst_EventOrder::markersKeepTheirPlace()
{
    QFETCH(int, path);
    QFETCH(bool, invokeMethod);
    QFETCH(bool, flush);
    QFETCH(int, slotNs);
    QFETCH(int, pauseUs);
    if (skipQtUnderTsan(path))
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    if (ThreadSanitized && invokeMethod)
        QSKIP("a queued invokeMethod() is not observable by ThreadSanitizer; postEvent() rows are");
    const int n = pauseUs ? 10000 : fullSize() ? 100000 : Sanitized ? 10000 : 30000;
    Log log;
    log.slowNs = slotNs;
    CallSender sender;
    if (path == Funnel)
        QVERIFY(QtFastConnect::connect(&sender, &CallSender::call, &log, &Log::call));
    else
        QVERIFY(QObject::connect(&sender, &CallSender::call, &log, &Log::call,
                                 Qt::QueuedConnection));
    std::atomic<bool> done { false };
    std::thread worker([&] {
        for (int i = 0; i < n; ++i) {
            if (invokeMethod)
                QMetaObject::invokeMethod(&log, "marker", Qt::QueuedConnection, Q_ARG(int, i));
            else
                QCoreApplication::postEvent(&log, new MarkerEvent(i));
            Q_EMIT sender.call(i);
            if (flush)
                QtFastConnect::flush();
            if (pauseUs)
                std::this_thread::sleep_for(std::chrono::microseconds(pauseUs));
        }
        done.store(true, std::memory_order_release);
    });
    const bool finished = waitFor([&] {
        return done.load(std::memory_order_acquire) && log.calls == n && log.markers == n;
    });
    worker.join();
    QVERIFY(finished);
    QCOMPARE(log.callsBeforeTheirMarker, 0);
    if (flush || path == QtQueued)
        QCOMPARE(log.markersBeforeEarlierCall, 0);
    else
        qInfo("without flush(), %s: %d of %d markers ran before a call emitted ahead of them "
              "(order held for %.1f%%)",
              pauseUs ? "paced" : "a flood", log.markersBeforeEarlierCall, n,
              100.0 * (n - log.markersBeforeEarlierCall) / n);
}

// flush() makes every call the thread emitted before it run before any event it posts after
// it. Here the receiver's thread handles flush()'s barrier wake-up while another thread holds
// the receiver's pass (its old thread, in a slot that moved it and still runs): the barrier's
// calls must still run before the event posted after flush(), as Qt's queued call runs before
// an event posted after it.
void tst_EventOrder::flushBarrierWhileAnotherThreadHoldsThePass_data()
{
    QTest::addColumn<int>("path");
    QTest::newRow("qt-queued") << int(QtQueued);
    QTest::newRow("funnel") << int(Funnel);
}

void tst_EventOrder::flushBarrierWhileAnotherThreadHoldsThePass()
{
    QFETCH(int, path);
    if (skipQtUnderTsan(path))
        QSKIP("Qt's queued path is not instrumented");
    QThread old;
    old.start();
    CallSender sender;
    MovingReceiver r;
    r.target = QThread::currentThread();
    r.moveToThread(&old);
    if (path == Funnel)
        QVERIFY(QtFastConnect::connect(&sender, &CallSender::call, &r, &MovingReceiver::onCall));
    else
        QVERIFY(connect(&sender, &CallSender::call, &r, &MovingReceiver::onCall,
                        Qt::QueuedConnection));
    Q_EMIT sender.call(0);
    QDeadlineTimer deadline(HangTimeoutMs);
    while (!r.moved.load(std::memory_order_acquire) && !deadline.hasExpired())
        QThread::yieldCurrentThread();
    QVERIFY(r.moved.load(std::memory_order_acquire));
    // The receiver lives here now; its old thread still runs the first call's slot.
    Q_EMIT sender.call(1);
    if (path == Funnel)
        QtFastConnect::flush();
    QMetaObject::invokeMethod(
            &r, [&r] { r.log.append(-1); }, Qt::QueuedConnection);
    // Released while this thread handles its events (and, with the funnel, the barrier).
    std::thread releaser([&r] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        r.release.store(true, std::memory_order_release);
    });
    const bool done = waitFor([&r] { return r.log.size() == 2; });
    r.release.store(true, std::memory_order_release);
    releaser.join();
    old.quit();
    QVERIFY(old.wait(HangTimeoutMs));
    QVERIFY(done);
    QCOMPARE(r.log, QList<int>({ 1, -1 }));
}

void tst_EventOrder::flushThenDeleteLater_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("slotNs");
    QTest::newRow("qt-queued") << int(QtQueued) << 0;
    QTest::newRow("funnel") << int(Funnel) << 0;
    QTest::newRow("funnel, 1 us slot") << int(Funnel) << 1000;
}

// A worker emits to an object, flush()es and deleteLater()s it from its own thread: every call
// runs, then the object is deleted (before the fix, the calls still in flight were discarded,
// silently).
void tst_EventOrder::flushThenDeleteLater()
{
    QFETCH(int, path);
    QFETCH(int, slotNs);
    if (skipQtUnderTsan(path))
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
    constexpr int N = 10000;
    const int rounds = fullSize() ? 20 : Sanitized ? 3 : 10;
    for (int round = 0; round < rounds; ++round) {
        Doomed::callsAtDestruction = -1;
        auto *doomed = new Doomed;
        doomed->slowNs = slotNs;
        QPointer<Doomed> watch(doomed);
        CallSender sender;
        if (path == Funnel)
            QVERIFY(QtFastConnect::connect(&sender, &CallSender::call, doomed, &Doomed::onCall));
        else
            QVERIFY(QObject::connect(&sender, &CallSender::call, doomed, &Doomed::onCall,
                                     Qt::QueuedConnection));
        std::thread worker([&sender, doomed] {
            for (int i = 0; i < N; ++i)
                Q_EMIT sender.call(i);
            QtFastConnect::flush();
            doomed->deleteLater();
        });
        worker.join();
        // A running event loop, as in an application: Qt deletes a deleteLater()ed object in
        // the order its events were posted only there (processEvents() leaves it pending).
        QEventLoop loop;
        QObject::connect(doomed, &QObject::destroyed, &loop, &QEventLoop::quit);
        QTimer::singleShot(HangTimeoutMs, &loop, &QEventLoop::quit);
        if (watch)
            loop.exec();
        QVERIFY(watch.isNull());
        QCOMPARE(Doomed::callsAtDestruction, N);
    }
}

QTEST_GUILESS_MAIN(tst_EventOrder)
#include "tst_eventorder.moc"
