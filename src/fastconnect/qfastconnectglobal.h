// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECTGLOBAL_H
#define QFASTCONNECTGLOBAL_H

#include <QtCore/qglobal.h>

QT_BEGIN_NAMESPACE

#ifndef QT_STATIC
#if defined(QT_BUILD_FASTCONNECT_LIB)
#define Q_FASTCONNECT_EXPORT Q_DECL_EXPORT
#else
#define Q_FASTCONNECT_EXPORT Q_DECL_IMPORT
#endif
#else
#define Q_FASTCONNECT_EXPORT
#endif

QT_END_NAMESPACE

#endif // QFASTCONNECTGLOBAL_H
