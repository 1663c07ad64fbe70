// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELMETACALL_P_H
#define QFUNNELMETACALL_P_H

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

#include <QtFastConnect/qfastconnect_impl.h>
#include <QtCore/qmetatype.h>
#include <QtCore/qvarlengtharray.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The slot object of a connection made by name or by QMetaMethod: the arguments are
// type-erased through QMetaType, the method is run through the receiver's qt_metacall(), as Qt
// does for its own queued calls.
class QFunnelMetaCallSlot final : public QFunnelSlotObject
{
public:
    // types: the metatypes of the arguments the method consumes, each checked queueable.
    QFunnelMetaCallSlot(int methodIndex, const QList<QMetaType> &types);

    // Capture stage, emitting thread: copies the consumed arguments of argv (argv[0] is the
    // return value) into one new call, which holds a reference on this slot object.
    QFunnelCall *makeCall(void **argv);

    // True when type can be copied into a call and destroyed again.
    static bool isQueueable(QMetaType type);

private:
    static void impl(Operation op, QFunnelSlotObject *self, QObject *receiver, QFunnelCall *c);
    void destroy(QFunnelCall *call) noexcept;

    const int m_methodIndex;                   // absolute, in the receiver's meta-object
    QVarLengthArray<QMetaType, 4> m_types;
    QVarLengthArray<quint32, 4> m_offsets;     // of each argument from the call's start, bytes
    std::size_t m_size = 0;                    // of a call with its arguments, bytes
    std::size_t m_align = alignof(QFunnelCall);
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELMETACALL_P_H
