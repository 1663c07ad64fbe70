// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "childprocess.h"
#include "countedvalue.h"
#include "gatedreceiver.h"
#include "eventloopthread.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qmutex.h>
#include <QtCore/qprocess.h>
#include <QtCore/qregularexpression.h>
#include <QtCore/qscopeguard.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#if defined(Q_OS_WIN)
#include <qt_windows.h>
#endif

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

class tst_QFunnel : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void defaults();
    void globalInstanceIsShared();
    void globalInstanceLivesInMainThread_data();
    void globalInstanceLivesInMainThread();
    void stalledReceiversWarnOncePerCause_data();
    void stalledReceiversWarnOncePerCause();
    void setCapacityRejectsBadValues_data();
    void setCapacityRejectsBadValues();
    void fullFunnelBlocksProducersAndLosesNothing();
    void receiverThreadNeverBlocks();
    void destroyedWithPendingCalls();
    void emissionAfterFunnelDestroyedIsDropped();
    void flushesRaceTheRelay();
};

void tst_QFunnel::defaults()
{
    QFunnel funnel;
    QCOMPARE(funnel.capacity(), QFunnel::DefaultCapacity);
    QCOMPARE(funnel.capacity(), 65536);
    QCOMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.droppedCalls(), 0u);
    QCOMPARE(funnel.overCapacityCalls(), 0u);
    QCOMPARE(funnel.property("capacity").toLongLong(), 65536);
}

void tst_QFunnel::globalInstanceIsShared()
{
    QFunnel *fromMain = QFunnel::globalInstance();
    QVERIFY(fromMain);
    std::atomic<QFunnel *> fromWorker { nullptr };
    std::unique_ptr<QThread> t(QThread::create([&] { fromWorker = QFunnel::globalInstance(); }));
    t->start();
    QVERIFY(t->wait(10000));
    QCOMPARE(fromWorker.load(), fromMain);
}

namespace {
// Starts this binary again with TST_QFUNNEL_CHILD=scenario (childMain()), for what needs a
// fresh process: the global funnel is the process's. Its qWarning()s and report go to stdout.
void startChild(QProcess &child, const char *scenario)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("TST_QFUNNEL_CHILD"), QString::fromLatin1(scenario));
    child.setProcessEnvironment(env);
    child.setProcessChannelMode(QProcess::MergedChannels);
    child.start(QCoreApplication::applicationFilePath(), {});
}
} // namespace

void tst_QFunnel::globalInstanceLivesInMainThread_data()
{
    QTest::addColumn<QByteArray>("scenario");
    QTest::newRow("created by a worker") << QByteArray("global-from-worker");
    QTest::newRow("created by a worker before the application")
            << QByteArray("global-from-worker-before-application");
}

// Whichever thread creates the global funnel, it lives in the main thread, as documented: the
// main thread sets its statistics interval, and its statisticsChanged() fires there.
void tst_QFunnel::globalInstanceLivesInMainThread()
{
    QFETCH(QByteArray, scenario);
#if defined(__SANITIZE_THREAD__)
    QSKIP("QProcess's vfork() is not supported by ThreadSanitizer; runs in the other builds");
#endif
    QProcess child;
    startChild(child, scenario.constData());
    QFC_WAIT_FOR_CHILD_START(child);
    QVERIFY2(child.waitForFinished(60000), "the child hung");
    const QByteArray out = child.readAll();
    QVERIFY2(child.exitStatus() == QProcess::NormalExit, out.constData());
    for (const char *line : { "global funnel in the main thread: yes", "statistics interval: 20",
                              "statisticsChanged() fired: yes", "warnings: 0" }) {
        QVERIFY2(out.contains(line), out.constData());
    }
    QCOMPARE(child.exitCode(), 0);
}

void tst_QFunnel::stalledReceiversWarnOncePerCause_data()
{
    QTest::addColumn<QByteArray>("scenario");
    QTest::addColumn<QByteArray>("cause");
    QTest::newRow("finished thread")
            << QByteArray("stalled-finished") << QByteArray("has finished or not started");
    QTest::newRow("blocked thread")
            << QByteArray("stalled-blocked") << QByteArray("has not run its events for a second");
}

// 200 receivers stall at once (stalledReceivers()): the first warning is printed in full, the
// other 199 are counted in one summary line instead of printing 199 more.
void tst_QFunnel::stalledReceiversWarnOncePerCause()
{
    QFETCH(QByteArray, scenario);
    QFETCH(QByteArray, cause);
#if defined(__SANITIZE_THREAD__)
    QSKIP("QProcess's vfork() is not supported by ThreadSanitizer; runs in the other builds");
#endif
    QProcess child;
    startChild(child, scenario.constData());
    QFC_WAIT_FOR_CHILD_START(child);
    QVERIFY2(child.waitForFinished(120000), "the child hung");
    const QByteArray out = child.readAll();
    QVERIFY2(child.exitStatus() == QProcess::NormalExit, out.constData());
    QCOMPARE(child.exitCode(), 0);
    QByteArrayList lines; // this cause's warnings
    for (const QByteArray &line : out.split('\n')) {
        if (line.startsWith("message: ") && line.contains(cause))
            lines.append(line);
    }
    QVERIFY2(!lines.isEmpty() && lines.size() <= 3, out.constData());
    // The first in full: which thread, how many calls.
    static const QRegularExpression full(
            QStringLiteral("\\(QThread (0x)?[0-9a-fA-F]+\\) .*; its \\d+ pending calls"));
    QVERIFY2(QString::fromUtf8(lines.first()).contains(full), out.constData());
    // Then the others, counted.
    static const QRegularExpression summary(
            QStringLiteral("\\((\\d+) more receivers, same cause, in the last \\d+ s\\)"));
    int printed = 0;
    qint64 counted = 0;
    for (const QByteArray &line : std::as_const(lines)) {
        const QRegularExpressionMatch m = summary.match(QString::fromUtf8(line));
        if (m.hasMatch())
            counted += m.captured(1).toLongLong();
        else
            ++printed;
    }
    QVERIFY2(counted > 0, out.constData());
    QCOMPARE(printed + counted, qint64(200));
}

void tst_QFunnel::setCapacityRejectsBadValues_data()
{
    QTest::addColumn<qsizetype>("capacity");
    QTest::newRow("zero") << qsizetype(0);
    QTest::newRow("negative") << qsizetype(-5);
}

void tst_QFunnel::setCapacityRejectsBadValues()
{
    QFETCH(qsizetype, capacity);
    QFunnel funnel;
    funnel.setCapacity(100);
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("capacity must be at least 1 call"));
    funnel.setCapacity(capacity);
    QCOMPARE(funnel.capacity(), 100);
}

void tst_QFunnel::fullFunnelBlocksProducersAndLosesNothing()
{
    constexpr qsizetype Capacity = 4;
    constexpr int Producers = 4;
    constexpr quint64 PerProducer = 500;

    QFunnel funnel;
    funnel.setCapacity(Capacity);
    EventLoopThread receiverThread;
    receiverThread.start();
    GatedReceiver receiver;
    receiver.moveToThread(&receiverThread);

    std::atomic<qint64> returned { 0 }; // emissions that came back from emit
    std::vector<std::unique_ptr<Producer>> producers;
    std::vector<std::unique_ptr<QThread>> threads;
    for (int p = 0; p < Producers; ++p) {
        producers.push_back(std::make_unique<Producer>());
        QVERIFY(QtFastConnect::connect(&funnel, producers.back().get(), &Producer::value, &receiver,
                                       &GatedReceiver::onValue));
        Producer *emitter = producers.back().get();
        threads.emplace_back(QThread::create([emitter, &returned] {
            for (quint64 i = 1; i <= PerProducer; ++i) {
                Q_EMIT emitter->value(i);
                ++returned;
            }
        }));
        threads.back()->start();
    }

    // The receiver is parked inside its first call; the producers must stall once it holds its
    // share of the funnel (3/4 of the capacity, give or take a call each producer admitted
    // before it counted, within the capacity), instead of queueing all 2,000 calls. A failed
    // check below must not leave it parked.
    auto unpark = qScopeGuard([&] { receiver.gate.release(); });
    QVERIFY(receiver.entered.tryAcquire(1, 10000));
    QDeadlineTimer deadline(10000);
    while (funnel.pendingCalls() < Capacity / 2 && !deadline.hasExpired())
        QThread::msleep(1);
    QVERIFY(funnel.pendingCalls() >= Capacity / 2);
    QVERIFY(funnel.pendingCalls() <= Capacity);
    for (auto &t : threads)
        QVERIFY(!t->isFinished());
    QVERIFY(returned.load() <= Capacity);

    receiver.gate.release();
    for (auto &t : threads)
        QVERIFY(t->wait(60000));
    QTRY_COMPARE_WITH_TIMEOUT(receiver.calls.load(), qint64(Producers * PerProducer), 30000);
    QCOMPARE(receiver.sum.load(), Producers * PerProducer * (PerProducer + 1) / 2);
    // The receiver's pass gives the credits back after its last slot returned.
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.droppedCalls(), 0u);
    QCOMPARE(funnel.overCapacityCalls(), 0u);
    receiverThread.quit();
    receiverThread.wait();
    receiver.moveToThread(thread()); // allowed: its thread has finished
}

void tst_QFunnel::receiverThreadNeverBlocks()
{
    // The main thread receives through this funnel, so its emissions into the full funnel are
    // admitted over capacity instead of deadlocking it.
    QFunnel funnel;
    funnel.setCapacity(1);
    Producer producer;
    GatedReceiver receiver;
    receiver.gate.release(1); // the first call must not park the main thread
    QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::value, &receiver,
                                   &GatedReceiver::onValue));
    for (quint64 i = 1; i <= 10; ++i)
        Q_EMIT producer.value(i);
    QCOMPARE(funnel.pendingCalls(), 10);
    QCOMPARE(funnel.overCapacityCalls(), 9u);
    QTRY_COMPARE(receiver.calls.load(), 10);
    QCOMPARE(receiver.sum.load(), 55u);
    QCOMPARE(funnel.pendingCalls(), 0);
}

void tst_QFunnel::destroyedWithPendingCalls()
{
    QCOMPARE(CountedValue::live.load(), 0);
    Producer producer;
    QObject receiver;
    std::atomic<int> calls { 0 };
    {
        QFunnel funnel;
        QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::counted, &receiver,
                                       [&](const CountedValue &) { ++calls; }));
        std::unique_ptr<QThread> t(QThread::create([&] {
            for (int i = 0; i < 1000; ++i)
                Q_EMIT producer.counted(CountedValue(i));
        }));
        t->start();
        QVERIFY(t->wait(10000));
        QVERIFY(CountedValue::live.load() > 0);
    }
    // The funnel's destructor dropped the calls pending for this (the destroying) thread.
    QCOMPARE(CountedValue::live.load(), 0);
    QCoreApplication::processEvents();
    QCOMPARE(calls.load(), 0);
}

void tst_QFunnel::emissionAfterFunnelDestroyedIsDropped()
{
    Producer producer;
    QObject receiver;
    std::atomic<int> calls { 0 };
    auto *funnel = new QFunnel;
    QVERIFY(QtFastConnect::connect(funnel, &producer, &Producer::counted, &receiver,
                                   [&](const CountedValue &) { ++calls; }));
    delete funnel;
    Q_EMIT producer.counted(CountedValue(1)); // the connection outlives its funnel
    QCOMPARE(CountedValue::live.load(), 0);
    QCoreApplication::processEvents();
    QCOMPARE(calls.load(), 0);
}

// Threads that emit and flush() call after call: each flush() hands the relay a marker and
// frees it as soon as the relay has completed it. The marker's lock used to be freed with it,
// while the relay could still be inside its unlock: MinGW's pthread mutex (std::mutex there)
// signals its event after releasing the lock, and signalled whatever object had been given
// the closed event's handle meanwhile. Under Wine, oneTBB's event for the sleeping relay is
// such an object: woken with its wait still listed, the relay left the bounded queue's wait list
// corrupted (tst_lifetime::torture crashed or hung in 4 of 20 runs). On Windows the main thread
// makes events nobody signals meanwhile and counts those that were signalled all the same.
// Everywhere: every call arrives, every flush() returns.
void tst_QFunnel::flushesRaceTheRelay()
{
    constexpr int Flushers = 4;
    constexpr quint64 PerFlusher = 5000;
    QFunnel funnel;
    EventLoopThread receiverThread;
    receiverThread.start();
    GatedReceiver receiver;
    receiver.gate.release(1); // its first call does not park it
    receiver.moveToThread(&receiverThread);
    std::atomic<int> flushersLeft { Flushers };
    std::vector<std::unique_ptr<Producer>> producers;
    std::vector<std::unique_ptr<QThread>> threads;
    for (int p = 0; p < Flushers; ++p) {
        producers.push_back(std::make_unique<Producer>());
        QVERIFY(QtFastConnect::connect(&funnel, producers.back().get(), &Producer::value, &receiver,
                                       &GatedReceiver::onValue));
        Producer *emitter = producers.back().get();
        threads.emplace_back(QThread::create([emitter, &funnel, &flushersLeft] {
            for (quint64 i = 1; i <= PerFlusher; ++i) {
                Q_EMIT emitter->value(i);
                funnel.flush();
            }
            --flushersLeft;
        }));
        threads.back()->start();
    }
#if defined(Q_OS_WIN)
    int strayWakeUps = 0;
    int sentinelEvents = 0;
    while (flushersLeft.load() > 0) {
        HANDLE event = CreateEventW(nullptr, FALSE, FALSE, nullptr);
        if (!event)
            break; // out of handles: the count below is what it is
        if (WaitForSingleObject(event, 1) == WAIT_OBJECT_0)
            ++strayWakeUps;
        CloseHandle(event);
        ++sentinelEvents;
    }
#endif
    for (auto &t : threads)
        QVERIFY2(t->wait(120000), "a flush() hung");
#if defined(Q_OS_WIN)
    qInfo("%d of %d events nobody signalled were signalled", strayWakeUps, sentinelEvents);
    QCOMPARE(strayWakeUps, 0);
#endif
    QTRY_COMPARE_WITH_TIMEOUT(receiver.calls.load(), qint64(Flushers * PerFlusher), 30000);
    QCOMPARE(receiver.sum.load(), Flushers * PerFlusher * (PerFlusher + 1) / 2);
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.droppedCalls(), 0u);
    receiverThread.quit();
    receiverThread.wait();
    receiver.moveToThread(thread());
}

namespace {
std::atomic<int> g_childWarnings { 0 };
QBasicMutex g_childMessagesLock;
QStringList g_childMessages; // guarded by g_childMessagesLock

void printMessage(QtMsgType type, const QMessageLogContext &, const QString &message)
{
    if (type == QtWarningMsg)
        ++g_childWarnings;
    {
        QMutexLocker locker(&g_childMessagesLock);
        g_childMessages.append(message);
    }
    std::printf("message: %s\n", qPrintable(message));
    std::fflush(stdout);
}

// The global funnel's first user is a worker thread, with the application already there or
// created after it.
int globalFunnelFromWorker(int argc, char **argv, bool beforeApplication)
{
    qInstallMessageHandler(printMessage);
    std::unique_ptr<QCoreApplication> app;
    if (!beforeApplication)
        app = std::make_unique<QCoreApplication>(argc, argv);
    std::atomic<QFunnel *> global { nullptr };
    std::unique_ptr<QThread> worker(QThread::create([&] { global = QFunnel::globalInstance(); }));
    worker->start();
    if (!worker->wait(30000))
        return 2;
    if (beforeApplication)
        app = std::make_unique<QCoreApplication>(argc, argv);
    QFunnel *funnel = global.load();
    std::printf("global funnel in the main thread: %s\n",
                funnel->thread() == QThread::currentThread() ? "yes" : "no");
    funnel->setStatisticsInterval(20);
    std::printf("statistics interval: %d\n", funnel->statisticsInterval());
    int changes = 0;
    QObject::connect(funnel, &QFunnel::statisticsChanged, funnel, [&] { ++changes; });
    QObject receiver;
    int calls = 0;
    QDeadlineTimer deadline(30000);
    while (changes == 0 && !deadline.hasExpired()) {
        QtFastConnect::invoke(funnel, &receiver, [&] { ++calls; }); // a counter changes
        QCoreApplication::processEvents();
        QThread::msleep(10);
    }
    std::printf("statisticsChanged() fired: %s\nwarnings: %d\n", changes ? "yes" : "no",
                g_childWarnings.load());
    return changes && calls && g_childWarnings.load() == 0 ? 0 : 1;
}

// 200 receivers in one thread, each with a call pending, and a producer that then waits for
// room: it finds all of them stalled in one look. The thread has finished (stalled after
// 100 ms), or blocks in an event (after a second). Waits for the warnings' summary.
int stalledReceivers(int argc, char **argv, bool blocked)
{
    qInstallMessageHandler(printMessage);
    QCoreApplication app(argc, argv);
    constexpr int Receivers = 200;
    QFunnel funnel;
    funnel.setCapacity(Receivers + 8);
    EventLoopThread thread;
    thread.start();
    Producer producer;
    std::vector<std::unique_ptr<QObject>> receivers;
    std::atomic<int> calls { 0 };
    for (int i = 0; i < Receivers; ++i) {
        receivers.push_back(std::make_unique<QObject>());
        receivers.back()->moveToThread(&thread);
        if (!QtFastConnect::connect(&funnel, &producer, &Producer::value, receivers.back().get(),
                                    [&](quint64) { ++calls; })) {
            return 2;
        }
    }
    QSemaphore blocker;
    if (blocked) {
        QSemaphore entered;
        QMetaObject::invokeMethod(receivers.front().get(), [&] {
            entered.release();
            blocker.acquire();
        });
        entered.acquire();
    } else {
        thread.quit();
        thread.wait();
    }
    // One call per receiver, then more than the capacity left: the producer waits, and finds
    // the receivers stalled, all in the same look, since all had their call when it first
    // looked (flush(): the relay has pushed them).
    std::unique_ptr<QThread> emitter(QThread::create([&] {
        Q_EMIT producer.value(1);
        funnel.flush();
        Q_EMIT producer.value(2);
        funnel.flush();
    }));
    emitter->start();
    QDeadlineTimer deadline(60000);
    while (!emitter->isFinished() && !deadline.hasExpired())
        QThread::msleep(10);
    if (!emitter->wait(1000))
        return 4; // left blocked: not reached while stalled receivers are found
    // The summary of the others comes when its window ends.
    const QByteArray cause = blocked ? "has not run its events" : "has finished or not started";
    while (!deadline.hasExpired()) {
        QCoreApplication::processEvents();
        QThread::msleep(10);
        QMutexLocker locker(&g_childMessagesLock);
        if (std::any_of(g_childMessages.cbegin(), g_childMessages.cend(), [&](const QString &m) {
                return m.contains(QLatin1String(cause)) && m.contains(QLatin1String("more"));
            })) {
            break;
        }
    }
    blocker.release();
    thread.quit();
    thread.wait();
    receivers.clear();
    return 0;
}

int childMain(const QByteArray &scenario, int argc, char **argv)
{
    int result = 3;
    if (scenario == "stalled-finished" || scenario == "stalled-blocked")
        result = stalledReceivers(argc, argv, scenario == "stalled-blocked");
    if (scenario == "global-from-worker")
        result = globalFunnelFromWorker(argc, argv, false);
    else if (scenario == "global-from-worker-before-application")
        result = globalFunnelFromWorker(argc, argv, true);
    std::fflush(stdout);
    return result;
}
} // namespace

int main(int argc, char *argv[])
{
    const QByteArray scenario = qgetenv("TST_QFUNNEL_CHILD");
    if (!scenario.isEmpty())
        return childMain(scenario, argc, argv);
    QCoreApplication app(argc, argv);
    tst_QFunnel tc;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&tc, argc, argv);
}

#include "tst_qfunnel.moc"
