// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef MONITORWINDOW_H
#define MONITORWINDOW_H

#include "connectionchoice.h"

#include <QtCore/qelapsedtimer.h>
#include <QtCore/qtimer.h>
#include <QtWidgets/qwidget.h>

class ChartWidget;
class HashWorkers;
class QComboBox;
class QLabel;
class QProgressBar;

// The GUI thread's view of the workers: receives every result and the progress, and shows
// results/s, calls pending, the frame interval and resident memory, live and as a chart.
class MonitorWindow : public QWidget
{
    Q_OBJECT
public:
    MonitorWindow(HashWorkers *workers, const QString &inputDescription, ConnectionChoice choice,
                  QWidget *parent = nullptr);

    ConnectionChoice connectionChoice() const { return m_choice; }
    void setConnectionChoice(ConnectionChoice choice);

    quint64 resultsDelivered() const { return m_results; }
    qint64 framesPainted() const;

    // The receiving slots: the GUI thread, once per emission (or per coalesced progress).
    void addResult(quint64 hash);
    void setProgress(int permille);

private:
    struct Tile
    {
        QLabel *value;
        QLabel *detail;
    };
    Tile addTile(class QGridLayout *grid, int column, const QString &title, const QColor &color);
    void sample();

    HashWorkers *m_workers;
    ConnectionChoice m_choice;
    QList<QMetaObject::Connection> m_connections;

    ChartWidget *m_chart;
    QComboBox *m_switch;
    QProgressBar *m_progress;
    QLabel *m_progressRate;
    Tile m_rateTile;
    Tile m_pendingTile;
    Tile m_frameTile;
    Tile m_memoryTile;

    QTimer m_frameTimer; // update() every 16 ms: the frames whose interval is measured
    QTimer m_sampleTimer;
    QElapsedTimer m_clock;
    double m_lastSampleT = 0;

    quint64 m_results = 0;
    quint64 m_checksum = 0; // XOR of every hash: real use of each result
    quint64 m_progressCalls = 0;
    quint64 m_lastResults = 0;
    quint64 m_lastProgressCalls = 0;
};

#endif // MONITORWINDOW_H
