// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Connect cost (issue 37): what a funnel connection costs to make, cut and keep, beside a
// Qt::QueuedConnection of the same shape, measured in the same run.
//
//   tst_bench_connect connectDisconnect  1,000 senders in the main thread connected to
//                            receivers in another thread, then disconnected (by handle); typed
//                            (member function) and functor connections, Qt and funnel taking
//                            turns block by block; median ns per connect + disconnect pair,
//                            pairs per second, funnel/Qt
//   tst_bench_connect memoryPerConnection  heap bytes per live connection (glibc's mallinfo2(),
//                            every arena) for 20,000 connections, each row in a process of its
//                            own (QFC_CONNECT_MEMORY), and what is left once they are cut and the
//                            objects deleted
//   tst_bench_connect destroyRace  Qt's tst_qobjectrace::destroyRace with every connection a
//                            Qt::QueuedConnection or a funnel connection: 10 threads x 2,777
//                            objects connected 68 times each from the main thread (1.9 M
//                            connects), then each thread connects, emits, disconnects and deletes
//                            its objects; each in a process of its own (this binary, re-run with
//                            QFC_CONNECT_DESTROYRACE set): connect time, thread time, peak RSS
//   QFC_BENCH_QUICK=1        fewer blocks, 5,000 connections, 1,000 objects per thread
//   QFC_BENCH_REPEAT=N       destroyRace N times per connection (medians)
//   QFC_BENCH_CSV=<file>     also appends the results to <file> as CSV

#include "benchcsv.h"
#include "processmemory.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qprocess.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <malloc.h>
#include <memory>
#include <vector>

static const char DestroyRaceVariable[] = "QFC_CONNECT_DESTROYRACE"; // "<via>,<threads>,<objects>"
static const char MemoryVariable[] = "QFC_CONNECT_MEMORY"; // "<config>,<receivers>,<connections>"

static bool quick()
{
    return qEnvironmentVariableIntValue("QFC_BENCH_QUICK") != 0;
}

class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(int v);
};

class Receiver : public QObject
{
    Q_OBJECT
public:
    void onValue(int v) { sum += v; }
    int sum = 0;
};

enum class Via { Qt, Funnel };
enum class Kind { Typed, Functor };

struct Config
{
    Via via;
    Kind kind;
    const char *series;
};
static const Config Configs[] = {
    { Via::Qt, Kind::Typed, "qt-queued-typed" },
    { Via::Funnel, Kind::Typed, "funnel-typed" },
    { Via::Qt, Kind::Functor, "qt-queued-functor" },
    { Via::Funnel, Kind::Functor, "funnel-functor" },
};

static QMetaObject::Connection connectOne(const Config &c, Sender *s, Receiver *r)
{
    if (c.kind == Kind::Typed) {
        if (c.via == Via::Qt)
            return QObject::connect(s, &Sender::value, r, &Receiver::onValue, Qt::QueuedConnection);
        return QtFastConnect::connect(s, &Sender::value, r, &Receiver::onValue);
    }
    auto functor = [r](int v) { r->sum += v; };
    if (c.via == Via::Qt)
        return QObject::connect(s, &Sender::value, r, functor, Qt::QueuedConnection);
    return QtFastConnect::connect(s, &Sender::value, r, functor);
}

// Bytes the heap holds now: every arena, and the blocks mapped on their own.
static qint64 heapInUse()
{
    const struct mallinfo2 m = mallinfo2();
    return qint64(m.uordblks) + qint64(m.hblkhd);
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

class tst_BenchConnect : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void connectDisconnect_data();
    void connectDisconnect();
    void memoryPerConnection_data();
    void memoryPerConnection();
    void destroyRace();
};

void tst_BenchConnect::initTestCase()
{
    // The global funnel (its relay thread, queue and pools) exists before anything is measured.
    QThread thread;
    Sender s;
    Receiver r;
    r.moveToThread(&thread);
    QVERIFY(QObject::disconnect(
            QtFastConnect::connect(&s, &Sender::value, &r, &Receiver::onValue)));
}

void tst_BenchConnect::connectDisconnect_data()
{
    QTest::addColumn<int>("receivers");
    QTest::newRow("10 receivers") << 10;
    QTest::newRow("a receiver per sender") << 1000;
}

// Not a QBENCHMARK: the four connections take turns block by block, so that a change in the
// machine's load touches them alike and their ratio compares the connections.
void tst_BenchConnect::connectDisconnect()
{
    QFETCH(int, receivers);
    constexpr int Senders = 1000;
    const int blocks = quick() ? 10 : 40;

    QThread thread;
    std::vector<std::unique_ptr<Sender>> senders;
    std::vector<std::unique_ptr<Receiver>> rs;
    for (int i = 0; i < Senders; ++i)
        senders.push_back(std::make_unique<Sender>());
    for (int i = 0; i < receivers; ++i) {
        rs.push_back(std::make_unique<Receiver>());
        rs.back()->moveToThread(&thread);
    }
    thread.start();

    std::vector<QMetaObject::Connection> handles(Senders);
    std::vector<double> nsPerPair[std::size(Configs)];
    for (int b = -1; b < blocks; ++b) { // block -1 warms up
        for (size_t k = 0; k < std::size(Configs); ++k) {
            const size_t c = (k + size_t(qMax(b, 0))) % std::size(Configs);
            QElapsedTimer t;
            t.start();
            for (int i = 0; i < Senders; ++i)
                handles[i] = connectOne(Configs[c], senders[i].get(), rs[i % receivers].get());
            for (int i = 0; i < Senders; ++i)
                QObject::disconnect(handles[i]);
            const qint64 ns = t.nsecsElapsed();
            QVERIFY(std::all_of(handles.begin(), handles.end(),
                                [](const QMetaObject::Connection &h) { return !h; }));
            if (b >= 0)
                nsPerPair[c].push_back(double(ns) / Senders);
        }
    }
    thread.quit();
    thread.wait();

    qInfo("connect + disconnect, %d senders -> %d receivers in another thread, median of %d "
          "blocks:",
          Senders, receivers, blocks);
    for (size_t c = 0; c < std::size(Configs); c += 2) {
        const double qtNs = median(nsPerPair[c]);
        const double funnelNs = median(nsPerPair[c + 1]);
        qInfo("  %-8s Qt queued %7.0f ns/pair (%6.0f k/s)   funnel %7.0f ns/pair (%6.0f k/s)   "
              "funnel/Qt %.2fx time",
              Configs[c].kind == Kind::Typed ? "typed" : "functor", qtNs, 1e6 / qtNs, funnelNs,
              1e6 / funnelNs, funnelNs / qtNs);
        for (size_t k : { c, c + 1 }) {
            BenchCsv::write("connect", Configs[k].series, 0, receivers, "pairs_per_s",
                            1e9 / median(nsPerPair[k]));
        }
        BenchCsv::write("connect", Configs[c + 1].series, 0, receivers, "time_ratio",
                        funnelNs / qtNs);
    }
}

void tst_BenchConnect::memoryPerConnection_data()
{
    QTest::addColumn<int>("receivers");
    QTest::newRow("10 receivers") << 10;
    QTest::newRow("a receiver per sender") << 0;
}

// In the child process: bytes per connection of one row, printed as "<connected> <left>".
static int memoryChild(const QByteArray &row)
{
    const QList<QByteArray> f = row.split(',');
    if (f.size() != 3 || f[0].toInt() < 0 || f[0].toInt() >= int(std::size(Configs)))
        return 2;
    const Config &config = Configs[f[0].toInt()];
    const int receivers = f[1].toInt();
    const int n = f[2].toInt();
    // Never started: the receivers still live in another thread, and the main thread may
    // delete them.
    QThread thread;
    {
        // The global funnel (its relay thread, queue and pools) exists before anything is
        // measured.
        Sender s;
        Receiver r;
        r.moveToThread(&thread);
        QObject::disconnect(connectOne(config, &s, &r));
    }
    std::vector<std::unique_ptr<Sender>> senders;
    std::vector<std::unique_ptr<Receiver>> rs;
    const qint64 empty = heapInUse();
    for (int i = 0; i < n; ++i)
        senders.push_back(std::make_unique<Sender>());
    for (int i = 0; i < receivers; ++i) {
        rs.push_back(std::make_unique<Receiver>());
        rs.back()->moveToThread(&thread);
    }
    std::vector<QMetaObject::Connection> handles(n);
    const qint64 before = heapInUse();
    for (int i = 0; i < n; ++i)
        handles[i] = connectOne(config, senders[i].get(), rs[i % receivers].get());
    const qint64 connected = heapInUse();
    for (QMetaObject::Connection &h : handles) {
        if (!QObject::disconnect(h))
            return 3;
    }
    handles = {};
    senders.clear();
    rs.clear();
    const qint64 after = heapInUse();
    std::printf("%.1f %.1f\n", double(connected - before) / n, double(after - empty) / n);
    return 0;
}

// Each row in a process of its own, so that no row inherits the capacity of containers another
// row grew.
void tst_BenchConnect::memoryPerConnection()
{
    QFETCH(int, receivers);
    const int n = quick() ? 5000 : 20000;
    if (!receivers)
        receivers = n;

    qInfo("heap per connection, %d senders -> %d receivers in another thread (fresh objects):", n,
          receivers);
    double perConnection[std::size(Configs)] = {};
    for (size_t c = 0; c < std::size(Configs); ++c) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QString::fromLatin1(MemoryVariable),
                   QStringLiteral("%1,%2,%3").arg(c).arg(receivers).arg(n));
        p.setProcessEnvironment(env);
        p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        p.start(QCoreApplication::applicationFilePath(), {});
        QVERIFY(p.waitForFinished(600 * 1000));
        QCOMPARE(p.exitCode(), 0);
        double left = 0;
        QCOMPARE(std::sscanf(p.readAllStandardOutput().constData(), "%lf %lf", &perConnection[c],
                             &left),
                 2);
        qInfo("  %-18s %6.0f bytes per connection; left once cut and deleted: %+.0f bytes per "
              "connection",
              Configs[c].series, perConnection[c], left);
        BenchCsv::write("connect", Configs[c].series, 0, receivers, "bytes_per_connection",
                        perConnection[c]);
    }
    for (size_t c = 0; c < std::size(Configs); c += 2) {
        qInfo("  %-8s funnel/Qt %.2fx memory", Configs[c].kind == Kind::Typed ? "typed" : "functor",
              perConnection[c + 1] / perConnection[c]);
        BenchCsv::write("connect", Configs[c + 1].series, 0, receivers, "memory_ratio",
                        perConnection[c + 1] / perConnection[c]);
    }
}

// ---- destroyRace --------------------------------------------------------------------------

class RaceObject : public QObject
{
    Q_OBJECT
public Q_SLOTS:
    void slot1() {}
    void slot2() {}
    void slot3() {}
    void slot4() {}
    void slot5() {}
    void slot6() {}
    void slot7() {}
Q_SIGNALS:
    void signal1();
    void signal2();
    void signal3();
    void signal4();
    void signal5();
    void signal6();
    void signal7();
};

static const char *const RaceSlots[] = { SLOT(slot1()), SLOT(slot2()), SLOT(slot3()), SLOT(slot4()),
                                         SLOT(slot5()), SLOT(slot6()), SLOT(slot7()) };
static const char *const RaceSignals[] = { SIGNAL(signal1()), SIGNAL(signal2()), SIGNAL(signal3()),
                                           SIGNAL(signal4()), SIGNAL(signal5()), SIGNAL(signal6()),
                                           SIGNAL(signal7()) };
using RaceMember = void (RaceObject::*)();
static const RaceMember RaceSlotsPMF[] = { &RaceObject::slot1, &RaceObject::slot2,
                                           &RaceObject::slot3, &RaceObject::slot4,
                                           &RaceObject::slot5, &RaceObject::slot6,
                                           &RaceObject::slot7 };
static const RaceMember RaceSignalsPMF[] = { &RaceObject::signal1, &RaceObject::signal2,
                                             &RaceObject::signal3, &RaceObject::signal4,
                                             &RaceObject::signal5, &RaceObject::signal6,
                                             &RaceObject::signal7 };

struct RaceFunctor
{
    void operator()() const {}
};

// The connects and disconnects of the race, through Qt (queued) or the funnel: what a port
// changes, line for line.
struct RaceConnector
{
    bool funnel;

    void connectByName(RaceObject *s, const char *sig, RaceObject *r, const char *slot) const
    {
        if (funnel)
            QtFastConnect::connect(s, sig, r, slot);
        else
            QObject::connect(s, sig, r, slot, Qt::QueuedConnection);
    }
    void disconnectByName(RaceObject *s, const char *sig, RaceObject *r, const char *slot) const
    {
        if (funnel)
            QtFastConnect::disconnect(s, sig, r, slot);
        else
            QObject::disconnect(s, sig, r, slot);
    }
    void connectMember(RaceObject *s, RaceMember sig, RaceObject *r, RaceMember slot) const
    {
        if (funnel)
            QtFastConnect::connect(s, sig, r, slot);
        else
            QObject::connect(s, sig, r, slot, Qt::QueuedConnection);
    }
    QMetaObject::Connection connectFunctor(RaceObject *s, RaceMember sig, QObject *context) const
    {
        if (funnel)
            return QtFastConnect::connect(s, sig, context, RaceFunctor());
        return QObject::connect(s, sig, context, RaceFunctor(), Qt::QueuedConnection);
    }
};

class RaceThread : public QThread
{
public:
    RaceObject **objects = nullptr;
    int number = 0;
    RaceConnector connector;

    void run() override
    {
        const RaceConnector &c = connector;
        for (int i = number - 1; i >= 0; --i) {
            const int nAlive = i + 1;
            c.connectByName(objects[((i + 1) * 31) % nAlive], RaceSignals[(12 * i) % 7],
                            objects[((i + 2) * 37) % nAlive], RaceSlots[(15 * i + 2) % 7]);
            c.disconnectByName(objects[((i + 1) * 31) % nAlive], RaceSignals[(12 * i) % 7],
                               objects[((i + 2) * 37) % nAlive], RaceSlots[(15 * i + 2) % 7]);
            c.connectMember(objects[((i + 4) * 41) % nAlive], RaceSignalsPMF[(18 * i) % 7],
                            objects[((i + 5) * 43) % nAlive], RaceSlotsPMF[(19 * i + 2) % 7]);
            QObject::disconnect(objects[((i + 4) * 41) % nAlive], RaceSignalsPMF[(18 * i) % 7],
                                objects[((i + 5) * 43) % nAlive], RaceSlotsPMF[(19 * i + 2) % 7]);
            RaceObject *const sender = objects[((i + 5) * 43) % nAlive];
            const QMetaObject::Connection f =
                    c.connectFunctor(sender, RaceSignalsPMF[(9 * i + 1) % 7], sender);
            for (int s = 0; s < 7; ++s)
                Q_EMIT(objects[i]->*RaceSignalsPMF[s])();
            QObject::disconnect(f);
            QObject::disconnect(objects[i], RaceSignalsPMF[(10 * i + 5) % 7], nullptr, nullptr);
            QObject::disconnect(objects[i], RaceSignals[(11 * i + 6) % 7], nullptr, nullptr);
            QObject::disconnect(objects[i], nullptr, objects[(i * 17 + 6) % nAlive], nullptr);
            if (i % 4 == 1)
                QObject::disconnect(objects[i], nullptr, nullptr, nullptr);
            delete objects[i];
        }
        QCoreApplication::processEvents(); // what is still queued for this thread
    }
};

// In the child process: one run, one line on stdout.
static int destroyRaceChild(const QByteArray &row)
{
    const QList<QByteArray> f = row.split(',');
    if (f.size() != 3)
        return 2;
    const bool funnel = f[0] == "funnel";
    const int threadCount = f[1].toInt();
    const int perThread = f[2].toInt();
    const int objectCount = threadCount * perThread;
    const RaceConnector c { funnel };

    const double rssBefore = ProcessMemory::residentBytes();
    std::vector<RaceObject *> objects(static_cast<size_t>(objectCount));
    std::vector<std::unique_ptr<RaceThread>> threads;
    for (int t = 0; t < threadCount; ++t) {
        threads.push_back(std::make_unique<RaceThread>());
        threads.back()->objects = objects.data() + t * perThread;
        threads.back()->number = perThread;
        threads.back()->connector = c;
    }
    for (int i = 0; i < objectCount; ++i) {
        objects[i] = new RaceObject;
        objects[i]->moveToThread(threads[i / perThread].get());
    }

    QElapsedTimer total;
    total.start();
    qint64 connects = 0;
    for (int i = 0; i < objectCount * 17; ++i) {
        c.connectByName(objects[(i * 13) % objectCount], RaceSignals[(2 * i) % 7],
                        objects[((i + 2) * 17) % objectCount], RaceSlots[(3 * i + 2) % 7]);
        c.connectByName(objects[((i + 6) * 23) % objectCount], RaceSignals[(5 * i + 4) % 7],
                        objects[((i + 8) * 41) % objectCount], RaceSlots[(i + 6) % 7]);
        c.connectMember(objects[(i * 67) % objectCount], RaceSignalsPMF[(2 * i) % 7],
                        objects[((i + 1) * 71) % objectCount], RaceSlotsPMF[(3 * i + 2) % 7]);
        // Qt's connects this functor without a context; a funnel connection needs one.
        QObject *const context = objects[((i + 5) * 79) % objectCount];
        c.connectFunctor(objects[((i + 3) * 73) % objectCount], RaceSignalsPMF[(5 * i + 4) % 7],
                         context);
        connects += 4;
    }
    const qint64 connectNs = total.nsecsElapsed();
    const double rssConnected = ProcessMemory::residentBytes();

    QElapsedTimer threadTime;
    threadTime.start();
    for (auto &t : threads)
        t->start();
    for (auto &t : threads) {
        if (!t->wait(600 * 1000))
            return 3;
    }
    const qint64 threadsNs = threadTime.nsecsElapsed();
    const qint64 totalNs = total.nsecsElapsed();
    threads.clear();
    if (funnel)
        QFunnel::globalInstance()->flush();
    std::printf("connects %lld connect_ms %.0f threads_ms %.0f total_ms %.0f rss_connected_mib "
                "%.1f peak_rss_mib %.1f\n",
                static_cast<long long>(connects), connectNs / 1e6, threadsNs / 1e6, totalNs / 1e6,
                (rssConnected - rssBefore) / 1048576.0,
                (ProcessMemory::peakResidentBytes() - rssBefore) / 1048576.0);
    return 0;
}

struct RaceResult
{
    double connectMs = 0, threadsMs = 0, totalMs = 0, peakMib = 0;
    qint64 connects = 0;
};

static bool runRaceChild(const QByteArray &row, RaceResult *out)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromLatin1(DestroyRaceVariable), QString::fromLatin1(row));
    p.setProcessEnvironment(env);
    p.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    p.start(QCoreApplication::applicationFilePath(), {});
    if (!p.waitForFinished(1200 * 1000) || p.exitCode() != 0)
        return false;
    long long connects = 0;
    double rssConnected = 0;
    const QByteArray line = p.readAllStandardOutput().trimmed();
    if (std::sscanf(line.constData(),
                    "connects %lld connect_ms %lf threads_ms %lf total_ms %lf rss_connected_mib "
                    "%lf peak_rss_mib %lf",
                    &connects, &out->connectMs, &out->threadsMs, &out->totalMs, &rssConnected,
                    &out->peakMib)
        != 6) {
        return false;
    }
    out->connects = connects;
    return true;
}

void tst_BenchConnect::destroyRace()
{
    const int threadCount = 10;
    const int perThread = quick() ? 1000 : 2777;
    const int repeat = qMax(1, qEnvironmentVariableIntValue("QFC_BENCH_REPEAT"));
    std::vector<RaceResult> results[2];
    for (int r = 0; r < repeat; ++r) {
        for (int k = 0; k < 2; ++k) {
            const int which = (k + r) % 2; // 0: Qt, 1: funnel
            const QByteArray row = QByteArray(which ? "funnel" : "qt") + ','
                    + QByteArray::number(threadCount) + ',' + QByteArray::number(perThread);
            RaceResult res;
            QVERIFY2(runRaceChild(row, &res), row.constData());
            results[which].push_back(res);
        }
    }
    auto med = [&](int which, double RaceResult::*field) {
        std::vector<double> v;
        for (const RaceResult &res : results[which])
            v.push_back(res.*field);
        return median(v);
    };
    qInfo("destroyRace, %d threads x %d objects, %lld connects from the main thread, median of %d:",
          threadCount, perThread, static_cast<long long>(results[0].front().connects), repeat);
    const struct
    {
        const char *name;
        double RaceResult::*field;
        const char *metric;
    } fields[] = {
        { "main thread's connects, ms", &RaceResult::connectMs, "connect_ms" },
        { "threads, until all finished, ms", &RaceResult::threadsMs, "threads_ms" },
        { "total, ms", &RaceResult::totalMs, "total_ms" },
        { "peak RSS growth, MiB", &RaceResult::peakMib, "peak_rss_mib" },
    };
    for (const auto &f : fields) {
        const double qt = med(0, f.field);
        const double fn = med(1, f.field);
        qInfo("  %-32s Qt queued %8.1f   funnel %8.1f   funnel/Qt %.2fx", f.name, qt, fn, fn / qt);
        BenchCsv::write("destroyrace", "qt-queued", threadCount, perThread, f.metric, qt);
        BenchCsv::write("destroyrace", "funnel", threadCount, perThread, f.metric, fn);
    }
}

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsSet(DestroyRaceVariable)) {
        QCoreApplication app(argc, argv);
        return destroyRaceChild(qgetenv(DestroyRaceVariable));
    }
    if (qEnvironmentVariableIsSet(MemoryVariable)) {
        QCoreApplication app(argc, argv);
        return memoryChild(qgetenv(MemoryVariable));
    }
    QCoreApplication app(argc, argv);
    tst_BenchConnect tc;
    return QTest::qExec(&tc, argc, argv);
}

#include "tst_bench_connect.moc"
