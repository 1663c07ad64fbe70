// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// The logview demo, offscreen, for 2 s with each feed: rows must arrive in every worker's order,
// the process must exit 0, and quitting while the workers flood must not leave them waiting
// for a GUI thread that no longer runs its events (the funnel would warn of a stalled receiver).

#include <QtCore/qprocess.h>
#include <QtCore/qregularexpression.h>
#include <QtTest/qtest.h>

class tst_LogView : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void runsOffscreen_data();
    void runsOffscreen();
    void rejectsUnknownFeed();
};

void tst_LogView::runsOffscreen_data()
{
    QTest::addColumn<QString>("feed");
    QTest::newRow("queued") << QStringLiteral("queued");
    QTest::newRow("funnel") << QStringLiteral("funnel");
    QTest::newRow("batched") << QStringLiteral("batched");
}

void tst_LogView::runsOffscreen()
{
    QFETCH(QString, feed);
    QProcess demo;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    demo.setProcessEnvironment(env);
    demo.start(QStringLiteral(DEMO_PATH),
               { QStringLiteral("--feed"), feed, QStringLiteral("--seconds"), QStringLiteral("2"),
                 QStringLiteral("--workers"), QStringLiteral("2") });
    QVERIFY2(demo.waitForFinished(120000), "the demo did not quit");
    QCOMPARE(demo.exitStatus(), QProcess::NormalExit);
    QCOMPARE(demo.exitCode(), 0);
    const QByteArray errors = demo.readAllStandardError();
    QVERIFY2(!errors.contains("QFunnel:") && !errors.contains("QtFastConnect:"),
             errors.constData());
    const QString last = QString::fromUtf8(demo.readAllStandardOutput()).trimmed();
    const QRegularExpressionMatch m =
            QRegularExpression(QStringLiteral("^rows (\\d+) order-errors (\\d+)$")).match(last);
    QVERIFY2(m.hasMatch(), qPrintable(last));
    qInfo("%s: %s rows in 2 s", qPrintable(feed), qPrintable(m.captured(1)));
    QVERIFY(m.captured(1).toLongLong() > 0);
    QCOMPARE(m.captured(2).toLongLong(), 0);
}

void tst_LogView::rejectsUnknownFeed()
{
    QProcess demo;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    demo.setProcessEnvironment(env);
    demo.start(QStringLiteral(DEMO_PATH), { QStringLiteral("--feed"), QStringLiteral("fast") });
    QVERIFY(demo.waitForFinished(60000));
    QCOMPARE(demo.exitStatus(), QProcess::NormalExit);
    QCOMPARE(demo.exitCode(), 2);
    QVERIFY(demo.readAllStandardError().contains("--feed takes queued, funnel or batched"));
}

QTEST_GUILESS_MAIN(tst_LogView)
#include "tst_logview.moc"
