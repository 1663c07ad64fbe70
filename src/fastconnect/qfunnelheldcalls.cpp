// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelheldcalls_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

void QFunnelHeldCalls::take(QFunnelCallStack &stack)
{
    const QFunnelCallStack::Taken taken = stack.takeAll();
    if (!taken.first)
        return;
    if (m_first)
        m_last->next = taken.first;
    else
        m_first = taken.first;
    m_last = taken.last;
    m_taken += taken.n;
}

void QFunnelHeldCalls::admit(quint64 fence, QFunnelCall *&first, QFunnelCall *&last)
{
    if (fence <= m_admitted || !m_first)
        return;
    QFunnelCall *const from = m_first;
    QFunnelCall *to;
    if (fence >= m_taken) {
        // The usual case: the fence covers everything taken.
        to = m_last;
        m_first = m_last = nullptr;
        m_admitted = m_taken;
    } else {
        // Pushed after this wake-up was posted: they wait for their own.
        to = from;
        for (quint64 i = m_admitted + 1; i < fence; ++i)
            to = to->next;
        m_first = to->next;
        to->next = nullptr;
        m_admitted = fence;
    }
    if (first)
        last->next = from;
    else
        first = from;
    last = to;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
