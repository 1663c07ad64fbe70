// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef PROCESSMEMORY_H
#define PROCESSMEMORY_H

// This process's memory as Linux reports it. Plain file reads, no Qt: callable from any thread,
// including a monitor thread while the main thread is busy.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace ProcessMemory {

// Resident set size now, in bytes (second field of /proc/self/statm, in pages).
inline double residentBytes()
{
    long pages = 0;
    if (FILE *f = std::fopen("/proc/self/statm", "r")) {
        long size = 0;
        if (std::fscanf(f, "%ld %ld", &size, &pages) != 2)
            pages = 0;
        std::fclose(f);
    }
    return double(pages) * double(sysconf(_SC_PAGESIZE));
}

// The peak resident set size so far (VmHWM of /proc/self/status), in bytes.
inline double peakResidentBytes()
{
    double kib = 0;
    if (FILE *f = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, f)) {
            if (std::strncmp(line, "VmHWM:", 6) == 0) {
                kib = std::strtod(line + 6, nullptr);
                break;
            }
        }
        std::fclose(f);
    }
    return kib * 1024;
}

} // namespace ProcessMemory

#endif // PROCESSMEMORY_H
