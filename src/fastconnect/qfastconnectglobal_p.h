// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFASTCONNECTGLOBAL_P_H
#define QFASTCONNECTGLOBAL_P_H

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

// Thread-locals of this library (never of a header template, which a plugin may instantiate)
// that sit on a per-call path: initial-exec, so that reading one costs a load instead of a
// __tls_get_addr call (a shared library's default). They are a few bytes in all, which fits the
// static TLS surplus glibc keeps for libraries loaded with dlopen().
#if defined(Q_CC_GNU) || defined(Q_CC_CLANG)
#define QFC_TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
#else
#define QFC_TLS_INITIAL_EXEC
#endif

#endif // QFASTCONNECTGLOBAL_P_H
