// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef GATEDRECEIVER_H
#define GATEDRECEIVER_H

#include "countedvalue.h"

#include <QtCore/qlist.h>
#include <QtCore/qmutex.h>
#include <QtCore/qobject.h>
#include <QtCore/qsemaphore.h>

#include <atomic>

// The sender of the funnel tests: a plain value and a value that counts its copies.
class Producer : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(quint64 v);
    void counted(const CountedValue &v);
};

// Records the values it receives; its first call parks its thread until the test opens the
// gate, so that the funnel fills up with nobody draining it.
class GatedReceiver : public QObject
{
    Q_OBJECT
public:
    QSemaphore entered;
    QSemaphore gate;
    std::atomic<qint64> calls { 0 };
    std::atomic<quint64> sum { 0 };

    void onValue(quint64 v)
    {
        {
            QMutexLocker locker(&m_lock);
            m_values.append(v);
        }
        sum += v;
        if (calls.fetch_add(1) == 0) {
            entered.release();
            gate.acquire();
        }
    }
    QList<quint64> received()
    {
        QMutexLocker locker(&m_lock);
        return m_values;
    }

private:
    QMutex m_lock;
    QList<quint64> m_values;
};

#endif // GATEDRECEIVER_H
