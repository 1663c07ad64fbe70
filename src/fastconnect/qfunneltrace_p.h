// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELTRACE_P_H
#define QFUNNELTRACE_P_H

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

// The tracepoints of qtfastconnect.tracepoints, fired with Qt's Q_TRACE() (qtrace_p.h). The CMake
// build generates their provider header with tracegen for the tracing backend Qt was built with
// (LTTng, ETW, CTF), or for LTTng with QT_FASTCONNECT_LTTNG on a Qt built without one; with no
// backend (Debian's Qt, and the qmake build) Q_TRACE() expands to nothing: no instruction.
#if defined(QT_FASTCONNECT_TRACEPOINTS)
#include "qtfastconnect_tracepoints_p.h"
#else
#include <QtCore/private/qtrace_p.h>
#endif

#endif // QFUNNELTRACE_P_H
