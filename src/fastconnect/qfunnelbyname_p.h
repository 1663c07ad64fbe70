// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELBYNAME_P_H
#define QFUNNELBYNAME_P_H

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
#include <QtCore/qmetaobject.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Resolve SIGNAL() / SLOT() strings as QObject::connect() does, with its warnings (fn: the
// calling function's name for them).
bool resolveSignal(const char *fn, const QObject *sender, const char *signal, QMetaMethod *sig);
bool resolveMethod(const char *fn, const QObject *receiver, const char *method, QMetaMethod *meth);

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELBYNAME_P_H
