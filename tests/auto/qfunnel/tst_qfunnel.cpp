// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "countedvalue.h"
#include "gatedreceiver.h"
#include "eventloopthread.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qscopeguard.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <memory>
#include <vector>

class tst_QFunnel : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void defaults();
    void globalInstanceIsShared();
    void setCapacityRejectsBadValues_data();
    void setCapacityRejectsBadValues();
    void fullFunnelBlocksProducersAndLosesNothing();
    void receiverThreadNeverBlocks();
    void destroyedWithPendingCalls();
    void emissionAfterFunnelDestroyedIsDropped();
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

    // The receiver is parked inside its first call; the producers must stall with the funnel
    // full, instead of queueing all 2,000 calls. A failed check below must not leave it parked.
    auto unpark = qScopeGuard([&] { receiver.gate.release(); });
    QVERIFY(receiver.entered.tryAcquire(1, 10000));
    QDeadlineTimer deadline(10000);
    while (funnel.pendingCalls() < Capacity && !deadline.hasExpired())
        QThread::msleep(1);
    QCOMPARE(funnel.pendingCalls(), Capacity);
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

QTEST_MAIN(tst_QFunnel)
#include "tst_qfunnel.moc"
