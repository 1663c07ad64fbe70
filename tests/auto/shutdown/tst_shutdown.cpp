// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "childprocess.h"

#include <QtCore/qprocess.h>
#include <QtTest/qtest.h>

class tst_Shutdown : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void pendingCallsAtShutdown_data();
    void pendingCallsAtShutdown();
};

void tst_Shutdown::pendingCallsAtShutdown_data()
{
    QTest::addColumn<QString>("receiver");
    QTest::newRow("receiver in main thread") << QStringLiteral("main");
    QTest::newRow("receiver in a busy worker thread") << QStringLiteral("worker");
    // The reference (conformance scenario 29): Qt::QueuedConnection, receiver in main thread.
    QTest::newRow("Qt::QueuedConnection, receiver in main thread") << QStringLiteral("qt");
}

// Calls pending when ~QCoreApplication runs are never run, their arguments are destroyed, the
// relay thread is joined, and the process exits promptly; a later emission is dropped, counted.
void tst_Shutdown::pendingCallsAtShutdown()
{
    QFETCH(QString, receiver);
    QProcess helper;
    helper.start(QStringLiteral(HELPER_PATH), { receiver });
    QFC_WAIT_FOR_CHILD_START(helper);
    QVERIFY2(helper.waitForFinished(30000), "the helper hung at shutdown");
    const QByteArray out = helper.readAllStandardOutput();
    QVERIFY2(helper.exitStatus() == QProcess::NormalExit, out.constData());
    QVERIFY2(out.contains("pending before shutdown: 10000"), out.constData());
    QVERIFY2(out.contains("live arguments right after shutdown: 0"), out.constData());
    QVERIFY2(out.contains("calls run: 0"), out.constData());
    QVERIFY2(out.contains("live arguments: 0"), out.constData());
    // The 10,000 pending calls, and one emission after the application was gone.
    if (receiver != QLatin1String("qt"))
        QVERIFY2(out.contains("dropped: 10001"), out.constData());
    QCOMPARE(helper.exitCode(), 0);
}

QTEST_MAIN(tst_Shutdown)
#include "tst_shutdown.moc"
