// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Makes a funnel, and the global one, in its static initialiser: on Windows that runs under the
// loader lock (DllMain), where no new thread can start.

#include <QtFastConnect/qfunnel.h>

namespace {
struct MadeAtLoad
{
    QFunnel *funnel = new QFunnel; // kept: the library is not unloaded
    QFunnel *global = QFunnel::globalInstance();
} madeAtLoad;
} // namespace

extern "C" Q_DECL_EXPORT int qfcFunnelsMadeAtLoad()
{
    return int(madeAtLoad.funnel != nullptr) + int(madeAtLoad.global != nullptr);
}
