// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef LATENCYRECEIVER_H
#define LATENCYRECEIVER_H

#include <QtCore/qeventloop.h>
#include <QtCore/qobject.h>
#include <QtCore/qsemaphore.h>

#include <chrono>
#include <vector>

// idleLatency(): measured calls per row, after warm-up calls that are not measured; the gap
// the producer sleeps between a call's arrival and its next emission (so the funnel is idle
// when it emits: never more than one call in flight); how long a row may take at most.
static constexpr int LatencyCalls = 2000;
static constexpr int LatencyWarmupCalls = 100;
static constexpr int LatencyMinGapUs = 100;
static constexpr int LatencyMaxGapUs = 200;
static constexpr int LatencyTimeoutMs = 10000;

// Nanoseconds on the monotonic clock that both threads read (CLOCK_MONOTONIC on Linux).
inline quint64 steadyNowNs()
{
    return quint64(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now().time_since_epoch())
                           .count());
}

// idleLatency(): each value is the producer's steadyNowNs() at emission; the slot, in the main
// thread, records how long ago that was and lets the producer go on.
class LatencyReceiver : public QObject
{
    Q_OBJECT
public:
    void onStamp(quint64 sentNs)
    {
        // First thing in the slot: everything up to here is the connection's latency.
        const qint64 delayNs = qint64(steadyNowNs()) - qint64(sentNs);
        if (delayNs < 0)
            ++negative;
        if (++count > LatencyWarmupCalls)
            delaysNs.push_back(delayNs);
        received.release();
        if (count == target && loop)
            loop->quit();
    }

    int count = 0;
    int negative = 0;
    int target = 0;
    std::vector<qint64> delaysNs; // measured calls only, in arrival order
    QSemaphore received; // one per call, for the producer's one-in-flight pacing
    QEventLoop *loop = nullptr;
};

#endif // LATENCYRECEIVER_H
