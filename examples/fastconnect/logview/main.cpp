// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// logview: worker threads append log rows, as fast as they can, to a model shown in a
// QListView; a switch picks how the rows cross threads. See logwindow.h.

#include "logwindow.h"

#include <QtCore/qcommandlineparser.h>
#include <QtCore/qtimer.h>
#include <QtWidgets/qapplication.h>

#include <cstdio>

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
            "Worker threads append rows to a 100,000-row QListView. Runs headless with "
            "QT_QPA_PLATFORM=offscreen; with --seconds it quits by itself and prints "
            "\"rows N order-errors M\" (rows out of their worker's order)."));
    parser.addHelpOption();
    const QCommandLineOption feedOption(QStringLiteral("feed"),
                                        QStringLiteral("queued, funnel or batched (default)."),
                                        QStringLiteral("feed"), QStringLiteral("batched"));
    const QCommandLineOption workersOption(QStringLiteral("workers"),
                                           QStringLiteral("Worker threads (default 4)."),
                                           QStringLiteral("n"), QStringLiteral("4"));
    const QCommandLineOption secondsOption(
            QStringLiteral("seconds"),
            QStringLiteral("Quit after this many seconds (default: run until closed)."),
            QStringLiteral("s"));
    const QCommandLineOption screenshotOption(
            QStringLiteral("screenshot"),
            QStringLiteral("With --seconds: save a picture of the window before quitting."),
            QStringLiteral("file.png"));
    parser.addOptions({ feedOption, workersOption, secondsOption, screenshotOption });
    parser.process(app);

    const QString feedName = parser.value(feedOption);
    const LogFeed feed = feedName == QLatin1String("queued") ? LogFeed::Queued
            : feedName == QLatin1String("funnel")            ? LogFeed::Funnel
                                                             : LogFeed::Batched;
    if (feedName != QLatin1String("queued") && feedName != QLatin1String("funnel")
        && feedName != QLatin1String("batched")) {
        std::fprintf(stderr, "logview: --feed takes queued, funnel or batched\n");
        return 2;
    }
    bool ok = false;
    const int workers = parser.value(workersOption).toInt(&ok);
    if (!ok || workers < 1 || workers > 64) {
        std::fprintf(stderr, "logview: --workers takes 1 to 64\n");
        return 2;
    }
    double seconds = 0;
    if (parser.isSet(secondsOption)) {
        seconds = parser.value(secondsOption).toDouble(&ok);
        if (!ok || seconds <= 0) {
            std::fprintf(stderr, "logview: --seconds takes a positive number\n");
            return 2;
        }
    }

    LogWindow window(workers, feed);
    window.show();
    int status = 0;
    if (seconds > 0) {
        QTimer::singleShot(qRound(seconds * 1000), &window, [&] {
            if (parser.isSet(screenshotOption)
                && !window.grab().save(parser.value(screenshotOption))) {
                std::fprintf(stderr, "logview: cannot save %s\n",
                             qPrintable(parser.value(screenshotOption)));
                status = 1;
            }
            std::printf("rows %llu order-errors %llu\n",
                        static_cast<unsigned long long>(window.rowsAdded()),
                        static_cast<unsigned long long>(window.orderErrors()));
            app.quit();
        });
    }
    const int code = app.exec();
    return status ? status : code;
}
