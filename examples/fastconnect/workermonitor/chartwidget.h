// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef CHARTWIDGET_H
#define CHARTWIDGET_H

#include <QtCore/qelapsedtimer.h>
#include <QtCore/qlist.h>
#include <QtGui/qcolor.h>
#include <QtWidgets/qwidget.h>

#include <functional>

// A strip chart of a few quantities over the last seconds, one band per quantity, each with its
// own scale (results/s and MiB do not share an axis). Drawn with QPainter; no Qt Charts.
// Its paint events are the demo's frames: it timestamps each one.
class ChartWidget : public QWidget
{
    Q_OBJECT
public:
    struct Series
    {
        QString title;
        QColor color;
        std::function<QString(double)> format; // value -> text with unit
        double reference = -1; // a dashed line there if >= 0 (e.g. 16.7 ms)
        double minimumScale = 1; // the band's top is at least this
    };

    explicit ChartWidget(QWidget *parent = nullptr);

    void addSeries(const Series &series);
    // A sample at time t (seconds since start), one value per series.
    void addSample(double t, const QList<double> &values);
    void setSpan(double seconds) { m_span = seconds; }

    qint64 framesPainted() const { return m_frames; }
    // Paint-to-paint intervals (ms) since the last call.
    QList<double> takeFrameIntervals();

    QSize sizeHint() const override { return { 860, 330 }; }

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    struct Sample
    {
        double t;
        QList<double> values;
    };
    void paintBand(QPainter &p, const QRectF &band, int series, double tEnd, double span) const;

    QList<Series> m_series;
    QList<Sample> m_samples;
    double m_span = 30;
    QElapsedTimer m_clock;
    qint64 m_lastFrameNs = -1;
    qint64 m_frames = 0;
    QList<double> m_frameIntervals;
};

#endif // CHARTWIDGET_H
