// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELPROCESSINGHOOK_P_H
#define QFUNNELPROCESSINGHOOK_P_H

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

class QThread;

namespace QtFastConnectPrivate {

class QFunnelCore;

// Delivery by the next event processing, as with Qt::QueuedConnection, whose emission posts its
// event before emit returns: a call emitted before a receiver thread starts processing events
// (QCoreApplication::processEvents(), a return to its event loop, a nested loop) runs in that
// processing, even when the relay still held it (workers that emit, are waited for with
// QThreadPool::waitForDone(), QThread::wait() or a semaphore, and then one QCoreApplication::processEvents()).
//
// Qt's event dispatchers emit QAbstractEventDispatcher::awake() (an explicit QCoreApplication::processEvents())
// or aboutToBlock() (an event loop's iteration) in the processing thread before they send the
// posted events. The hook, connected to both in each receiver thread, waits there for a relay
// round of each funnel that has producer batches in the relay's hands (QFunnelQueue::
// hasBatchesInRelay()): the round routes every call emitted before, and posts its wake-up,
// which this processing then sends. It costs a receiver thread nothing more than a signal
// emission and a look at each funnel while no batch is in a relay's hands, and at most one
// relay round (tens of µs) per processing while one is. Calls that the thread emitted itself,
// and calls a producer handed to an idle funnel's inbox directly, have their wake-ups posted
// already.
//
// The wake-up's pass still yields to the event loop after its budget (QFunnelPassBudget): a
// backlog larger than one pass runs in the processings after it.
class QFunnelProcessingHook
{
public:
    // A thread that has funnel receivers: hooked now if it runs, and whenever it (re)starts.
    // Any thread; once per thread (QFunnelAdmission::addReceiverThread()).
    static void watch(QThread *thread);
    // The first delivery pass in a thread, and any pass after a dispatcher went (epoch()
    // changed): hooks the calling thread's dispatcher if it is not yet (an application
    // created again, a thread adopted before it had one).
    static void hookCurrentThread();
    // Changes whenever a hooked dispatcher is destroyed; any thread.
    static quint32 epoch() noexcept;
    // The funnels whose relays the hook waits for: from construction until stop().
    static void addCore(QFunnelCore *core);
    static void removeCore(QFunnelCore *core);
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPROCESSINGHOOK_P_H
