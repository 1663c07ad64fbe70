// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef LOGWINDOW_H
#define LOGWINDOW_H

#include "logmodel.h"
#include "logworkers.h"

#include <QtCore/qelapsedtimer.h>
#include <QtCore/qtimer.h>
#include <QtWidgets/qwidget.h>

#include <memory>
#include <vector>

class QComboBox;
class QLabel;

// A log view fed by worker threads: the rows go into a LogModel shown in a QListView, through
// the feed the switch selects. Above the view: rows per second, the view's relayouts per
// second, how late a 16 ms timer fires (the frame a GUI would miss), the rows pending and the
// resident memory, each over the last second.
class LogWindow : public QWidget
{
    Q_OBJECT
public:
    LogWindow(int workers, LogFeed feed);
    ~LogWindow() override;

    void setFeed(LogFeed feed);
    quint64 rowsAdded() const { return m_model.rowsAdded(); }
    quint64 orderErrors() const { return m_model.orderErrors(); }

private:
    void tick();
    void report();

    LogModel m_model;
    CountingListView m_view;
    LogWorkers m_workers;
    LogFeed m_feed;
    QComboBox *m_switch;
    QLabel *m_stats;
    QTimer m_frameTimer; // 16 ms, its lateness measured
    QTimer m_reportTimer;
    QElapsedTimer m_clock;
    qint64 m_lastTickNs = 0;
    std::vector<double> m_lateMs; // since the last report
    quint64 m_rowsAtReport = 0;
    quint64 m_layoutsAtReport = 0;
    qint64 m_reportAtNs = 0;
};

#endif // LOGWINDOW_H
