// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// tst_startexit's scenarios, each in a process of its own:
//   load  loads a library whose static initialiser makes funnels, then uses them
//   exit  floods a receiver of this thread through a funnel never stopped, and exits with the
//         calls still on their way (std::exit(): on Windows, ExitProcess() ends the relay
//         before this thread's exit callbacks run)

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qlibrary.h>

#include <cstdio>
#include <cstdlib>

class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(int v);
};

class Receiver : public QObject
{
    Q_OBJECT
public:
    int calls = 0;
    void onValue(int) { ++calls; }
};

static int load()
{
    QLibrary library(QStringLiteral(LIBRARY_PATH));
    // Never unloaded (Qt 6.8 unloads libraries at exit): its funnel stays referenced, not
    // leaked.
    library.setLoadHints(QLibrary::PreventUnloadHint);
    if (!library.load()) {
        std::printf("load failed: %s\n", qPrintable(library.errorString()));
        return 2;
    }
    auto made = reinterpret_cast<int (*)()>(library.resolve("qfcFunnelsMadeAtLoad"));
    std::printf("funnels made at load: %d\n", made ? made() : -1);
    // The funnels made there deliver.
    Sender s;
    Receiver r;
    if (!QtFastConnect::connect(&s, &Sender::value, &r, &Receiver::onValue))
        return 3;
    for (int i = 0; i < 1000; ++i)
        Q_EMIT s.value(i);
    QtFastConnect::flush();
    QCoreApplication::processEvents();
    std::printf("calls run: %d\n", r.calls);
    std::fflush(stdout);
    return 0;
}

[[noreturn]] static void exitWithCallsOnTheirWay()
{
    auto *funnel = new QFunnel; // never stopped, never destroyed
    auto *s = new Sender;
    auto *r = new Receiver;
    if (!QtFastConnect::connect(funnel, s, &Sender::value, r, &Receiver::onValue))
        std::exit(3);
    // More than one batch: this thread's lane holds calls the relay has not routed yet.
    for (int i = 0; i < 100000; ++i)
        Q_EMIT s->value(i);
    std::printf("pending at exit: %lld\n", static_cast<long long>(funnel->pendingCalls()));
    std::fflush(stdout);
    std::exit(0);
}

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QByteArray mode = argc > 1 ? argv[1] : "";
    if (mode == "load")
        return load();
    if (mode == "exit")
        exitWithCallsOnTheirWay();
    std::printf("usage: %s load|exit\n", argv[0]);
    return 2;
}

#include "startexit_helper.moc"
