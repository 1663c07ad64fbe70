// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "monitorwindow.h"
#include "chartwidget.h"
#include "hashworkers.h"

#include <QtFastConnect/qfunnel.h>
#include <QtCore/qfile.h>
#include <QtCore/qlocale.h>
#include <QtWidgets/qboxlayout.h>
#include <QtWidgets/qcombobox.h>
#include <QtWidgets/qframe.h>
#include <QtWidgets/qgridlayout.h>
#include <QtWidgets/qlabel.h>
#include <QtWidgets/qprogressbar.h>

#include <algorithm>
#include <unistd.h>

namespace {

constexpr int FrameIntervalMs = 16;
constexpr int SampleIntervalMs = 250;
constexpr double ChartSeconds = 30;

const QColor RateColor(0x1f, 0x77, 0xb4);
const QColor PendingColor(0xd6, 0x62, 0x0a);
const QColor FrameColor(0x2c, 0x9a, 0x3c);
const QColor MemoryColor(0x8e, 0x44, 0xad);

// Resident set size in MiB: the second field of /proc/self/statm, in pages.
double residentMiB()
{
    QFile statm(QStringLiteral("/proc/self/statm"));
    if (!statm.open(QIODevice::ReadOnly))
        return 0;
    const QList<QByteArray> fields = statm.readAll().split(' ');
    return fields.size() > 1 ? fields.at(1).toDouble() * double(sysconf(_SC_PAGESIZE)) / (1 << 20)
                             : 0;
}

QString count(double v)
{
    const QLocale c(QLocale::English);
    if (v >= 1e6)
        return c.toString(v / 1e6, 'f', 2) + QStringLiteral(" M");
    if (v >= 1e4)
        return c.toString(v / 1e3, 'f', 0) + QStringLiteral(" k");
    return c.toString(qint64(v));
}

QString ms(double v)
{
    return QLocale(QLocale::English).toString(v, 'f', v < 100 ? 1 : 0) + QStringLiteral(" ms");
}

QString mib(double v)
{
    return QLocale(QLocale::English).toString(v, 'f', 0) + QStringLiteral(" MiB");
}

} // namespace

MonitorWindow::MonitorWindow(HashWorkers *workers, const QString &inputDescription,
                             ConnectionChoice choice, QWidget *parent)
    : QWidget(parent), m_workers(workers), m_choice(choice)
{
    setWindowTitle(tr("Worker monitor — QtFastConnect"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(14, 12, 14, 12);
    layout->setSpacing(10);

    // Header: what runs, and the switch.
    auto *header = new QHBoxLayout;
    auto *title = new QLabel(tr("<b>%1 workers</b> hash %2 in 4 KiB blocks (FNV-1a);<br>every "
                                "hash is sent to this window.")
                                     .arg(workers->count())
                                     .arg(inputDescription));
    header->addWidget(title, 1);
    header->addWidget(new QLabel(tr("Connection:")));
    m_switch = new QComboBox;
    for (const ConnectionChoiceInfo &info : connectionChoices())
        m_switch->addItem(info.label, QVariant::fromValue(int(info.choice)));
    header->addWidget(m_switch);
    layout->addLayout(header);

    // The live figures, one tile each, coloured like their band in the chart.
    auto *tiles = new QGridLayout;
    tiles->setHorizontalSpacing(10);
    m_rateTile = addTile(tiles, 0, tr("Results per second"), RateColor);
    m_pendingTile = addTile(tiles, 1, tr("Calls pending"), PendingColor);
    m_frameTile =
            addTile(tiles, 2, tr("Frame interval (timer: %1 ms)").arg(FrameIntervalMs), FrameColor);
    m_memoryTile = addTile(tiles, 3, tr("Resident memory"), MemoryColor);
    layout->addLayout(tiles);

    auto *progressRow = new QHBoxLayout;
    progressRow->addWidget(new QLabel(tr("Pass over the input:")));
    m_progress = new QProgressBar;
    m_progress->setRange(0, 1000);
    m_progress->setFormat(QStringLiteral("%p%"));
    progressRow->addWidget(m_progress, 1);
    m_progressRate = new QLabel;
    m_progressRate->setMinimumWidth(230);
    progressRow->addWidget(m_progressRate);
    layout->addLayout(progressRow);

    m_chart = new ChartWidget;
    m_chart->setSpan(ChartSeconds);
    m_chart->addSeries({ tr("Results per second"), RateColor, count, -1, 1000 });
    m_chart->addSeries({ tr("Calls pending"), PendingColor, count, -1, 100 });
    m_chart->addSeries(
            { tr("Frame interval, worst per ¼ s"), FrameColor, ms, FrameIntervalMs * 1.0, 20 });
    m_chart->addSeries({ tr("Resident memory"), MemoryColor, mib, -1, 50 });
    layout->addWidget(m_chart, 1);

    connect(m_switch, &QComboBox::currentIndexChanged, this, [this](int index) {
        setConnectionChoice(ConnectionChoice(m_switch->itemData(index).toInt()));
    });
    m_switch->setCurrentIndex(m_switch->findData(int(choice)));
    setConnectionChoice(choice);

    // Precise: the frame interval is what is measured, so the timer must not add its own slack.
    m_frameTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_frameTimer, &QTimer::timeout, m_chart, qOverload<>(&QWidget::update));
    m_frameTimer.start(FrameIntervalMs);
    connect(&m_sampleTimer, &QTimer::timeout, this, &MonitorWindow::sample);
    m_sampleTimer.start(SampleIntervalMs);
    m_clock.start();
    sample();
}

MonitorWindow::Tile MonitorWindow::addTile(QGridLayout *grid, int column, const QString &title,
                                           const QColor &color)
{
    auto *frame = new QFrame;
    // Ignored: the four tiles share the width equally, whatever their text.
    frame->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    frame->setMinimumWidth(150);
    frame->setFrameShape(QFrame::StyledPanel);
    frame->setStyleSheet(QStringLiteral("QFrame { border-left: 4px solid %1; }"
                                        "QLabel { border: none; }")
                                 .arg(color.name()));
    auto *box = new QVBoxLayout(frame);
    box->setContentsMargins(10, 6, 10, 6);
    box->setSpacing(2);
    auto *caption = new QLabel(title);
    auto *value = new QLabel(QStringLiteral("–"));
    QFont big = value->font();
    big.setPointSizeF(big.pointSizeF() * 1.8);
    big.setBold(true);
    value->setFont(big);
    auto *detail = new QLabel;
    detail->setStyleSheet(QStringLiteral("color: palette(placeholder-text);"));
    box->addWidget(caption);
    box->addWidget(value);
    box->addWidget(detail);
    grid->addWidget(frame, 0, column);
    grid->setColumnStretch(column, 1);
    return { value, detail };
}

void MonitorWindow::setConnectionChoice(ConnectionChoice choice)
{
    if (choice == m_choice && !m_connections.isEmpty())
        return;
    // Calls already emitted still arrive (queued and funnel alike); only new ones switch.
    for (const QMetaObject::Connection &c : std::as_const(m_connections))
        disconnect(c);
    m_connections.clear();
    m_choice = choice;
    for (int i = 0; i < m_workers->count(); ++i)
        m_connections += connectReporter(choice, m_workers->reporter(i), this);
    if (m_switch->currentIndex() != m_switch->findData(int(choice)))
        m_switch->setCurrentIndex(m_switch->findData(int(choice)));
}

qint64 MonitorWindow::framesPainted() const
{
    return m_chart->framesPainted();
}

void MonitorWindow::addResult(quint64 hash)
{
    ++m_results;
    m_checksum ^= hash;
}

void MonitorWindow::setProgress(int permille)
{
    ++m_progressCalls;
    m_progress->setValue(permille);
}

void MonitorWindow::sample()
{
    const double t = double(m_clock.nsecsElapsed()) / 1e9;
    const double dt = std::max(t - m_lastSampleT, 1e-3);
    const double rate = double(m_results - m_lastResults) / dt;
    const double progressRate = double(m_progressCalls - m_lastProgressCalls) / dt;
    m_lastSampleT = t;
    m_lastResults = m_results;
    m_lastProgressCalls = m_progressCalls;

    // Pending: the funnel counts its own; for Qt's queue, what was emitted and not yet received.
    double pending = 0;
    QString pendingSource;
    if (connectionChoiceInfo(m_choice).funnel) {
        const QFunnel::Statistics s = QFunnel::globalInstance()->statistics();
        pending = double(s.pending);
        pendingSource = tr("of %1, QFunnel::statistics()")
                                .arg(count(double(QFunnel::globalInstance()->capacity())));
    } else {
        const quint64 received = m_results + m_progressCalls;
        const quint64 emitted = m_workers->emitted();
        pending = emitted > received ? double(emitted - received) : 0;
        pendingSource = tr("emitted − received; no bound");
    }

    // Paint-to-paint intervals since the last sample. A frozen window delays this timer too,
    // so a freeze shows in the first sample after it, as one long interval.
    const QList<double> frames = m_chart->takeFrameIntervals();
    double worstFrame = 0;
    double medianFrame = 0;
    if (!frames.isEmpty()) {
        QList<double> sorted = frames;
        std::sort(sorted.begin(), sorted.end());
        worstFrame = sorted.constLast();
        medianFrame = sorted.at(sorted.size() / 2);
    }
    const double rss = residentMiB();

    m_rateTile.value->setText(count(rate));
    m_rateTile.detail->setText(tr("%1 received in all").arg(count(double(m_results))));
    m_pendingTile.value->setText(count(pending));
    m_pendingTile.detail->setText(pendingSource);
    m_frameTile.value->setText(frames.isEmpty() ? QStringLiteral("–") : ms(medianFrame));
    m_frameTile.detail->setText(tr("median; worst %1").arg(ms(worstFrame)));
    m_memoryTile.value->setText(mib(rss));
    m_memoryTile.detail->setText(tr("resident set size"));
    m_progressRate->setText(tr("progress updates received: %1/s").arg(count(progressRate)));

    m_chart->addSample(t, { rate, pending, worstFrame, rss });
}
