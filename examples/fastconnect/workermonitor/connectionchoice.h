// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef CONNECTIONCHOICE_H
#define CONNECTIONCHOICE_H

#include <QtCore/qlist.h>
#include <QtCore/qobject.h>
#include <QtCore/qstring.h>

#include <optional>

class HashReporter;
class MonitorWindow;

// How the workers' signals reach the window. Adding a choice takes an enumerator, a row in
// connectionChoices() and a case in connectReporter().
enum class ConnectionChoice {
    Queued, // Qt::QueuedConnection, both signals
    Funnel, // QtFastConnect::connect(), both signals
    FunnelCoalesce, // the funnel; the progress signal with QtFastConnect::CoalesceCalls
    FunnelRateLimit, // the funnel; the progress signal with QtFastConnect::RateLimitCalls
};

struct ConnectionChoiceInfo
{
    ConnectionChoice choice;
    QString name; // the --connection value
    QString label; // what the window's switch shows
    bool funnel; // pending calls come from QFunnel::statistics()
};

const QList<ConnectionChoiceInfo> &connectionChoices();
const ConnectionChoiceInfo &connectionChoiceInfo(ConnectionChoice choice);
std::optional<ConnectionChoice> connectionChoiceFromName(const QString &name);

// Connects one worker's reporter to the window; returns every connection made, for the switch
// to cut them again.
QList<QMetaObject::Connection> connectReporter(ConnectionChoice choice, HashReporter *reporter,
                                               MonitorWindow *window);

#endif // CONNECTIONCHOICE_H
