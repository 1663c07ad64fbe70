// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCONNECTION_P_H
#define QFUNNELCONNECTION_P_H

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

#include "qfunnelroute_p.h"

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Connection set-up, shared by connect(), invoke() and connect by name.

// The one check of a receiver (or context object) shared by every connect and invoke: core has
// not stopped, the receiver has thread affinity and its thread has not finished. On success
// fills in route's core, guard and inbox (each with a reference) and returns true; otherwise
// prints a qWarning starting with where and returns false. Any thread.
bool routeToReceiver(QFunnelCore *core, const QObject *receiver, QFunnelRoute *route,
                     const char *where);

// ThreadSanitizer only: mayMoveArguments() reads Qt's connection lists while it emits; Qt frees
// a removed connection only after every emission that could reach it has ended, counting them
// with atomics ThreadSanitizer cannot see. The reader releases this address when it is done,
// and whoever drops a connection handle (QFunnelConnectionRegistry) acquires it first.
inline char qfcConnectionListReaders = 0;

// For warnings about a bad connect or invoke: the object's class, like QObject::connect() says.
inline const char *classNameOf(const QObject *o)
{
    return o ? o->metaObject()->className() : "(nullptr)";
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCONNECTION_P_H
