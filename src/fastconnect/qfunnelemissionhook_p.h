// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELEMISSIONHOOK_P_H
#define QFUNNELEMISSIONHOOK_P_H

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

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Keeps a thread's funnel calls ahead of the events its later signals post, as
// Qt::QueuedConnection keeps them in one posted-event list: QThread::finished() after the
// results run() emitted, a worker's queued done() after its funnel results, with no flush().
//
// Qt's signal spy begin callback (qobject_p.h; what QTest's -vs uses) runs in the emitting
// thread at the start of every emission, before any of the signal's connections posts its
// event. When the thread emitted funnel calls since its last flush and the signal has a
// connection that posts (queued, or automatic to an object of another thread), the hook
// flushes the thread's lanes first (QFunnel::flush(): its calls reach their inboxes, barrier
// wake-ups posted), so that Qt posts the signal's events behind them.
//
// Installed when the process's first lane is made (a program that links the module without
// emitting pays nothing), chained to the set it replaces, restored when the library is
// unloaded. One set per process: a later qt_register_signal_spy_callbacks() (QTest's -vs)
// replaces it, and the porting checklist's flush() is needed again meanwhile.
void installEmissionHook();

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELEMISSIONHOOK_P_H
