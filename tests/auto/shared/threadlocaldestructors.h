// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef THREADLOCALDESTRUCTORS_H
#define THREADLOCALDESTRUCTORS_H

#include <QtTest/qtest.h>

// Skips a test whose own thread_local object has a destructor where that is undefined: with
// MinGW-w64's GCC, thread_local variables live in emulated TLS, and at thread exit libgcc's
// key destructor frees that storage before libstdc++'s runs the objects' destructors (pthread
// key destructors run in the order the keys were made, emulated TLS's first). The module's
// own per-thread objects avoid it (QFunnelThreadObject); a test's cannot.
#if defined(Q_CC_MINGW) && !defined(Q_CC_CLANG)
#define QFC_SKIP_UNLESS_THREAD_LOCAL_DESTRUCTORS_WORK()                                            \
    QSKIP("MinGW-w64's GCC runs thread_local destructors on freed emulated-TLS storage")
#else
#define QFC_SKIP_UNLESS_THREAD_LOCAL_DESTRUCTORS_WORK() ((void)0)
#endif

#endif // THREADLOCALDESTRUCTORS_H
