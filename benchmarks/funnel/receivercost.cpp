// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "deliverypaths.h"

#include <QtFastConnect/qfunnel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#if defined(Q_OS_WIN)
#include <qt_windows.h>
#else
#include <sys/resource.h>
#include <time.h>
#endif

// --receiver-cost mode: the CPU time the receiver's (main) thread spends per delivered call when
// it is never idle, that is the most calls per second one receiver thread can take, however many
// cores produce. Each measured round starts with a full backlog: the producers emit every call of
// the round while the main thread waits outside its event loop, then the main thread runs the
// loop until the last slot ran, on its own CPU clock (CLOCK_THREAD_CPUTIME_ID, which does not run
// while the thread is preempted or asleep, so a busy machine changes the figure much less than
// it changes calls/s). Producers flooding alongside would not keep it busy on a small machine:
// one producer thread is slower per call than the receiver with the funnel, and with Qt queued
// the two take turns on the post-event mutex. The voluntary context switches of the main thread
// during the drain (getrusage(RUSAGE_THREAD)) show whether it ever ran dry and slept; the funnel's
// last batch may reach the receiver after the others, so one or two per round are expected.
//
// The mean over the repetitions is what is printed, with the quickest and the slowest: Qt's
// rows alternate between two speeds from one round to the next (the order in which malloc hands
// back the events the previous round freed), which makes a median pick one of the two.
//
// The funnel admits a full round only if its capacity holds it: a round larger than the default
// capacity raises the global funnel's capacity to the round (noted in the output). Every path
// gets its receiver, producers and connection and one unmeasured round first; the repetitions
// then take turns over the paths, so that a change in the machine's load touches every path
// alike.

namespace {

double threadCpuNs()
{
#if defined(Q_OS_WIN)
    FILETIME created, exited, kernel, user;
    GetThreadTimes(GetCurrentThread(), &created, &exited, &kernel, &user);
    auto ns = [](const FILETIME &t) { // 100 ns units
        return double((quint64(t.dwHighDateTime) << 32) | t.dwLowDateTime) * 100;
    };
    return ns(kernel) + ns(user);
#else
    timespec ts {};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e9 + double(ts.tv_nsec);
#endif
}

// 0 where the system does not count them per thread.
long voluntarySwitches()
{
#if defined(RUSAGE_THREAD)
    rusage usage {};
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_nvcsw;
#else
    return 0;
#endif
}

bool parseCount(const char *arg, quint64 *value)
{
    char *end = nullptr;
    *value = std::strtoull(arg, &end, 10);
    return *value && !*end;
}

struct Subject
{
    const PathInfo *info = nullptr;
    std::unique_ptr<Receiver> receiver;
    std::unique_ptr<ProducerPool> pool;
    std::vector<double> nsPerCall;
    long switches = 0;
};

double mean(const std::vector<double> &v)
{
    double sum = 0;
    for (double x : v)
        sum += x;
    return sum / double(v.size());
}

// One round of `round` calls: the producers emit all of it, then the main thread delivers it;
// returns the main thread's CPU ns per call and adds its voluntary context switches.
double drainBacklog(Subject &s, QEventLoop &loop, quint64 round)
{
    Receiver &receiver = *s.receiver;
    receiver.target = receiver.count + round;
    s.pool->startRound(round / quint64(s.pool->size()));
    s.pool->waitRound(); // the whole round is pending now, none of it ran
    const long switchesBefore = voluntarySwitches();
    const double start = threadCpuNs();
    if (receiver.count < receiver.target)
        loop.exec();
    const double ns = threadCpuNs() - start;
    s.switches += voluntarySwitches() - switchesBefore;
    return ns / double(round);
}

} // namespace

int receiverCost(int argc, char **argv)
{
    // <calls> <repetitions> <producers> <path>...
    quint64 calls = 0, repetitions = 0, producers = 0;
    if (argc < 4 || !parseCount(argv[0], &calls) || !parseCount(argv[1], &repetitions)
        || !parseCount(argv[2], &producers) || producers > 64)
        return -1;
    std::vector<Subject> subjects;
    for (int i = 3; i < argc; ++i) {
        Subject s;
        for (const PathInfo &candidate : PathTable) {
            if (!std::strcmp(argv[i], candidate.arg))
                s.info = &candidate;
        }
        // The direct paths run the slot in the producer: the main thread receives nothing.
        if (!s.info || runsInProducer(s.info->path))
            return -1;
        subjects.push_back(std::move(s));
    }

    QEventLoop loop;
    const quint64 callsEach = (calls + producers - 1) / producers;
    const qsizetype round = qsizetype(callsEach * producers);
    const bool raised = QFunnel::globalInstance()->capacity() < round;
    if (raised)
        QFunnel::globalInstance()->setCapacity(round);
    for (Subject &s : subjects) {
        s.receiver = std::make_unique<Receiver>(int(producers));
        s.receiver->loop = &loop;
        s.pool = std::make_unique<ProducerPool>(int(producers));
        for (int p = 0; p < int(producers); ++p) {
            if (!connectPath(s.info->path, *s.pool, p, s.receiver.get()))
                return 2;
        }
        // Warm-up: a round like the measured ones, so that the pool and Qt's allocations
        // have the pages a backlog of this size needs before the first measured round.
        drainBacklog(s, loop, quint64(round));
        s.switches = 0;
    }
    for (quint64 r = 0; r < repetitions; ++r) {
        for (Subject &s : subjects)
            s.nsPerCall.push_back(drainBacklog(s, loop, quint64(round)));
    }
    for (Subject &s : subjects) {
        if (s.receiver->sum != s.pool->emittedSum() || s.receiver->outOfOrder) {
            std::fprintf(stderr, "%s: checksum %s, %llu out of order\n", s.info->label,
                         s.receiver->sum == s.pool->emittedSum() ? "ok" : "WRONG",
                         static_cast<unsigned long long>(s.receiver->outOfOrder));
            return 1;
        }
    }

    double queued = 0;
    for (const Subject &s : subjects) {
        if (s.info->path == Path::Queued)
            queued = mean(s.nsPerCall);
    }
    std::printf("# receiver (main) thread CPU time per delivered call, draining a backlog of %lld "
                "calls from %llu producer thread(s)%s; %llu repetitions: mean, min, max\n",
                static_cast<long long>(round), static_cast<unsigned long long>(producers),
                raised ? " (funnel capacity raised to the backlog)" : "",
                static_cast<unsigned long long>(repetitions));
    std::printf("%-15s %10s %10s %10s %12s %12s %14s\n", "path", "ns_per_call", "min", "max",
                "calls_per_s", "x_queued", "sleeps_per_1k");
    for (const Subject &s : subjects) {
        const double m = mean(s.nsPerCall);
        const auto [lo, hi] = std::minmax_element(s.nsPerCall.begin(), s.nsPerCall.end());
        // calls/s the receiver could take: the inverse of its own time per call. x_queued is
        // that over Qt queued's, from this same process.
        char vsQueued[32] = "-";
        if (queued > 0)
            std::snprintf(vsQueued, sizeof vsQueued, "%.2f", queued / m);
        std::printf("%-15s %10.1f %10.1f %10.1f %12.0f %12s %14.2f\n", s.info->arg, m, *lo, *hi,
                    1e9 / m, vsQueued,
                    1000.0 * double(s.switches) / double(quint64(round) * repetitions));
    }
    return 0;
}
