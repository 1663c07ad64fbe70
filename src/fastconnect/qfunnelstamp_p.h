// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELSTAMP_P_H
#define QFUNNELSTAMP_P_H

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

#include <atomic>
#include <chrono>

// The clock's source, by processor and compiler.
#if defined(Q_PROCESSOR_X86) && (defined(Q_CC_GNU) || defined(Q_CC_CLANG) || defined(Q_CC_MSVC))
#define QFC_STAMP_TSC
#if defined(Q_CC_MSVC)
#include <intrin.h>
#endif
#elif defined(Q_PROCESSOR_ARM_64) && (defined(Q_CC_GNU) || defined(Q_CC_CLANG))
#define QFC_STAMP_CNTVCT
#endif

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Capture and relay stages, causal order: the clock a call is stamped with as it enters its
// lane's batch, and that the relay reads as a round begins (its horizon, qfunnelrelay.cpp).
// What it must give: if one thread's read happens before another's (a release and the acquire
// that reads it, a mutex, a semaphore), the first value is not greater. One clock for the whole
// process, chosen once at load: the time-stamp counter where it is invariant and synchronized
// across cores (x86: the CPU says so and, on Linux, the kernel uses it as a clock source), the
// ARMv8 generic timer's virtual count (one system-wide counter), else std::chrono::steady_clock
// (about 20 ns a read instead of about 10 instructions).
class QFunnelStamp
{
public:
    // Whether now() reads the time-stamp counter (x86); set at load, before any lane exists.
    static bool tscUsable;

    static quint64 steadyNow() noexcept
    {
        return quint64(std::chrono::steady_clock::now().time_since_epoch().count());
    }

    // Emitting thread. Read after the loads before it have completed, the acquire that ordered
    // this emission after another thread's among them. The later release that may order
    // another thread's emission after this one is a store after the stamp's store, which
    // depends on the value read here: no barrier after.
    static quint64 now() noexcept
    {
#if defined(QFC_STAMP_TSC)
        if (Q_LIKELY(tscUsable)) {
            lfence();
            return rdtsc();
        }
#endif
#if defined(QFC_STAMP_CNTVCT)
        dsbLoads();
        isb();
        return virtualCount();
#else
        return steadyNow();
#endif
    }

    // now(), for the relay's horizon: no load after it (a batch's state) is performed before
    // the clock was read.
    static quint64 horizon() noexcept
    {
#if defined(QFC_STAMP_TSC)
        if (Q_LIKELY(tscUsable)) {
            lfence();
            const quint64 count = rdtsc();
            lfence();
            return count;
        }
#endif
#if defined(QFC_STAMP_CNTVCT)
        dsbLoads();
        isb();
        const quint64 count = virtualCount();
        isb();
        return count;
#else
        const quint64 count = steadyNow();
        // [P38 horizon] seq_cst: the clock's own loads (the kernel's clock data) before any after.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        return count;
#endif
    }

private:
    // Volatile asm statements keep their order, and "memory" keeps the compiler's loads and
    // stores on their side; the instructions order the processor's.
#if defined(QFC_STAMP_TSC) && defined(Q_CC_MSVC)
    static void lfence() noexcept
    {
        _mm_lfence();
    }
    static quint64 rdtsc() noexcept
    {
        return __rdtsc();
    }
#elif defined(QFC_STAMP_TSC)
    static void lfence() noexcept
    {
        asm volatile("lfence" : : : "memory");
    }
    static quint64 rdtsc() noexcept
    {
        quint32 lo;
        quint32 hi;
        asm volatile("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
        return (quint64(hi) << 32) | lo;
    }
#elif defined(QFC_STAMP_CNTVCT)
    static void dsbLoads() noexcept
    {
        asm volatile("dsb ishld" : : : "memory");
    }
    static void isb() noexcept
    {
        asm volatile("isb" : : : "memory");
    }
    static quint64 virtualCount() noexcept
    {
        quint64 count;
        asm volatile("mrs %0, cntvct_el0" : "=r"(count) : : "memory");
        return count;
    }
#endif
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELSTAMP_P_H
