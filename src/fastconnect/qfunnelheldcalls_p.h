// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELHELDCALLS_P_H
#define QFUNNELHELDCALLS_P_H

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

#include "qfunnelcallstack_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Delivery stage: the calls an inbox's pass took from its call stack that no wake-up's fence
// has admitted yet, oldest first, with their positions in push order (the calls pushed before
// them count: a fence is such a position). Guarded by the inbox's pass lock.
class QFunnelHeldCalls
{
    Q_DISABLE_COPY_MOVE(QFunnelHeldCalls)
public:
    QFunnelHeldCalls() = default;

    bool isEmpty() const noexcept { return !m_first; }
    // The oldest held call (the rest follow through next), or null.
    const QFunnelCall *first() const noexcept { return m_first; }
    // Every call below this position was admitted.
    quint64 admitted() const noexcept { return m_admitted; }

    // Takes what was pushed onto stack, behind the calls held.
    void take(QFunnelCallStack &stack);
    // The held calls below position fence join the end of the list first..last (last is read
    // only while first is not null).
    void admit(quint64 fence, QFunnelCall *&first, QFunnelCall *&last);

private:
    // Positions m_admitted to m_taken - 1.
    QFunnelCall *m_first = nullptr;
    QFunnelCall *m_last = nullptr;
    quint64 m_admitted = 0;
    quint64 m_taken = 0;
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELHELDCALLS_P_H
