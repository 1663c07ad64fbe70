// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// hashfunnel: hashes real files block by block on N worker threads and delivers every block's
// hash to the main thread, once through Qt::QueuedConnection and once through a FunnelConnection,
// and compares both with the ceiling of no delivery at all.

#include "blockset.h"
#include "hashworkers.h"
#include "schemerunner.h"

#include <QtCore/qcommandlineparser.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qlocale.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace {

enum ExitCode { Success = 0, WrongResults = 1, BadUsage = 2 };

struct QHashFunnelOptions
{
    QList<int> threadCounts;
    qsizetype blockSize = 4096;
    double minSeconds = 1.0;
    bool csv = false;
    QStringList paths;
};

void printTo(FILE *stream, const QString &text)
{
    std::fputs(qPrintable(text + QLatin1Char('\n')), stream);
    std::fflush(stream);
}

// Progress and diagnostics go to stderr, so that stdout carries only the results.
void progress(const QString &text)
{
    printTo(stderr, QStringLiteral("hashfunnel: ") + text);
}

// Bad options and unusable input both end here, with exit code 2.
[[noreturn]] void usageError(const QString &text, bool hintHelp = true)
{
    printTo(stderr, QStringLiteral("hashfunnel: error: ") + text);
    if (hintHelp)
        printTo(stderr, QStringLiteral("Try 'hashfunnel --help' for more information."));
    std::exit(BadUsage);
}

QString grouped(double value)
{
    return QLocale(QLocale::English).toString(qint64(std::llround(value)));
}

QHashFunnelOptions parseOptions(const QCoreApplication &app)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
            "Hashes files in fixed-size blocks (FNV-1a 64) on worker threads and delivers every "
            "block's hash to a slot in the main thread, once with Qt::QueuedConnection and once "
            "with QtFastConnect::connect() (a FunnelConnection). A third run delivers nothing "
            "(each worker folds its own results): the ceiling any delivery can reach.\n"
            "Files are read into memory once; each measurement repeats passes over all blocks "
            "until --min-seconds have elapsed, and every pass must deliver exactly one result "
            "per block with the reference checksum (XOR of all hashes), else the exit code is 1.\n"
            "Results go to stdout, progress to stderr. Bad options give exit code 2."));
    const QCommandLineOption helpOption = parser.addHelpOption();
    const QCommandLineOption threadsOption(
            QStringLiteral("threads"),
            QStringLiteral("Comma-separated worker thread counts, one table row each."),
            QStringLiteral("list"), QStringLiteral("1,2,4,8,16,32"));
    const QCommandLineOption blockSizeOption(
            QStringLiteral("block-size"),
            QStringLiteral("Block size in bytes; a file's trailing partial block counts as a "
                           "block."),
            QStringLiteral("bytes"), QStringLiteral("4096"));
    const QCommandLineOption minSecondsOption(
            QStringLiteral("min-seconds"),
            QStringLiteral("Minimum duration of each measurement, in seconds (a decimal number "
                           "> 0); passes repeat until it is reached."),
            QStringLiteral("seconds"), QStringLiteral("1"));
    const QCommandLineOption formatOption(
            QStringLiteral("format"),
            QStringLiteral("Output format: 'text' (an aligned table with a header line) or 'csv' "
                           "(the line threads,ceiling_per_s,qt_per_s,funnel_per_s and one line "
                           "per thread count; nothing else on stdout)."),
            QStringLiteral("text|csv"), QStringLiteral("text"));
    parser.addOptions({ threadsOption, blockSizeOption, minSecondsOption, formatOption });
    parser.addPositionalArgument(
            QStringLiteral("files"),
            QStringLiteral("Files to hash. Default: the installed Qt libraries (libQt6*.so*) "
                           "in the directory of the QtCore library this program runs with, "
                           "each file once."),
            QStringLiteral("[files...]"));

    if (!parser.parse(app.arguments()))
        usageError(parser.errorText());
    if (parser.isSet(helpOption))
        parser.showHelp(Success);

    QHashFunnelOptions options;
    const QString threads = parser.value(threadsOption);
    for (const QString &item : threads.split(QLatin1Char(','))) {
        bool ok = false;
        const int n = item.trimmed().toInt(&ok);
        if (!ok || n < 1 || n > 1024) {
            usageError(QStringLiteral("--threads: '%1' is not a thread count from 1 to 1024 "
                                      "(in '%2')")
                               .arg(item, threads));
        }
        options.threadCounts.append(n);
    }

    const QString blockSize = parser.value(blockSizeOption);
    bool ok = false;
    options.blockSize = blockSize.trimmed().toLongLong(&ok);
    if (!ok || options.blockSize < 1 || options.blockSize > (qsizetype(1) << 30)) {
        usageError(QStringLiteral("--block-size: '%1' is not a size from 1 to 1073741824 bytes")
                           .arg(blockSize));
    }

    const QString minSeconds = parser.value(minSecondsOption);
    options.minSeconds = minSeconds.trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(options.minSeconds) || options.minSeconds <= 0) {
        usageError(QStringLiteral("--min-seconds: '%1' is not a number of seconds > 0")
                           .arg(minSeconds));
    }

    const QString format = parser.value(formatOption);
    if (format == QLatin1String("csv"))
        options.csv = true;
    else if (format != QLatin1String("text"))
        usageError(QStringLiteral("--format: unknown format '%1' (use text or csv)").arg(format));

    options.paths = parser.positionalArguments();
    return options;
}

// Reads the files named on the command line, or by default the installed Qt libraries.
void loadInput(const QHashFunnelOptions &options, QBlockSet *blocks)
{
    QStringList paths = options.paths;
    if (paths.isEmpty()) {
        const QString directory = QBlockSet::qtLibraryDirectory();
        paths = QBlockSet::qtLibraryFiles(directory);
        if (paths.isEmpty()) {
            usageError(QStringLiteral("no input files: no libQt6*.so* in %1; name the files to "
                                      "hash on the command line")
                               .arg(directory));
        }
        progress(QStringLiteral("reading the %1 Qt libraries in %2")
                         .arg(paths.size())
                         .arg(directory));
    } else {
        progress(QStringLiteral("reading %1 file(s)").arg(paths.size()));
    }
    QString error;
    if (!blocks->load(paths, options.blockSize, &error))
        usageError(error, false);
    if (blocks->blockCount() == 0)
        usageError(QStringLiteral("no input: every file is empty"), false);
}

// Widths of the text table's columns; cells are right-aligned.
constexpr int ColumnWidths[] = { 7, 18, 16, 18, 11, 16 };

QString tableRow(const QStringList &cells)
{
    QString row;
    for (qsizetype i = 0; i < cells.size(); ++i)
        row += cells.at(i).rightJustified(ColumnWidths[i] + (i ? 2 : 0));
    return row;
}

void printHeader(const QHashFunnelOptions &options, const QBlockSet &blocks,
                 const QHashTally &reference)
{
    const QString header = QStringLiteral("Per pass: %1 blocks of %2 bytes (%3 bytes in %4 "
                                          "files), checksum 0x%5")
                                   .arg(grouped(reference.count), grouped(blocks.blockSize()),
                                        grouped(blocks.totalBytes()))
                                   .arg(blocks.fileCount())
                                   .arg(reference.checksum, 16, 16, QLatin1Char('0'));
    if (options.csv) {
        progress(header);
        printTo(stdout, QStringLiteral("threads,ceiling_per_s,qt_per_s,funnel_per_s"));
    } else {
        printTo(stdout, header);
        printTo(stdout,
                tableRow({ QStringLiteral("threads"), QStringLiteral("ceiling blocks/s"),
                           QStringLiteral("Qt blocks/s"), QStringLiteral("funnel blocks/s"),
                           QStringLiteral("funnel/Qt"), QStringLiteral("funnel/ceiling") }));
    }
}

void printRow(const QHashFunnelOptions &options, int threads, double ceiling, double qt,
              double funnel)
{
    if (options.csv) {
        printTo(stdout,
                QStringLiteral("%1,%2,%3,%4")
                        .arg(threads)
                        .arg(std::llround(ceiling))
                        .arg(std::llround(qt))
                        .arg(std::llround(funnel)));
    } else {
        printTo(stdout,
                tableRow({ QString::number(threads), grouped(ceiling), grouped(qt), grouped(funnel),
                           QStringLiteral("%1x").arg(funnel / qt, 0, 'f', 2),
                           QStringLiteral("%1%").arg(100 * funnel / ceiling, 0, 'f', 1) }));
    }
}

// One measurement; exits with WrongResults if a pass did not deliver exactly the reference.
double measure(QSchemeRunner &runner, QDeliveryScheme scheme, int threads)
{
    const QString what =
            QStringLiteral("%1 thread(s): %2").arg(threads).arg(QSchemeRunner::name(scheme));
    progress(what + QStringLiteral(" ..."));
    QMeasurement m;
    QString error;
    if (!runner.measure(scheme, &m, &error)) {
        printTo(stderr, QStringLiteral("hashfunnel: wrong results: ") + error);
        // Leave without joining the workers: after lost results some may be blocked in an emit
        // for good.
        std::_Exit(WrongResults);
    }
    progress(QStringLiteral("%1: %2 blocks/s (%3 pass(es) in %4 s)")
                     .arg(what)
                     .arg(grouped(m.blocksPerSecond()))
                     .arg(m.passes)
                     .arg(m.nanoseconds / 1e9, 0, 'f', 2));
    return m.blocksPerSecond();
}

} // namespace

int main(int argc, char *argv[])
{
    QCoreApplication app(argc, argv);
    const QHashFunnelOptions options = parseOptions(app);

    QBlockSet blocks;
    loadInput(options, &blocks);
    progress(QStringLiteral("computing the reference checksum"));
    const QHashTally reference = qHashAllBlocks(blocks);
    printHeader(options, blocks, reference);

    for (const int threads : options.threadCounts) {
        QHashWorkerPool pool(blocks, threads);
        QSchemeRunner runner(pool, reference, options.minSeconds);
        const double ceiling = measure(runner, QDeliveryScheme::None, threads);
        const double qt = measure(runner, QDeliveryScheme::Queued, threads);
        const double funnel = measure(runner, QDeliveryScheme::Funnel, threads);
        printRow(options, threads, ceiling, qt, funnel);
    }
    return Success;
}
