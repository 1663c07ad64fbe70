// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECT_P_H
#define QFASTCONNECT_P_H

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
#include <QtCore/qobject.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelCore;
class QFunnelSlotObject;

// The one check of a receiver (or context object) shared by every connect and invoke: core has
// not stopped, the receiver has thread affinity and its thread has not finished. On success
// fills in so's core, guard and inbox (each with a reference) and returns true; otherwise
// prints a qWarning starting with where and returns false. Any thread.
bool routeToReceiver(QFunnelCore *core, const QObject *receiver, QFunnelSlotObject *so,
                     const char *where);

// For warnings about a bad connect or invoke: the object's class, like QObject::connect() says.
inline const char *classNameOf(const QObject *o)
{
    return o ? o->metaObject()->className() : "(nullptr)";
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFASTCONNECT_P_H
