// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef CHILDPROCESS_H
#define CHILDPROCESS_H

#include <QtCore/qprocess.h>
#include <QtTest/qtest.h>

// Waits until process, just start()ed, runs. Under an emulator that cannot start one (the CI
// stages for other CPUs set QFC_EMULATOR: qemu-user 7.2 refuses the clone() flags Qt's
// QProcess uses, "Resource error (fork failure): Invalid argument"; without a binfmt_misc
// handler for the CPU the child's exec fails), the test skips, saying so; anywhere else a
// child that does not start fails it.
#define QFC_WAIT_FOR_CHILD_START(process)                                                          \
    do {                                                                                           \
        if (!(process).waitForStarted(30000)) {                                                    \
            const QByteArray why = (process).errorString().toUtf8();                               \
            if (qEnvironmentVariableIsSet("QFC_EMULATOR"))                                         \
                QSKIP(QByteArray(qgetenv("QFC_EMULATOR")                                           \
                                 + " cannot start child processes: " + why)                        \
                              .constData());                                                       \
            QFAIL(why.constData());                                                                \
        }                                                                                          \
    } while (false)

#endif // CHILDPROCESS_H
