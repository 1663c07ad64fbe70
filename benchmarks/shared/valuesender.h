// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef VALUESENDER_H
#define VALUESENDER_H

#include <QtCore/qobject.h>

// The sender of the delivery benchmarks: one per producer thread, emitting quint64 values.
class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(quint64 v);
};

#endif // VALUESENDER_H
