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

// Thread-locals keep the TLS model of a shared library (global-dynamic: each access looks its
// address up through __tls_get_addr). Not initial-exec, which would be a plain load: the linker
// then marks the library DF_STATIC_TLS, and a plugin that brings it in with dlopen() fails with
// "cannot allocate memory in static TLS block" once other libraries used up glibc's small
// surplus (tests/auto/plugin); Android's loader refuses such a library outright. Not TLS
// descriptors (-mtls-dialect=gnu2) either, which would be nearly as cheap: on x86-64, glibc
// before 2.40 (Debian 12 has 2.36) clobbers vector registers on the descriptors' path of a
// dlopen()ed library, glibc bug 31372. On the per-call paths each function looks up one
// thread_local (the lane cache, the invoke slot cache): against initial-exec that costs a
// funnel call about 5% more instructions and an invoke(), which looks up two, about 20%
// (scripts/callgrind-per-thread.sh, all threads, Release).

#endif // QFASTCONNECTGLOBAL_P_H
