// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// The model/view experiment of the benchmark report: P producer threads (1, 4, 8) append log
// rows {int producer; int seq; double value; QString label}, unpaced, to a QAbstractListModel
// shown in a QListView (uniform item sizes, capped at 100,000 rows by removing the oldest), in
// the GUI thread, offscreen. Feeds: a signal per row through Qt::QueuedConnection and through
// the funnel, the same two with no view (the view's share), and what a Qt user builds instead:
// a mutex-guarded vector drained by a 16 ms QTimer, and QtConcurrent + QPromise::addResult()
// with QFutureWatcher::resultsReadyAt(); and the funnel's batched connection
// (QtFastConnect::connectBatched(), one beginInsertRows() per batch), also with RateLimitCalls
// (one batch per connection per 16 ms, the four connections' batches in one pass). Each row runs in a
// process of its own (this binary, re-run with QFC_MODELVIEW_ROW set), 1 s warm-up, 3 s
// measured, then the backlog drains; every row is checked to arrive once, in its producer's
// order. The table gives medians of the
// repetitions and, for rows/s, the ratio to Qt::QueuedConnection's median in the same run.
//
//   tst_bench_modelview                        every row, 3 repetitions each
//   tst_bench_modelview "rows:funnel/P=4"      one row (QTest's function:tag syntax)
//   QFC_BENCH_REPEAT=N               N repetitions instead of 3
//   QFC_BENCH_QUICK=1                0.5 s warm-up, 1 s measured
//   QFC_BENCH_CSV=<file>             also appends the medians to <file> as CSV
//                                              (threads = producers)

#include "benchcsv.h"
#include "childrow.h"
#include "modelviewrow.h"

#include <QtCore/qprocess.h>
#include <QtTest/qtest.h>
#include <QtWidgets/qapplication.h>

#include <algorithm>
#include <cstdio>

static const char RowVariable[] = "QFC_MODELVIEW_ROW"; // "<feed>,<producers>,<warm-up ms>,<ms>"

namespace {
struct RowRun
{
    QByteArray feed;
    int producers = 0;
    QList<ModelViewResult> repetitions;

    double median(double ModelViewResult::*m) const
    {
        QList<double> v;
        for (const ModelViewResult &r : repetitions)
            v.append(r.*m);
        std::sort(v.begin(), v.end());
        return v.isEmpty() ? 0 : v.at(v.size() / 2);
    }
    double worst(double ModelViewResult::*m) const
    {
        double w = 0;
        for (const ModelViewResult &r : repetitions)
            w = std::max(w, std::abs(r.*m));
        return w;
    }
};
} // namespace

class tst_BenchModelView : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void rows_data();
    void rows();
    void cleanupTestCase();

private:
    int m_repeat = 3;
    int m_warmUpMs = 1000;
    int m_measureMs = 3000;
    QList<RowRun> m_runs;
};

void tst_BenchModelView::initTestCase()
{
    if (const int n = qEnvironmentVariableIntValue("QFC_BENCH_REPEAT"); n > 0)
        m_repeat = n;
    if (qEnvironmentVariableIntValue("QFC_BENCH_QUICK")) {
        m_warmUpMs = 500;
        m_measureMs = 1000;
    }
}

void tst_BenchModelView::rows_data()
{
    QTest::addColumn<QByteArray>("feed");
    QTest::addColumn<int>("producers");
    for (int producers : { 1, 4, 8 }) {
        for (RowFeed feed : allRowFeeds()) {
            const QByteArray name = rowFeedName(feed);
            QTest::addRow("%s/P=%d", name.constData(), producers) << name << producers;
        }
    }
}

void tst_BenchModelView::rows()
{
    QFETCH(QByteArray, feed);
    QFETCH(int, producers);

    RowRun run { feed, producers, {} };
    for (int rep = 0; rep < m_repeat; ++rep) {
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QString::fromLatin1(RowVariable),
                   QString::asprintf("%s,%d,%d,%d", feed.constData(), producers, m_warmUpMs,
                                     m_measureMs));
        child.setProcessEnvironment(env);
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child.start(QCoreApplication::applicationFilePath(), {});
        QVERIFY2(child.waitForFinished(m_warmUpMs + m_measureMs + 120000),
                 "the row's process did not finish");
        QCOMPARE(child.exitStatus(), QProcess::NormalExit);
        QCOMPARE(child.exitCode(), 0);
        const QByteArray out = child.readAllStandardOutput().trimmed();
        const auto result = ModelViewResult::fromLine(out.mid(out.lastIndexOf('\n') + 1));
        QVERIFY2(result, out.constData());
        // Every feed must deliver every row once, in order per producer.
        QCOMPARE(result->missing, 0.0);
        QCOMPARE(result->orderErrors, 0.0);
        run.repetitions.append(*result);
        qInfo("  repetition %d: %.0f rows/s, timer p99 %.1f ms, RSS +%.0f MiB", rep + 1,
              result->rowsPerSecond, result->timerP99Ms, result->rssGrowthMiB);
    }

    for (const ModelViewMetric &m : modelViewMetrics()) {
        if (m.member != &ModelViewResult::missing && m.member != &ModelViewResult::orderErrors)
            BenchCsv::write("modelview", feed, producers, 0, m.name, run.median(m.member));
    }
    m_runs.append(run);
}

void tst_BenchModelView::cleanupTestCase()
{
    if (m_runs.isEmpty())
        return;
    std::printf("\nRows into a QListView: P producers, unpaced, %d ms measured after %d ms; "
                "medians of %d runs; \"x Qt\" is rows/s over Qt::QueuedConnection's (same P, "
                "same run); timer = lateness of a 16 ms QTimer in the GUI thread\n\n",
                m_measureMs, m_warmUpMs, m_repeat);
    std::printf("%-18s %2s %10s %6s %8s %9s %9s %9s %8s %8s %10s %8s %9s\n", "feed", "P", "rows/s",
                "x Qt", "GUI ns", "timer p50", "timer p99", "paint p99", "layouts", "paints",
                "backlog", "RSS MiB", "drain ms");
    for (const RowRun &run : std::as_const(m_runs)) {
        double qt = 0;
        for (const RowRun &other : std::as_const(m_runs)) {
            if (other.producers == run.producers && other.feed == "qt-queued")
                qt = other.median(&ModelViewResult::rowsPerSecond);
        }
        const double rows = run.median(&ModelViewResult::rowsPerSecond);
        std::printf(
                "%-18s %2d %10.0f %6s %8.0f %9.1f %9.1f %9.1f %8.0f %8.0f %10.0f %8.0f %9.0f"
                "%s\n",
                run.feed.constData(), run.producers, rows,
                qt > 0 ? qPrintable(QString::number(rows / qt, 'f', 2)) : "-",
                run.median(&ModelViewResult::guiCpuNsPerRow),
                run.median(&ModelViewResult::timerP50Ms), run.median(&ModelViewResult::timerP99Ms),
                run.median(&ModelViewResult::paintP99Ms),
                run.median(&ModelViewResult::layoutsPerSecond),
                run.median(&ModelViewResult::paintsPerSecond),
                run.median(&ModelViewResult::backlog), run.median(&ModelViewResult::rssGrowthMiB),
                run.median(&ModelViewResult::drainMs),
                run.worst(&ModelViewResult::ceiling) > 0 ? "  (stopped at +1 GiB)" : "");
    }
    std::fflush(stdout);
}

int main(int argc, char **argv)
{
    return rowMain<tst_BenchModelView>(
            argc, argv, RowVariable,
            [](const QList<QByteArray> &fields) -> std::optional<QByteArray> {
                const auto feed = rowFeedFromName(fields.value(0));
                if (fields.size() != 4 || !feed)
                    return std::nullopt;
                ModelViewOptions options;
                options.feed = *feed;
                options.producers = fields.at(1).toInt();
                options.warmUpMs = fields.at(2).toInt();
                options.measureMs = fields.at(3).toInt();
                return runModelViewRow(options).toLine();
            });
}

#include "tst_bench_modelview.moc"
