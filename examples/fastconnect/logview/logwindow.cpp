// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "logwindow.h"

#include <QtFastConnect/qfunnel.h>
#include <QtCore/qfile.h>
#include <QtWidgets/qboxlayout.h>
#include <QtWidgets/qcombobox.h>
#include <QtWidgets/qlabel.h>

#include <algorithm>

namespace {

struct FeedInfo
{
    LogFeed feed;
    const char *label;
};
const FeedInfo Feeds[] = {
    { LogFeed::Queued, "Qt::QueuedConnection, a signal per row" },
    { LogFeed::Funnel, "QtFastConnect::connect(), a signal per row" },
    { LogFeed::Batched, "QtFastConnect::connectBatched(), one insert per batch" },
};

// Resident memory in MiB (Linux; 0 elsewhere).
double residentMiB()
{
    QFile statm(QStringLiteral("/proc/self/statm"));
    if (!statm.open(QIODevice::ReadOnly))
        return 0;
    const QList<QByteArray> fields = statm.readAll().split(' ');
    return fields.size() > 1 ? fields.at(1).toDouble() * 4096 / (1 << 20) : 0;
}

} // namespace

LogWindow::LogWindow(int workers, LogFeed feed)
    : m_model(workers), m_workers(workers), m_feed(feed), m_switch(new QComboBox),
      m_stats(new QLabel)
{
    setWindowTitle(QStringLiteral("logview: rows from %1 workers").arg(workers));
    for (const FeedInfo &f : Feeds)
        m_switch->addItem(QString::fromLatin1(f.label));
    m_switch->setCurrentIndex(int(feed));
    connect(m_switch, &QComboBox::currentIndexChanged, this,
            [this](int index) { setFeed(LogFeed(index)); });
    m_stats->setTextFormat(Qt::RichText);
    m_view.setModel(&m_model);
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_switch);
    layout->addWidget(m_stats);
    layout->addWidget(&m_view);
    resize(560, 640);

    m_clock.start();
    m_frameTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_frameTimer, &QTimer::timeout, this, &LogWindow::tick);
    m_frameTimer.start(16);
    connect(&m_reportTimer, &QTimer::timeout, this, &LogWindow::report);
    m_reportTimer.start(1000);
    m_workers.connectTo(&m_model, feed);
    m_workers.start();
}

LogWindow::~LogWindow()
{
    m_reportTimer.stop();
    m_workers.stop(); // while the model can still take their last rows
    m_view.setModel(nullptr);
}

void LogWindow::setFeed(LogFeed feed)
{
    m_feed = feed;
    m_workers.connectTo(&m_model, feed);
}

void LogWindow::tick()
{
    const qint64 now = m_clock.nsecsElapsed();
    if (m_lastTickNs)
        m_lateMs.push_back(std::max(0.0, double(now - m_lastTickNs) / 1e6 - 16));
    m_lastTickNs = now;
}

void LogWindow::report()
{
    const qint64 now = m_clock.nsecsElapsed();
    const double seconds = double(now - m_reportAtNs) / 1e9;
    const quint64 rows = m_model.rowsAdded();
    const quint64 layouts = m_view.layouts.load(std::memory_order_relaxed);
    // A frozen window runs this late: the time since the last tick counts as lateness too.
    m_lateMs.push_back(std::max(0.0, double(now - m_lastTickNs) / 1e6 - 16));
    std::sort(m_lateMs.begin(), m_lateMs.end());
    const double worst = m_lateMs.back();
    const double emitted = double(m_workers.emitted());
    const double pending = m_feed == LogFeed::Queued
            ? std::max(0.0, emitted - double(rows))
            : double(QFunnel::globalInstance()->pendingCalls());
    m_stats->setText(
            QStringLiteral("<b>%1</b> rows/s &nbsp; %2 relayouts/s &nbsp; a 16 ms timer up to "
                           "<b>%3 ms</b> late<br>%4 rows pending &nbsp; %5 MiB resident")
                    .arg(QLocale().toString(double(rows - m_rowsAtReport) / seconds, 'f', 0))
                    .arg(double(layouts - m_layoutsAtReport) / seconds, 0, 'f', 0)
                    .arg(worst, 0, 'f', 1)
                    .arg(QLocale().toString(pending, 'f', 0))
                    .arg(residentMiB(), 0, 'f', 0));
    m_lateMs.clear();
    m_rowsAtReport = rows;
    m_layoutsAtReport = layouts;
    m_reportAtNs = now;
}
