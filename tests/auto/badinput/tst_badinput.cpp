// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Bad input around threads and funnel lifetime, each with its documented result. (Null
// pointers and bad modes: tst_qfastconnect::badInput; bad capacities: tst_qfunnel; emission
// after the application is gone: tst_shutdown.)

#include "countedvalue.h"
#include "eventloopthread.h"
#include "movableobject.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <memory>
#include <thread>
#include <vector>

class Producer : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(quint64 v);
    void counted(const CountedValue &v);
};

// A thread that starts its event loop only when the test says so.
class LateLoopThread : public QThread
{
public:
    QSemaphore startLoop;
    ~LateLoopThread() override
    {
        startLoop.release();
        quit();
        wait();
    }

protected:
    void run() override
    {
        startLoop.acquire();
        exec();
    }
};

class tst_BadInput : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void receiverThreadWithoutEventLoopYet();
    void receiverInFinishedThread();
    void receiverMovedMidFlood();
    void funnelDestroyedWhileProducersEmit();
};

void tst_BadInput::receiverThreadWithoutEventLoopYet()
{
    // Documented result: delivery later, once the thread runs its event loop; nothing lost.
    QFunnel funnel;
    LateLoopThread thread;
    thread.start();
    auto *receiver = new QObject;
    receiver->moveToThread(&thread);
    Producer producer;
    std::atomic<quint64> sum { 0 };
    QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::value, receiver,
                                   [&](quint64 v) { sum += v; }));
    for (quint64 i = 1; i <= 100; ++i)
        Q_EMIT producer.value(i);
    QCOMPARE(funnel.pendingCalls(), 100); // the thread is parked before its event loop
    QCOMPARE(sum.load(), 0u);
    thread.startLoop.release();
    QTRY_COMPARE(sum.load(), 5050u);
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.statistics().delivered, 100u);
    deleteLaterInItsThread(receiver);
}

void tst_BadInput::receiverInFinishedThread()
{
    // Documented result: a warning and an invalid connection, like a receiver without thread
    // affinity: no event loop would ever run the slot.
    std::unique_ptr<QThread> thread(QThread::create([] {}));
    QObject *receiver = nullptr;
    thread->start();
    QVERIFY(thread->wait(10000));
    receiver = new QObject;
    receiver->moveToThread(thread.get());
    Producer producer;
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("thread that has finished"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::value, receiver, [](quint64) {}));
    Q_EMIT producer.value(1);
    QCOMPARE(QFunnel::globalInstance()->pendingCalls(), 0);
    delete receiver; // its thread is gone: nobody else could
}

void tst_BadInput::receiverMovedMidFlood()
{
    // Documented result: every call is delivered exactly once, in the receiver's new thread
    // for the calls still pending when it moved.
    constexpr quint64 Count = 50000;
    QFunnel funnel;
    EventLoopThread threadA, threadB;
    threadA.start();
    threadB.start();
    auto *receiver = new MovableObject;
    receiver->moveToThread(&threadA);
    Producer producer;
    std::atomic<quint64> calls { 0 }, sum { 0 }, wrongThread { 0 };
    QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::value, receiver,
                                   [&, receiver](quint64 v) {
                                       if (QThread::currentThread() != receiver->thread())
                                           ++wrongThread;
                                       sum += v;
                                       ++calls; // last: the test reads sum once it sees all
                                   }));
    std::thread emitter([&] {
        for (quint64 i = 1; i <= Count; ++i)
            Q_EMIT producer.value(i);
    });
    QTRY_VERIFY(calls.load() > 0);
    // Moved back and forth, from its own thread, while the flood goes on.
    for (int round = 0; round < 20; ++round) {
        QThread *to = (round % 2 == 0) ? &threadB : &threadA;
        receiver->moveFromItsThread(to);
    }
    emitter.join();
    QTRY_COMPARE_WITH_TIMEOUT(calls.load(), Count, 60000);
    QCOMPARE(sum.load(), Count * (Count + 1) / 2);
    QCOMPARE(wrongThread.load(), 0u);
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    const QFunnel::Statistics s = funnel.statistics();
    QCOMPARE(s.delivered, Count);
    QCOMPARE(s.dropped, 0u);
    deleteLaterInItsThread(receiver);
}

void tst_BadInput::funnelDestroyedWhileProducersEmit()
{
    // Documented result: producers (even those blocked on the full funnel) return; their
    // emissions from then on are dropped and counted; every argument is destroyed; no slot runs
    // after the funnel is gone.
    QCOMPARE(CountedValue::live.load(), 0);
    EventLoopThread receiverThread;
    receiverThread.start();
    auto *receiver = new QObject;
    receiver->moveToThread(&receiverThread);
    std::atomic<quint64> calls { 0 };
    std::atomic<bool> funnelGone { false };
    std::atomic<quint64> callsAfterGone { 0 };
    std::atomic<bool> stop { false };
    std::atomic<quint64> emitted { 0 };
    std::vector<std::unique_ptr<Producer>> producers;
    std::vector<std::thread> threads;
    auto *funnel = new QFunnel;
    funnel->setCapacity(64); // producers block on it, too
    for (int p = 0; p < 4; ++p) {
        producers.push_back(std::make_unique<Producer>());
        QVERIFY(QtFastConnect::connect(funnel, producers.back().get(), &Producer::counted, receiver,
                                       [&](const CountedValue &) {
                                           ++calls;
                                           if (funnelGone.load())
                                               ++callsAfterGone;
                                       }));
        Producer *emitter = producers.back().get();
        threads.emplace_back([&, emitter] {
            for (quint64 i = 0; !stop.load(); ++i) {
                Q_EMIT emitter->counted(CountedValue(i));
                ++emitted;
            }
        });
    }
    QTRY_VERIFY(calls.load() > 1000);
    delete funnel;
    funnelGone = true;
    const quint64 emittedWhenGone = emitted.load();
    QTRY_VERIFY(emitted.load() > emittedWhenGone + 1000); // producers keep going, unblocked
    stop = true;
    for (auto &t : threads)
        t.join();
    deleteLaterInItsThread(receiver);
    receiverThread.quit();
    receiverThread.wait();
    QCOMPARE(CountedValue::live.load(), 0);
    // A slot already running when the funnel went away may finish; none starts afterwards.
    QVERIFY(callsAfterGone.load() <= 1);
}

QTEST_MAIN(tst_BadInput)
#include "tst_badinput.moc"
