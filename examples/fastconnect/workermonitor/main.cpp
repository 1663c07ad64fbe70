// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// workermonitor: worker threads hash the installed Qt libraries and send every block's hash,
// and their progress, to a window that shows live what the connection does to the GUI thread:
// results per second, calls pending, the frame interval and resident memory. Switch between
// Qt::QueuedConnection and the funnel while it runs, or pick one with --connection.

#include "connectionchoice.h"
#include "hashworkers.h"
#include "inputblocks.h"
#include "monitorwindow.h"

#include <QtCore/qcommandlineparser.h>
#include <QtCore/qtimer.h>
#include <QtGui/qpixmap.h>
#include <QtWidgets/qapplication.h>

#include <cstdio>

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("workermonitor"));

    QStringList names;
    for (const ConnectionChoiceInfo &info : connectionChoices())
        names.append(info.name);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
            "Worker threads hash the installed Qt libraries in 4 KiB blocks and deliver every "
            "hash to this window, which shows results/s, calls pending, the frame interval and "
            "resident memory. Runs headless with QT_QPA_PLATFORM=offscreen. With --seconds it "
            "quits by itself and prints \"results N frames M\" as its last line; the exit code "
            "is 1 if no result arrived."));
    parser.addHelpOption();
    const QCommandLineOption connectionOption(QStringLiteral("connection"),
                                              QStringLiteral("How results reach the window: %1.")
                                                      .arg(names.join(QStringLiteral(", "))),
                                              QStringLiteral("choice"), QStringLiteral("funnel"));
    const QCommandLineOption workersOption(QStringLiteral("workers"),
                                           QStringLiteral("Worker threads (default 4)."),
                                           QStringLiteral("N"), QStringLiteral("4"));
    const QCommandLineOption secondsOption(
            QStringLiteral("seconds"),
            QStringLiteral("Quit after this many seconds (default: run until closed)."),
            QStringLiteral("N"));
    const QCommandLineOption screenshotOption(
            QStringLiteral("screenshot"),
            QStringLiteral("With --seconds: save a picture of the window before quitting."),
            QStringLiteral("file.png"));
    parser.addOptions({ connectionOption, workersOption, secondsOption, screenshotOption });
    parser.process(app);

    const auto choice = connectionChoiceFromName(parser.value(connectionOption));
    bool ok = false;
    const int workerCount = parser.value(workersOption).toInt(&ok);
    if (!choice || !ok || workerCount < 1 || workerCount > 256) {
        std::fprintf(stderr, "workermonitor: --connection takes %s; --workers 1 to 256\n",
                     qPrintable(names.join(QStringLiteral(", "))));
        return 2;
    }
    double seconds = 0;
    if (parser.isSet(secondsOption)) {
        seconds = parser.value(secondsOption).toDouble(&ok);
        if (!ok || seconds <= 0) {
            std::fprintf(stderr, "workermonitor: --seconds takes a positive number\n");
            return 2;
        }
    }

    InputBlocks input;
    QString error;
    if (!input.loadQtLibraries(&error)) {
        std::fprintf(stderr, "workermonitor: %s\n", qPrintable(error));
        return 2;
    }
    const QString inputDescription =
            QStringLiteral("%1 Qt libraries (%2 MiB)")
                    .arg(input.fileCount())
                    .arg(double(input.totalBytes()) / (1 << 20), 0, 'f', 0);

    HashWorkers workers(input, workerCount);
    MonitorWindow window(&workers, inputDescription, *choice);
    window.resize(900, 600);
    window.show();
    workers.start();

    if (seconds > 0) {
        QTimer::singleShot(qRound(seconds * 1000), &window, [&] {
            int status = window.resultsDelivered() > 0 ? 0 : 1;
            if (parser.isSet(screenshotOption)
                && !window.grab().save(parser.value(screenshotOption))) {
                std::fprintf(stderr, "workermonitor: cannot write %s\n",
                             qPrintable(parser.value(screenshotOption)));
                status = 3;
            }
            workers.stop();
            std::printf("results %llu frames %lld\n",
                        static_cast<unsigned long long>(window.resultsDelivered()),
                        static_cast<long long>(window.framesPainted()));
            std::fflush(stdout);
            QCoreApplication::exit(status);
        });
    }
    const int status = app.exec();
    workers.stop(); // before the window goes: producers may wait for it to make room
    return status;
}
