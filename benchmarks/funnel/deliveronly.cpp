// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "deliverypaths.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

// --deliver mode: exactly `calls` calls through one path, then exit; no QTest involved, so that
// a whole-process instruction count differs between two call counts only by the calls.
static constexpr quint64 DeliverWarmupCalls = 70000;

int deliverOnly(const char *pathArg, const char *callsArg)
{
    const PathInfo *info = nullptr;
    for (const PathInfo &candidate : PathTable) {
        if (!std::strcmp(pathArg, candidate.arg))
            info = &candidate;
    }
    if (!info)
        return -1;
    const Path path = info->path;
    char *end = nullptr;
    const quint64 calls = std::strtoull(callsArg, &end, 10);
    if (!calls || *end)
        return -1;

    Receiver receiver(1);
    QEventLoop loop;
    if (!runsInProducer(path))
        receiver.loop = &loop;
    ProducerPool pool(1);
    if (!connectPath(path, pool, 0, &receiver))
        return 2;
    // The warm-up is in both of callgrind-per-call.sh's runs, so it cancels out of their
    // difference: beyond the funnel's default capacity (65,536 calls), so that both runs have
    // carved every pool page they will use before the measured calls start.
    runRound(pool, receiver, DeliverWarmupCalls);
    runRound(pool, receiver, calls);
    if (receiver.count != calls + DeliverWarmupCalls || receiver.sum != pool.emittedSum()
        || receiver.outOfOrder) {
        std::fprintf(stderr, "%s: %llu of %llu calls arrived, checksum %s, %llu out of order\n",
                     pathName(path), static_cast<unsigned long long>(receiver.count),
                     static_cast<unsigned long long>(calls + DeliverWarmupCalls),
                     receiver.sum == pool.emittedSum() ? "ok" : "WRONG",
                     static_cast<unsigned long long>(receiver.outOfOrder));
        return 1;
    }
    return 0;
}
