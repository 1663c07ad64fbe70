// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNEL_H
#define QFUNNEL_H

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtCore/qobject.h>

QT_BEGIN_NAMESPACE

class QFunnelPrivate;

class Q_FASTCONNECT_EXPORT QFunnel : public QObject
{
    Q_OBJECT
    Q_DECLARE_PRIVATE(QFunnel)
    Q_PROPERTY(qsizetype capacity READ capacity WRITE setCapacity)
    Q_PROPERTY(OverflowPolicy overflowPolicy READ overflowPolicy WRITE setOverflowPolicy)
    Q_PROPERTY(int blockTimeout READ blockTimeout WRITE setBlockTimeout)
    Q_PROPERTY(quint64 emittedCalls READ emittedCalls NOTIFY statisticsChanged)
    Q_PROPERTY(quint64 deliveredCalls READ deliveredCalls NOTIFY statisticsChanged)
    Q_PROPERTY(quint64 droppedCalls READ droppedCalls NOTIFY statisticsChanged)
    Q_PROPERTY(quint64 discardedCalls READ discardedCalls NOTIFY statisticsChanged)
    Q_PROPERTY(quint64 coalescedCalls READ coalescedCalls NOTIFY statisticsChanged)
    Q_PROPERTY(quint64 overCapacityCalls READ overCapacityCalls NOTIFY statisticsChanged)
    Q_PROPERTY(qsizetype pendingCalls READ pendingCalls NOTIFY statisticsChanged)
    Q_PROPERTY(qsizetype highWaterMark READ highWaterMark NOTIFY statisticsChanged)
    Q_PROPERTY(int statisticsInterval READ statisticsInterval WRITE setStatisticsInterval)
public:
    static constexpr qsizetype DefaultCapacity = 65536;

    enum class OverflowPolicy { Block, DropNewest, DropOldest };
    Q_ENUM(OverflowPolicy)

    struct Statistics
    {
        quint64 emitted = 0;
        quint64 delivered = 0;
        quint64 dropped = 0;
        quint64 discarded = 0;
        quint64 coalesced = 0;
        quint64 overCapacity = 0;
        qsizetype pending = 0;
        qsizetype highWaterMark = 0;
        quint64 relayRounds = 0;
        quint64 relayedCalls = 0;
        double meanBatchSize = 0;
    };

    explicit QFunnel(QObject *parent = nullptr);
    ~QFunnel() override;

    static QFunnel *globalInstance();

    qsizetype capacity() const;
    void setCapacity(qsizetype calls);

    qsizetype pendingCalls() const;
    quint64 overCapacityCalls() const;
    quint64 droppedCalls() const;

    OverflowPolicy overflowPolicy() const;
    void setOverflowPolicy(OverflowPolicy policy);
    int blockTimeout() const;
    void setBlockTimeout(int ms);

    Statistics statistics() const;
    quint64 emittedCalls() const;
    quint64 deliveredCalls() const;
    quint64 discardedCalls() const;
    quint64 coalescedCalls() const;
    qsizetype highWaterMark() const;

    static constexpr int DefaultStatisticsInterval = 100;
    int statisticsInterval() const;
    void setStatisticsInterval(int ms);

    void flush();

Q_SIGNALS:
    void statisticsChanged();
    void overflowed(quint64 droppedCalls, quint64 overCapacityCalls);

protected:
    void timerEvent(QTimerEvent *event) override;
    void connectNotify(const QMetaMethod &signal) override;
    void disconnectNotify(const QMetaMethod &signal) override;

private:
    Q_DISABLE_COPY_MOVE(QFunnel)
};

QT_END_NAMESPACE

#endif // QFUNNEL_H
