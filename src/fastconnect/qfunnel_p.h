// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNEL_P_H
#define QFUNNEL_P_H

//
//  W A R N I N G
//  -------------
//
// This file is not part of the QtFastConnect API. It exists purely as an
// implementation detail. This header file may change from version to
// version without notice, or even be removed.
//
// We mean it.
//

#include <QtFastConnect/qfunnel.h>
#include <QtCore/qbasictimer.h>
#include <QtCore/private/qobject_p.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {
class QFunnelCore;
}

class QFunnelPrivate : public QObjectPrivate
{
    Q_DECLARE_PUBLIC(QFunnel)
public:
    QFunnelPrivate();
    ~QFunnelPrivate() override;

    static QFunnelPrivate *get(QFunnel *f) { return f->d_func(); }

    QtFastConnectPrivate::QFunnelCore *core; // holds a reference

    // The notify signals' sampling (qfunnelstatistics.cpp), in the funnel's thread: runs only
    // while statisticsChanged() or overflowed() is connected.
    void updateSampling();
    void sample();
    QBasicTimer statisticsTimer;
    int statisticsIntervalMs = QFunnel::DefaultStatisticsInterval;
    QFunnel::Statistics lastSampled;
};

QT_END_NAMESPACE

#endif // QFUNNEL_P_H
