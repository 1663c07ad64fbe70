// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Funnels at a process's edges, where Windows holds locks that forbid waiting for a thread
// (tst_startexit_helper runs each scenario in a process of its own):
//  - made in a library's static initialiser, under the loader lock: a thread cannot start
//    there, so the funnel must not wait for its relay thread to;
//  - a funnel never stopped when the process exits with calls on their way: ExitProcess() has
//    ended the relay before the exiting thread's exit callbacks run, so they must not wait for
//    it.
// Each hang shows as a helper that does not finish.

#include "childprocess.h"

#include <QtCore/qprocess.h>
#include <QtTest/qtest.h>

class tst_StartExit : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void funnelsMadeInALibrarysStaticInitialiser();
    void exitWithAFunnelNeverStopped();
};

// The helper's output; false if it did not finish within a minute (then it is killed).
static bool waitForHelper(QProcess &helper, QByteArray *out)
{
    const bool finished = helper.waitForFinished(60000);
    // Its errors too (a sanitizer's report).
    *out = helper.readAllStandardOutput() + helper.readAllStandardError();
    if (!finished)
        helper.kill();
    return finished;
}

void tst_StartExit::funnelsMadeInALibrarysStaticInitialiser()
{
    QProcess helper;
    helper.start(QStringLiteral(HELPER_PATH), { QStringLiteral("load") });
    QFC_WAIT_FOR_CHILD_START(helper);
    QByteArray out;
    QVERIFY2(waitForHelper(helper, &out), "the helper hung loading the library: " + out);
    QVERIFY2(out.contains("funnels made at load: 2"), out.constData());
    QVERIFY2(out.contains("calls run: 1000"), out.constData());
    QVERIFY2(helper.exitCode() == 0, out.constData());
}

void tst_StartExit::exitWithAFunnelNeverStopped()
{
    QProcess helper;
    helper.start(QStringLiteral(HELPER_PATH), { QStringLiteral("exit") });
    QFC_WAIT_FOR_CHILD_START(helper);
    QByteArray out;
    QVERIFY2(waitForHelper(helper, &out), "the helper hung at exit: " + out);
    QVERIFY2(out.contains("pending at exit: "), out.constData());
    QVERIFY2(!out.contains("pending at exit: 0\n"), "nothing was on its way: " + out);
    QVERIFY2(helper.exitCode() == 0, out.constData());
}

QTEST_GUILESS_MAIN(tst_StartExit)
#include "tst_startexit.moc"
