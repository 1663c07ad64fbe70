// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELRELAY_P_H
#define QFUNNELRELAY_P_H

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
#include <QtCore/qmutex.h>
#include "qfunnelplatform_p.h"

#include <QtCore/qsemaphore.h>

#include <atomic>
#include <thread>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

class QFunnelQueue;

// Relay stage: one thread per funnel. Pops producer batches from the queue, drains them while
// their producers keep filling them, and hands the calls to their receivers' threads: one chain
// and at most one wake-up per receiver per round. It never runs user code and never
// touches a receiver object.
class QFunnelRelay
{
public:
    // How long the relay sleeps between rounds while it holds open batches: RoundIntervalUs,
    // doubled after each round that routed BusyRoundCalls or more (up to MaxRoundIntervalUs)
    // and halved after one that routed fewer than a quarter of that. Producers never wake it
    // for a batch it already holds, so this bounds the added latency under load; a busy funnel
    // gets longer rounds, and so fewer relay and receiver wake-ups per call (each costs a
    // context switch on both threads), while a trickle keeps the short ones.
    static constexpr int RoundIntervalUs = 50;
    static constexpr int MaxRoundIntervalUs = 400;
    static constexpr quint64 BusyRoundCalls = 256;
    // A batch goes back to its producer after this many rounds in a row found nothing new in it.
    // More than one: a producer that was only preempted for a round (a busy machine) keeps its
    // batch instead of taking the idle path, whose direct hand-off costs the receiver a wake-up
    // each time.
    static constexpr int QuietRoundsBeforeRelease = 2;

    explicit QFunnelRelay(QFunnelQueue &queue) : m_queue(queue) {}
    ~QFunnelRelay() { stopAndJoin(); }

    // Starts the relay thread if it does not run yet, and returns once it runs; called before
    // anything is queued for it (a batch, a flush marker), not when the funnel is made: a
    // funnel made while the loader lock is held (a Windows DLL's static initialiser) would wait
    // for a thread that cannot start under it. Any thread.
    void ensureStarted()
    {
        // [P27 check] acquire: with start()'s release, after the thread ran.
        if (Q_UNLIKELY(!m_running.load(std::memory_order_acquire)))
            start();
    }
    void stopAndJoin(); // any thread but the relay's; idempotent
    // Ends the relay's sleep between rounds (or its next one): a flush marker just queued is
    // completed by the round that follows, without waiting out the interval. Any thread.
    void wake() noexcept { m_sleep.wake(); }

    // Whether the calling thread is a funnel's relay thread, which must not run user code:
    // whatever would (dropping a dead receiver's calls destroys their arguments, and maybe the
    // connection's functor) is left to a thread that does (QFunnelInboxRegistry::deferDrop()).
    static bool isRelayThread() noexcept;

    quint64 rounds() const noexcept { return m_rounds.load(std::memory_order_relaxed); }
    quint64 relayedCalls() const noexcept { return m_calls.load(std::memory_order_relaxed); }

private:
    void start();
    void run();

    QFunnelQueue &m_queue;
    QBasicMutex m_startLock; // one start(); orders it with stopAndJoin()
    std::thread m_thread; // guarded by m_startLock until m_running is set
    std::atomic<bool> m_running { false };
    bool m_stopped = false; // guarded by m_startLock: no start() after stopAndJoin()
    QSemaphore m_started; // released by the relay thread once set up (start())
    QFunnelShortSleep m_sleep; // the relay thread's, between rounds
    std::atomic<quint64> m_rounds { 0 };
    std::atomic<quint64> m_calls { 0 };
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELRELAY_P_H
