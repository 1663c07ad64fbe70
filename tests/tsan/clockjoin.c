// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause
//
// Preloaded (LD_PRELOAD) into the ThreadSanitizer test runs where ThreadSanitizer's runtime does
// not intercept pthread_clockjoin_np() (GCC 16's libtsan and clang 21's both intercept
// pthread_join, pthread_timedjoin_np and pthread_tryjoin_np only), which Qt >= 6.11's
// QThread::wait() joins with. Unseen, such a join leaves the thread registered as running, and
// the runtime aborts when a new thread reuses its pthread_t ("CHECK failed:
// sanitizer_thread_registry.cpp ... live_.try_emplace"). This definition joins through the calls
// the runtime does intercept, so it records the join. Not instrumented itself; test code only.

#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

int pthread_clockjoin_np(pthread_t thread, void **result, clockid_t clock,
                         const struct timespec *abstime)
{
    if (!abstime)
        return pthread_join(thread, result);
    if (clock == CLOCK_REALTIME)
        return pthread_timedjoin_np(thread, result, abstime);

    // pthread_timedjoin_np() takes a CLOCK_REALTIME deadline: move the one given on `clock`.
    struct timespec now, realNow, deadline;
    clock_gettime(clock, &now);
    clock_gettime(CLOCK_REALTIME, &realNow);
    long long left = (long long)(abstime->tv_sec - now.tv_sec) * 1000000000LL
            + (abstime->tv_nsec - now.tv_nsec);
    if (left < 0)
        left = 0;
    left += realNow.tv_nsec;
    deadline.tv_sec = realNow.tv_sec + (time_t)(left / 1000000000LL);
    deadline.tv_nsec = (long)(left % 1000000000LL);
    return pthread_timedjoin_np(thread, result, &deadline);
}
