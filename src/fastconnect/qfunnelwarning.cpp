// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Warnings rate-limited per cause (qfunnelwarning_p.h): a flood of stalled receivers or exiting
// threads prints two lines per window, the first occurrence in full and a count of the others,
// instead of one line each.

#include "qfunnelwarning_p.h"
#include "qfunnelcore_p.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qmutex.h>
#include <QtCore/qtimer.h>

#include <algorithm>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {
namespace {

struct Cause
{
    const char *what; // the warning, without what its full line says of one occurrence
    const char *counted; // what the summary counts
};

// In the order of QFunnelWarning.
constexpr Cause g_causes[] = {
    { "QFunnel: a receiver's thread has not run its events for a second", "receivers" },
    { "QFunnel: a receiver's thread has finished or not started", "receivers" },
    { "QFunnel: a producer thread has waited for room in a full funnel", "waits" },
    { "QtFastConnect: a thread exited with calls emitted after its last flush() still on their "
      "way to their receivers",
      "threads" },
};
constexpr int CauseCount = int(sizeof(g_causes) / sizeof(g_causes[0]));
static_assert(CauseCount == int(QFunnelWarning::ExitInFlight) + 1, "a cause without its text");

struct Window
{
    qint64 startMs = 0;
    qint64 counted = 0; // occurrences after the first
    bool open = false;
    bool timerAsked = false; // the application's thread was asked to print the summary
};

QBasicMutex g_lock;
Window g_windows[CauseCount]; // guarded by g_lock

struct Summary
{
    int cause = 0;
    qint64 counted = 0;
    qint64 seconds = 0;
};

qint64 nowMs()
{
    return QDeadlineTimer::current().deadline();
}

// With g_lock held.
Summary close(int cause, qint64 now)
{
    Window &w = g_windows[cause];
    const Summary s { cause, w.counted, std::max<qint64>((now - w.startMs + 500) / 1000, 1) };
    w = Window();
    return s;
}

// Not under g_lock: a message handler may emit, and run into a warning itself.
void print(const Summary &s)
{
    if (s.counted > 0) {
        qWarning("%s (%lld more %s, same cause, in the last %lld s)", g_causes[s.cause].what,
                 static_cast<long long>(s.counted), g_causes[s.cause].counted,
                 static_cast<long long>(s.seconds));
    }
}

// In the application's thread: prints the summaries of the windows that ended, and looks again
// when the next one ends. all: every window with a count, ended or not.
void printSummaries(bool all)
{
    const qint64 now = nowMs();
    Summary ended[CauseCount];
    int n = 0;
    qint64 nextMs = -1;
    {
        QMutexLocker locker(&g_lock);
        for (int c = 0; c < CauseCount; ++c) {
            const Window &w = g_windows[c];
            if (!w.open || !w.counted)
                continue;
            const qint64 left = w.startMs + QFunnelWarningWindowMs - now;
            if (all || left <= 0)
                ended[n++] = close(c, now);
            else
                nextMs = nextMs < 0 ? left : std::min(nextMs, left);
        }
    }
    for (int i = 0; i < n; ++i)
        print(ended[i]);
    if (nextMs >= 0) {
        QTimer::singleShot(std::chrono::milliseconds(nextMs), QCoreApplication::instance(),
                           [] { printSummaries(false); });
    }
}

void printEndedSummaries(QFunnelCore *)
{
    printSummaries(false);
}

// A Qt post routine: the application is destroyed, and its timers with it.
void printAllSummaries()
{
    printSummaries(true);
}

void notePostRoutine()
{
    qAddPostRoutine(printAllSummaries); // Qt forgets it once it ran
}
Q_COREAPP_STARTUP_FUNCTION(notePostRoutine)

} // namespace

bool qfcNoteWarning(QFunnelWarning cause)
{
    const int c = int(cause);
    Q_ASSERT(c >= 0 && c < CauseCount);
    const qint64 now = nowMs();
    Summary ended;
    bool first = false;
    bool askTimer = false;
    {
        QMutexLocker locker(&g_lock);
        Window &w = g_windows[c];
        if (w.open && now - w.startMs < QFunnelWarningWindowMs) {
            ++w.counted;
            askTimer = !w.timerAsked;
            w.timerAsked = true;
        } else {
            if (w.open)
                ended = close(c, now); // no application printed its summary
            w.open = true;
            w.startMs = now;
            first = true;
        }
    }
    print(ended);
    // Without an application, the next occurrence after the window prints the summary.
    if (askTimer)
        runInApplicationThread(nullptr, &printEndedSummaries);
    return first;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
