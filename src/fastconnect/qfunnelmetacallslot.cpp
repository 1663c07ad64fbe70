// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelmetacallslot_p.h"
#include "qfunnelroute_p.h"
#include "qfunnelqtcompat_p.h"

#include <QtCore/private/qobject_p.h>

#include <new>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelMetaCallSlot::QFunnelMetaCallSlot(int methodIndex, const QList<QMetaType> &types)
    : m_methodIndex(methodIndex)
{
    std::size_t offset = sizeof(QFunnelCall);
    for (QMetaType t : types) {
        const std::size_t align = qMax<std::size_t>(t.alignOf(), 1);
        offset = (offset + align - 1) / align * align;
        m_types.append(t);
        m_offsets.append(quint32(offset));
        offset += qMax<std::size_t>(t.sizeOf(), 1);
        m_align = qMax(m_align, align);
    }
    m_size = offset;
}

bool QFunnelMetaCallSlot::isQueueable(QMetaType type)
{
    return isCopyConstructible(type);
}

QFunnelCall *QFunnelMetaCallSlot::makeCall(QFunnelRoute *route, void **argv) const
{
    char *mem = static_cast<char *>(::operator new(m_size, std::align_val_t(m_align)));
    auto *call = new (mem) QFunnelCall(route);
    for (qsizetype i = 0; i < m_types.size(); ++i)
        m_types[i].construct(mem + m_offsets[i], argv[i + 1]); // the copy constructor
    return call;
}

void QFunnelMetaCallSlot::destroy(QFunnelCall *call) const noexcept
{
    char *mem = reinterpret_cast<char *>(call);
    for (qsizetype i = 0; i < m_types.size(); ++i)
        m_types[i].destruct(mem + m_offsets[i]);
    call->~QFunnelCall();
    ::operator delete(mem, std::align_val_t(m_align));
}

void QFunnelMetaCallSlot::impl(QFunnelSlotOp op, void *self, QObject *receiver, QFunnelCall *c)
{
    auto *that = static_cast<QFunnelMetaCallSlot *>(self);
    switch (op) {
    case QFunnelSlotOp::Run: {
        char *mem = reinterpret_cast<char *>(c);
        QVarLengthArray<void *, 8> argv(that->m_types.size() + 1);
        argv[0] = nullptr; // a queued call has no return value
        for (qsizetype i = 0; i < that->m_types.size(); ++i)
            argv[i + 1] = mem + that->m_offsets[i];
        // Virtual dispatch, like Qt's queued calls: on an object whose subclass is already
        // destroyed, the base class's qt_metacall() ignores the subclass's method.
        QMetaObject::metacall(receiver, QMetaObject::InvokeMetaMethod, that->m_methodIndex,
                              argv.data());
        that->destroy(c);
        break;
    }
    case QFunnelSlotOp::DestroyCall:
        that->destroy(c);
        break;
    case QFunnelSlotOp::DestroySlot:
        that->~QFunnelMetaCallSlot(); // in its route's allocation, which the route frees
        break;
    case QFunnelSlotOp::Describe: // the defaults: Run, which checks the receiver itself
        break;
    }
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
