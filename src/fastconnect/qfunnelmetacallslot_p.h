// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELMETACALLSLOT_P_H
#define QFUNNELMETACALLSLOT_P_H

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

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qmetatype.h>
#include <QtCore/qvarlengtharray.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The slot of a connection made by name or by QMetaMethod: the arguments are
// type-erased through QMetaType, the method is run through the receiver's qt_metacall(), as Qt
// does for its own queued calls.
class QFunnelMetaCallSlot
{
public:
    // types: the metatypes of the arguments the method consumes, each checked queueable.
    QFunnelMetaCallSlot(int methodIndex, const QList<QMetaType> &types);

    // Capture stage, emitting thread: copies the consumed arguments of argv (argv[0] is the
    // return value) into one new call for route.
    QFunnelCall *makeCall(QFunnelRoute *route, void **argv) const;

    // The method's absolute index in the receiver's meta-object.
    int methodIndex() const noexcept { return m_methodIndex; }

    // True when type can be copied into a call and destroyed again.
    static bool isQueueable(QMetaType type);

    // The slot function. The slot lives in its route's allocation (allocateRoute()): its
    // DestroySlot destroys it there.
    static void impl(QFunnelSlotOp op, void *self, QObject *receiver, QFunnelCall *c);

private:
    void destroy(QFunnelCall *call) const noexcept;

    const int m_methodIndex; // absolute, in the receiver's meta-object
    QVarLengthArray<QMetaType, 4> m_types;
    QVarLengthArray<quint32, 4> m_offsets; // of each argument from the call's start, bytes
    std::size_t m_size = 0; // of a call with its arguments, bytes
    std::size_t m_align = alignof(QFunnelCall);
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELMETACALLSLOT_P_H
