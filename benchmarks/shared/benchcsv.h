// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef BENCHCSV_H
#define BENCHCSV_H

// The machine-readable side of every experiment binary: when QFC_BENCH_CSV names a
// file, each result is appended to it as one line
//     experiment,series,threads,bytes,metric,value
// (threads and bytes are 0 where they do not apply). scripts/benchmark-report.sh reads these
// lines and nothing else; the binaries' free-text tables are for people.

#include <QtCore/qbytearray.h>
#include <QtCore/qglobal.h>

#include <cstdio>

namespace BenchCsv {

inline void write(const char *experiment, const QByteArray &series, int threads, qint64 bytes,
                  const char *metric, double value)
{
    const QByteArray path = qgetenv("QFC_BENCH_CSV");
    if (path.isEmpty())
        return;
    // Append mode, one fprintf per line: several binaries may share one file in turn.
    if (FILE *f = std::fopen(path.constData(), "a")) {
        std::fprintf(f, "%s,%s,%d,%lld,%s,%.6g\n", experiment, series.constData(), threads,
                     static_cast<long long>(bytes), metric, value);
        std::fclose(f);
    } else {
        qWarning("cannot append to %s (QFC_BENCH_CSV)", path.constData());
    }
}

} // namespace BenchCsv

#endif // BENCHCSV_H
