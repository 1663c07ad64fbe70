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
public:
    static constexpr qsizetype DefaultCapacity = 65536;

    explicit QFunnel(QObject *parent = nullptr);
    ~QFunnel() override;

    static QFunnel *globalInstance();

    qsizetype capacity() const;
    void setCapacity(qsizetype calls);

    qsizetype pendingCalls() const;
    quint64 overCapacityCalls() const;
    quint64 droppedCalls() const;

    void flush();

private:
    Q_DISABLE_COPY_MOVE(QFunnel)
};

QT_END_NAMESPACE

#endif // QFUNNEL_H
