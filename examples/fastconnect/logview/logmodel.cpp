// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "logmodel.h"

#include <chrono>

LogModel::LogModel(int producers, QObject *parent)
    : QAbstractListModel(parent), m_next(size_t(producers), 0)
{}

int LogModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

QVariant LogModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || size_t(index.row()) >= m_rows.size())
        return {};
    const LogRow &row = m_rows[size_t(index.row())];
    if (role == Qt::DisplayRole) {
        return QStringLiteral("worker %1   #%2   value %3   \"%4\"")
                .arg(row.producer)
                .arg(row.seq)
                .arg(row.value, 0, 'f', 1)
                .arg(row.label);
    }
    return {};
}

void LogModel::check(const LogRow &row)
{
    quint64 &next = m_next.at(size_t(row.producer));
    if (quint64(row.seq) != next)
        ++m_orderErrors;
    next = quint64(row.seq) + 1;
}

void LogModel::makeRoomFor(qsizetype n)
{
    const qsizetype over = qsizetype(m_rows.size()) + n - Cap;
    if (over <= 0)
        return;
    const qsizetype removed = qMin(over, qsizetype(m_rows.size()));
    if (removed <= 0)
        return;
    beginRemoveRows(QModelIndex(), 0, int(removed) - 1);
    m_rows.erase(m_rows.begin(), m_rows.begin() + removed);
    endRemoveRows();
}

void LogModel::appendRow(const LogRow &row)
{
    LogRow copy = row; // the slot's argument is const; its string is shared, not copied
    appendRange(&copy, &copy + 1, 1);
}

void LogModel::appendRows(QList<LogRow> rows)
{
    const qsizetype n = rows.size();
    appendRange(rows.begin(), rows.end(), n);
}

CountingListView::CountingListView()
{
    setUniformItemSizes(true);
}

void CountingListView::doItemsLayout()
{
    layouts.store(layouts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    QListView::doItemsLayout();
}

void CountingListView::paintEvent(QPaintEvent *event)
{
    paintedNs.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now().time_since_epoch())
                                .count());
    QListView::paintEvent(event);
}
