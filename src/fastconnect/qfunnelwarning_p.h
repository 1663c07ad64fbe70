// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELWARNING_P_H
#define QFUNNELWARNING_P_H

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

#include <QtCore/qglobal.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The warnings that one cause can repeat by the thousand: once per stalled receiver, per wait
// for room, per exiting thread (Qt's tst_qobjectrace::destroyRace, run through a funnel, printed
// about 19,000 stall warnings).
enum class QFunnelWarning {
    ReceiverBlocked, // a receiver's thread has not run its events for a second
    ReceiverGone, // a receiver's thread has finished or not started
    ProducerWaited, // a producer has waited StallWarningMs for room
    ExitInFlight, // a thread exited with calls on their way (noted in the application's thread)
};

// Counts one occurrence of cause; true if the caller is to print it in full: the first one of a
// window of QFunnelWarningWindowMs. The window's later ones are only counted, and one line sums
// them up when it ends: printed by the application's thread (a timer), or, without an
// application, by the cause's next occurrence; at the latest when the application is destroyed.
// Any thread.
bool qfcNoteWarning(QFunnelWarning cause);

constexpr qint64 QFunnelWarningWindowMs = 5000;

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELWARNING_P_H
