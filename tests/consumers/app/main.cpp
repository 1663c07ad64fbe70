// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// An application outside the module's build, linked against an installed QtFastConnect: a
// worker thread emits one signal through a funnel connection and the main thread's slot must
// receive it. Exit code 0 on delivery, 1 on a failed connect, a wrong value or a timeout.

#include <QtFastConnect/QFunnel>
#include <QtFastConnect/QtFastConnect>

#include <QtCore/qcoreapplication.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>

#include <cstdio>

class Producer : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void produced(int value);
};

class Consumer : public QObject
{
    Q_OBJECT
public Q_SLOTS:
    void consume(int value)
    {
        const bool ok = value == 42 && QThread::currentThread() == thread();
        std::printf("consumer: received %d in the %s thread\n", value,
                    QThread::currentThread() == thread() ? "receiver's" : "wrong");
        QCoreApplication::exit(ok ? 0 : 1);
    }
};

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    Producer producer;
    Consumer consumer;
    if (!QtFastConnect::connect(&producer, &Producer::produced, &consumer, &Consumer::consume)) {
        std::printf("consumer: QtFastConnect::connect failed\n");
        return 1;
    }

    QThread *worker = QThread::create([&producer] { Q_EMIT producer.produced(42); });
    worker->start();
    // Generous: the call normally arrives within milliseconds, even on a loaded machine.
    QTimer::singleShot(30000, &app, [] {
        std::printf("consumer: nothing delivered within 30 s\n");
        QCoreApplication::exit(1);
    });
    const int code = app.exec();
    worker->wait();
    delete worker;
    return code;
}

#include "main.moc"
