// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Emits into the global funnel, then destroys the application with the calls still pending.
// Prints what it saw; tst_shutdown checks it. Exit code 0 only if nothing ran and nothing leaked.
// Modes: "main" / "worker" (where the receiver lives), "qt" (the reference: the same with
// Qt::QueuedConnection and the receiver in the main thread).

#include "countedvalue.h"
#include "eventloopthread.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>

#include <cstdio>
#include <memory>
#include <thread>

class Producer : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void counted(const CountedValue &v);
};

int main(int argc, char **argv)
{
    const bool workerReceiver = argc > 1 && qstrcmp(argv[1], "worker") == 0;
    const bool qtReference = argc > 1 && qstrcmp(argv[1], "qt") == 0;
    std::atomic<int> calls { 0 };
    QSemaphore gate;
    EventLoopThread worker; // outlives the application: still running at shutdown
    auto receiver = std::make_unique<QObject>();
    Producer lateProducer; // emits once more after the application is gone
    {
        QCoreApplication app(argc, argv);
        Producer producer;
        if (workerReceiver) {
            worker.start();
            receiver->moveToThread(&worker);
            // The worker stays busy until the application is gone.
            QMetaObject::invokeMethod(receiver.get(), [&gate] { gate.acquire(); });
        }
        if (qtReference) {
            QObject::connect(
                    &producer, &Producer::counted, receiver.get(),
                    [&](const CountedValue &) { ++calls; }, Qt::QueuedConnection);
        } else {
            QtFastConnect::connect(&producer, &Producer::counted, receiver.get(),
                                   [&](const CountedValue &) { ++calls; });
        }
        QtFastConnect::connect(&lateProducer, &Producer::counted, receiver.get(),
                               [&](const CountedValue &) { ++calls; });
        // A std::thread: join() returns after the thread's thread_local destructors, which give
        // back the credits its lane reserved and did not use. QThread::wait() may return before
        // them (Qt marks the thread finished first), and pendingCalls() then still counted them
        // (10,048 under qemu-user).
        std::thread t([&] {
            for (int i = 0; i < 10000; ++i)
                Q_EMIT producer.counted(CountedValue(i));
        });
        t.join();
        // No event loop ran: everything emitted is still pending (Qt cannot be asked).
        std::printf("pending before shutdown: %lld\n",
                    qtReference
                            ? 10000LL - calls.load()
                            : static_cast<long long>(QFunnel::globalInstance()->pendingCalls()));
    } // ~QCoreApplication stops the global funnel
    std::printf("live arguments right after shutdown: %d\n", CountedValue::live.load());
    Q_EMIT lateProducer.counted(CountedValue(-1)); // dropped at once, counted
    gate.release();
    worker.quit();
    worker.wait();
    receiver.reset();
    std::printf("calls run: %d\nlive arguments: %d\ndropped: %llu\n", calls.load(),
                CountedValue::live.load(),
                static_cast<unsigned long long>(QFunnel::globalInstance()->droppedCalls()));
    return (calls.load() == 0 && CountedValue::live.load() == 0) ? 0 : 1;
}

#include "shutdown_helper.moc"
