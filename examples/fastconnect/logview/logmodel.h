// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef LOGMODEL_H
#define LOGMODEL_H

#include <QtCore/qabstractitemmodel.h>
#include <QtCore/qlist.h>
#include <QtCore/qstring.h>
#include <QtWidgets/qlistview.h>

#include <atomic>
#include <deque>
#include <vector>

// One result of a worker, as a log view shows it.
struct LogRow
{
    int producer = 0;
    int seq = 0; // per producer, from 0
    double value = 0;
    QString label;
};

// A log: rows appended at the end, the oldest removed beyond a cap, as a log view keeps them.
// Checks every producer's rows arrive in order, once each. GUI thread only, except rowsAdded(),
// which a monitor thread reads.
class LogModel : public QAbstractListModel
{
    Q_OBJECT
public:
    static constexpr int Cap = 100000;

    explicit LogModel(int producers, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = QModelIndex()) const override;
    QVariant data(const QModelIndex &index, int role) const override;

    // One beginInsertRows() per call (and one beginRemoveRows() once at the cap).
    void appendRow(const LogRow &row);
    // One beginInsertRows() for all of them.
    void appendRows(QList<LogRow> rows);
    template<typename It>
    void appendRange(It first, It last, qsizetype n);

    quint64 rowsAdded() const { return m_added.load(std::memory_order_relaxed); }
    quint64 rowsOf(int producer) const { return m_next.at(size_t(producer)); }
    // Rows that arrived out of their producer's order (a gap, a repeat or an overtaking).
    quint64 orderErrors() const { return m_orderErrors; }

private:
    void check(const LogRow &row);
    void makeRoomFor(qsizetype n);

    std::deque<LogRow> m_rows;
    std::vector<quint64> m_next; // per producer: the sequence number expected next
    quint64 m_orderErrors = 0;
    std::atomic<quint64> m_added { 0 }; // single writer: this thread
};

template<typename It>
void LogModel::appendRange(It first, It last, qsizetype n)
{
    if (n <= 0)
        return;
    makeRoomFor(n);
    const int at = int(m_rows.size());
    beginInsertRows(QModelIndex(), at, at + int(n) - 1);
    for (; first != last; ++first) {
        check(*first);
        m_rows.push_back(std::move(*first));
    }
    endInsertRows();
    m_added.store(m_added.load(std::memory_order_relaxed) + quint64(n), std::memory_order_relaxed);
}

// The view of the log, counting what it does: item relayouts (QListView::doItemsLayout(), run
// from the view's delayed-layout timer after rows were inserted or removed) and paints of its
// viewport, each timestamped.
class CountingListView : public QListView
{
public:
    CountingListView();
    void doItemsLayout() override;

    std::atomic<quint64> layouts { 0 }; // single writer: the GUI thread
    std::vector<qint64> paintedNs;

protected:
    void paintEvent(QPaintEvent *event) override;
};

#endif // LOGMODEL_H
