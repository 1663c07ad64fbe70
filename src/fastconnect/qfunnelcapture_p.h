// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCAPTURE_P_H
#define QFUNNELCAPTURE_P_H

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

#include <QtFastConnect/qfastconnectglobal.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelCore;
struct QFunnelBatch;
struct QFunnelCall;

// Capture stage, per producer thread and funnel: the batch this thread is filling. Lives in a
// thread_local set; destroyed when the thread exits (or lazily once its funnel stopped).
class QFunnelLane
{
    Q_DISABLE_COPY_MOVE(QFunnelLane)
public:
    explicit QFunnelLane(QFunnelCore *core);
    ~QFunnelLane();

    QFunnelCore *core() const noexcept { return m_core; }
    // False once the relay sealed the batch: this thread has nothing in the relay's hands, so a
    // direct hand-off to an inbox cannot overtake its earlier calls.
    bool hasOpenBatch() const noexcept { return m_open != nullptr; }
    void append(QFunnelCall *call);

    // The calling thread's lane for core (created on first use).
    static QFunnelLane *forCurrentThread(QFunnelCore *core);

private:
    QFunnelCore *const m_core;      // holds a reference
    QFunnelBatch *m_open = nullptr;
    quint32 m_count = 0;            // calls written into m_open
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCAPTURE_P_H
