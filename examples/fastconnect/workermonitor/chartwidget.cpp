// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "chartwidget.h"

#include <QtGui/qpainter.h>
#include <QtGui/qpainterpath.h>

#include <cmath>
#include <utility>

ChartWidget::ChartWidget(QWidget *parent) : QWidget(parent)
{
    setAttribute(Qt::WA_OpaquePaintEvent); // every pixel is painted: no background erase
    setMinimumSize(400, 240);
    m_clock.start();
}

void ChartWidget::addSeries(const Series &series)
{
    m_series.append(series);
}

void ChartWidget::addSample(double t, const QList<double> &values)
{
    Q_ASSERT(values.size() == m_series.size());
    m_samples.append({ t, values });
    // Keep one sample older than the span, so the lines reach the left edge.
    while (m_samples.size() > 2 && m_samples.at(1).t < t - m_span)
        m_samples.removeFirst();
}

QList<double> ChartWidget::takeFrameIntervals()
{
    return std::exchange(m_frameIntervals, {});
}

// Rounds up to 1, 2 or 5 times a power of ten, so the band's top label is a round number.
static double niceCeiling(double v)
{
    const double magnitude = std::pow(10.0, std::floor(std::log10(v)));
    for (double step : { 1.0, 2.0, 5.0, 10.0 }) {
        if (v <= step * magnitude)
            return step * magnitude;
    }
    return 10 * magnitude;
}

void ChartWidget::paintEvent(QPaintEvent *)
{
    const qint64 now = m_clock.nsecsElapsed();
    if (m_lastFrameNs >= 0)
        m_frameIntervals.append(double(now - m_lastFrameNs) / 1e6);
    m_lastFrameNs = now;
    ++m_frames;

    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (m_series.isEmpty())
        return;

    const double tEnd = m_samples.isEmpty() ? 0 : m_samples.constLast().t;
    // A young run fills the width: the span grows with it from 10 s up to setSpan().
    const double span = std::min(m_span, std::max(10.0, tEnd));
    const QFontMetrics fm(font());
    const qreal axisHeight = fm.height() + 6;
    const qreal gap = 8;
    const QRectF area = QRectF(rect()).adjusted(1, 1, -1, -axisHeight);
    const qreal bandHeight = (area.height() - gap * (m_series.size() - 1)) / m_series.size();
    for (int i = 0; i < m_series.size(); ++i) {
        const QRectF band(area.left(), area.top() + i * (bandHeight + gap), area.width(),
                          bandHeight);
        paintBand(p, band, i, tEnd, span);
    }

    // The time axis, shared by every band: a tick every 5 s, "now" at the right edge.
    p.setPen(palette().color(QPalette::PlaceholderText));
    const qreal y = area.bottom() + fm.ascent() + 3;
    for (int s = 0; s <= int(span); s += 5) {
        const qreal x = area.right() - area.width() * s / span;
        const QString text = s == 0 ? tr("now") : tr("−%1 s").arg(s);
        const qreal w = fm.horizontalAdvance(text);
        p.drawText(QPointF(qBound(area.left(), x - w / 2, area.right() - w), y), text);
    }
}

void ChartWidget::paintBand(QPainter &p, const QRectF &band, int index, double tEnd,
                            double span) const
{
    const Series &series = m_series.at(index);
    const QColor grid = palette().color(QPalette::Midlight);
    p.setRenderHint(QPainter::Antialiasing, false);
    p.fillRect(band, palette().color(QPalette::AlternateBase));
    p.setPen(grid);
    p.drawRect(band);

    // The band's scale: its largest visible value, rounded up.
    double top = series.minimumScale;
    for (const Sample &s : m_samples)
        top = std::max(top, s.values.at(index));
    top = niceCeiling(std::max(top, series.reference * 1.25));
    const QRectF plot = band.adjusted(0, 18, 0, -2); // room for the title line
    auto toPoint = [&](double t, double v) {
        return QPointF(plot.right() - plot.width() * (tEnd - t) / span,
                       plot.bottom() - plot.height() * std::min(v, top) / top);
    };

    // Half-scale grid line.
    p.setPen(QPen(grid, 1, Qt::DotLine));
    p.drawLine(QPointF(plot.left(), plot.center().y()), QPointF(plot.right(), plot.center().y()));
    if (series.reference >= 0) {
        p.setPen(QPen(QColor(0x99, 0x99, 0x99), 1, Qt::DashLine));
        const qreal ry = toPoint(tEnd, series.reference).y();
        p.drawLine(QPointF(plot.left(), ry), QPointF(plot.right(), ry));
    }

    if (m_samples.size() > 1) {
        QPainterPath line;
        QPainterPath fill;
        for (int i = 0; i < m_samples.size(); ++i) {
            const QPointF pt = toPoint(m_samples.at(i).t, m_samples.at(i).values.at(index));
            if (i == 0) {
                line.moveTo(pt);
                fill.moveTo(pt.x(), plot.bottom());
            } else {
                line.lineTo(pt);
            }
            fill.lineTo(pt);
        }
        fill.lineTo(line.currentPosition().x(), plot.bottom());
        fill.closeSubpath();
        p.save();
        p.setClipRect(plot);
        p.setRenderHint(QPainter::Antialiasing, true);
        QColor area = series.color;
        area.setAlpha(40);
        p.fillPath(fill, area);
        p.setPen(QPen(series.color, 2));
        p.drawPath(line);
        p.restore();
    }

    // Title and scale on the left, the newest value on the right.
    const QFontMetrics fm(p.font());
    const qreal baseline = band.top() + 4 + fm.ascent();
    QFont bold = p.font();
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(series.color.darker(130));
    p.drawText(QPointF(band.left() + 8, baseline), series.title);
    const qreal titleWidth = QFontMetrics(bold).horizontalAdvance(series.title);
    if (!m_samples.isEmpty()) {
        const QString latest = series.format(m_samples.constLast().values.at(index));
        p.drawText(
                QPointF(band.right() - 8 - QFontMetrics(bold).horizontalAdvance(latest), baseline),
                latest);
    }
    p.setFont(font());
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QPointF(band.left() + 16 + titleWidth, baseline),
               tr("scale 0 – %1").arg(series.format(top)));
}
