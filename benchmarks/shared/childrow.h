// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef CHILDROW_H
#define CHILDROW_H

// The experiments that run each row in a process of their own (so that its peak RSS is its
// own): the parent, a QTest object, starts this binary again with an environment variable that
// describes the row, "field,field,...". rowMain() is such a binary's main().

#include <QtCore/qbytearray.h>
#include <QtCore/qlist.h>
#include <QtTest/qtest.h>
#include <QtWidgets/qapplication.h>

#include <cstdio>
#include <optional>

// In a child (variable set): runs row(fields) under a QApplication, offscreen unless
// QT_QPA_PLATFORM says otherwise, and prints the line it returns (nullopt: bad fields, exit
// code 2). In the parent: runs TestCase under a QCoreApplication (it only starts processes and
// prints).
template<typename TestCase, typename Row>
int rowMain(int argc, char **argv, const char *variable, Row row)
{
    if (qEnvironmentVariableIsSet(variable)) {
        if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        QApplication app(argc, argv);
        const std::optional<QByteArray> line = row(qgetenv(variable).split(','));
        if (!line) {
            std::fprintf(stderr, "bad %s\n", variable);
            return 2;
        }
        std::printf("%s\n", line->constData());
        return 0;
    }
    QCoreApplication app(argc, argv);
    TestCase tc;
    return QTest::qExec(&tc, argc, argv);
}

#endif // CHILDROW_H
