// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "connectionchoice.h"
#include "hashworkers.h"
#include "monitorwindow.h"

#include <QtFastConnect/qfastconnect.h>

const QList<ConnectionChoiceInfo> &connectionChoices()
{
    static const QList<ConnectionChoiceInfo> choices = {
        { ConnectionChoice::Queued, QStringLiteral("queued"),
          QStringLiteral("Qt::QueuedConnection"), false },
        { ConnectionChoice::Funnel, QStringLiteral("funnel"),
          QStringLiteral("Funnel (QtFastConnect::connect)"), true },
        { ConnectionChoice::FunnelCoalesce, QStringLiteral("coalesce"),
          QStringLiteral("Funnel, progress with CoalesceCalls"), true },
        { ConnectionChoice::FunnelRateLimit, QStringLiteral("ratelimit"),
          QStringLiteral("Funnel, progress rate-limited to 60 Hz"), true },
    };
    return choices;
}

const ConnectionChoiceInfo &connectionChoiceInfo(ConnectionChoice choice)
{
    for (const ConnectionChoiceInfo &info : connectionChoices()) {
        if (info.choice == choice)
            return info;
    }
    Q_UNREACHABLE();
    return connectionChoices().constFirst();
}

std::optional<ConnectionChoice> connectionChoiceFromName(const QString &name)
{
    for (const ConnectionChoiceInfo &info : connectionChoices()) {
        if (info.name == name)
            return info.choice;
    }
    return std::nullopt;
}

QList<QMetaObject::Connection> connectReporter(ConnectionChoice choice, HashReporter *reporter,
                                               MonitorWindow *window)
{
    switch (choice) {
    case ConnectionChoice::Queued:
        return { QObject::connect(reporter, &HashReporter::blockHashed, window,
                                  &MonitorWindow::addResult, Qt::QueuedConnection),
                 QObject::connect(reporter, &HashReporter::progress, window,
                                  &MonitorWindow::setProgress, Qt::QueuedConnection) };
    case ConnectionChoice::Funnel:
        return { QtFastConnect::connect(reporter, &HashReporter::blockHashed, window,
                                        &MonitorWindow::addResult),
                 QtFastConnect::connect(reporter, &HashReporter::progress, window,
                                        &MonitorWindow::setProgress) };
    case ConnectionChoice::FunnelCoalesce:
        // Only the newest progress value matters; every result still arrives.
        return { QtFastConnect::connect(reporter, &HashReporter::blockHashed, window,
                                        &MonitorWindow::addResult),
                 QtFastConnect::connect(reporter, &HashReporter::progress, window,
                                        &MonitorWindow::setProgress,
                                        QtFastConnect::CoalesceCalls) };
    case ConnectionChoice::FunnelRateLimit:
        // The newest progress value, at most once per frame (16 ms); every result arrives.
        return { QtFastConnect::connect(reporter, &HashReporter::blockHashed, window,
                                        &MonitorWindow::addResult),
                 QtFastConnect::connect(reporter, &HashReporter::progress, window,
                                        &MonitorWindow::setProgress,
                                        QtFastConnect::RateLimitCalls) };
    }
    Q_UNREACHABLE();
    return {};
}
