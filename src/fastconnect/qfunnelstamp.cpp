// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelstamp_p.h"

#if defined(Q_PROCESSOR_X86) && (defined(Q_CC_GNU) || defined(Q_CC_CLANG))
#include <cpuid.h>
#endif
#if defined(Q_OS_LINUX)
#include <fstream>
#include <string>
#endif

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {

// The CPU's word: CPUID leaf 0x80000007, EDX bit 8, "invariant TSC" (it runs at a constant
// rate in every power state).
bool tscInvariant() noexcept
{
#if defined(Q_PROCESSOR_X86) && (defined(Q_CC_GNU) || defined(Q_CC_CLANG))
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) || eax < 0x80000007u)
        return false;
    if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx))
        return false;
    return edx & (1u << 8);
#elif defined(Q_PROCESSOR_X86) && defined(Q_CC_MSVC)
    int regs[4] = {};
    __cpuid(regs, int(0x80000000u));
    if (unsigned(regs[0]) < 0x80000007u)
        return false;
    __cpuid(regs, int(0x80000007u));
    return regs[3] & (1 << 8);
#else
    return false;
#endif
}

// Invariant is not synchronized: on Linux, the kernel checks that the cores' counters agree
// (and keeps checking) before it offers the TSC as a clock source. Elsewhere (Windows) the
// CPU's word is taken.
bool tscSynchronized()
{
#if defined(Q_OS_LINUX)
    for (const char *file : { "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                              "/sys/devices/system/clocksource/clocksource0/"
                              "available_clocksource" }) {
        std::ifstream in(file);
        std::string source;
        while (in >> source) {
            if (source == "tsc")
                return true;
        }
    }
    return false;
#else
    return true;
#endif
}

} // namespace

bool QFunnelStamp::tscUsable = tscInvariant() && tscSynchronized();

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
