// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Qt's tst_qobjectrace::destroyRace with funnel connections (issue 37): objects living in
// several threads, connected to each other across threads (by name, by member function and with
// functors) from the main thread; then each thread connects and disconnects more of its objects,
// emits every signal of each, disconnects it in the ways Qt's test does and deletes it, while the
// other threads do the same. Checks behaviour only (benchmarks/connect times it beside Qt): no
// crash, every emitted call delivered or counted as discarded, and every functor, with the
// route that holds it, destroyed once its connections are gone.

#include "countedvalue.h"
#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <atomic>
#include <memory>
#include <vector>

namespace {

std::atomic<quint64> g_slotRuns { 0 };

class RaceObject : public QObject
{
    Q_OBJECT
public Q_SLOTS:
    void slot1() { ++g_slotRuns; }
    void slot2() { ++g_slotRuns; }
    void slot3() { ++g_slotRuns; }
    void slot4() { ++g_slotRuns; }
    void slot5() { ++g_slotRuns; }
    void slot6() { ++g_slotRuns; }
    void slot7() { ++g_slotRuns; }
Q_SIGNALS:
    void signal1();
    void signal2();
    void signal3();
    void signal4();
    void signal5();
    void signal6();
    void signal7();
};

const char *const RaceSlots[] = { SLOT(slot1()), SLOT(slot2()), SLOT(slot3()), SLOT(slot4()),
                                  SLOT(slot5()), SLOT(slot6()), SLOT(slot7()) };
const char *const RaceSignals[] = { SIGNAL(signal1()), SIGNAL(signal2()), SIGNAL(signal3()),
                                    SIGNAL(signal4()), SIGNAL(signal5()), SIGNAL(signal6()),
                                    SIGNAL(signal7()) };
using RaceMember = void (RaceObject::*)();
const RaceMember RaceSlotsPMF[] = { &RaceObject::slot1, &RaceObject::slot2, &RaceObject::slot3,
                                    &RaceObject::slot4, &RaceObject::slot5, &RaceObject::slot6,
                                    &RaceObject::slot7 };
const RaceMember RaceSignalsPMF[] = { &RaceObject::signal1, &RaceObject::signal2,
                                      &RaceObject::signal3, &RaceObject::signal4,
                                      &RaceObject::signal5, &RaceObject::signal6,
                                      &RaceObject::signal7 };

// A functor whose copies are counted: each one lives in a connection's slot, so the count
// returns to zero only if every such slot (and the route holding it) was destroyed.
struct RaceFunctor
{
    CountedValue counted;
    void operator()() const { ++g_slotRuns; }
};

class RaceThread : public QThread
{
public:
    QFunnel *funnel = nullptr;
    RaceObject **objects = nullptr;
    int number = 0;

    void run() override
    {
        for (int i = number - 1; i >= 0; --i) {
            const int nAlive = i + 1;
            RaceObject *const a = objects[((i + 1) * 31) % nAlive];
            RaceObject *const b = objects[((i + 2) * 37) % nAlive];
            QtFastConnect::connect(funnel, a, RaceSignals[(12 * i) % 7], b,
                                   RaceSlots[(15 * i + 2) % 7]);
            QtFastConnect::disconnect(a, RaceSignals[(12 * i) % 7], b, RaceSlots[(15 * i + 2) % 7]);
            RaceObject *const c = objects[((i + 4) * 41) % nAlive];
            RaceObject *const d = objects[((i + 5) * 43) % nAlive];
            QtFastConnect::connect(funnel, c, RaceSignalsPMF[(18 * i) % 7], d,
                                   RaceSlotsPMF[(19 * i + 2) % 7]);
            QObject::disconnect(c, RaceSignalsPMF[(18 * i) % 7], d, RaceSlotsPMF[(19 * i + 2) % 7]);
            const QMetaObject::Connection f = QtFastConnect::connect(
                    funnel, d, RaceSignalsPMF[(9 * i + 1) % 7], d, RaceFunctor());
            for (int s = 0; s < 7; ++s)
                Q_EMIT(objects[i]->*RaceSignalsPMF[s])();
            QObject::disconnect(f);
            QObject::disconnect(objects[i], RaceSignalsPMF[(10 * i + 5) % 7], nullptr, nullptr);
            QObject::disconnect(objects[i], RaceSignals[(11 * i + 6) % 7], nullptr, nullptr);
            QObject::disconnect(objects[i], nullptr, objects[(i * 17 + 6) % nAlive], nullptr);
            if (i % 4 == 1)
                QObject::disconnect(objects[i], nullptr, nullptr, nullptr);
            delete objects[i];
            // Unlike Qt's test, run this thread's calls now and then, so that some are delivered
            // while other threads delete their receivers.
            if (i % 16 == 0)
                QCoreApplication::processEvents();
        }
        QtFastConnect::flush();
        QCoreApplication::processEvents();
#if defined(__SANITIZE_THREAD__)
        __tsan_release(this); // QThread::wait() orders it with Qt's own wait condition
#endif
    }
};

} // namespace

class tst_DestroyRace : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void destroyRace();
};

void tst_DestroyRace::destroyRace()
{
    const int threadCount = 6;
    const int perThread = QfcTest::Sanitized ? 100 : 400;
    const int objectCount = threadCount * perThread;
    const int liveBefore = CountedValue::live;
    g_slotRuns = 0;
    QFunnel funnel;
    {
        std::vector<RaceObject *> objects(static_cast<size_t>(objectCount));
        std::vector<std::unique_ptr<RaceThread>> threads;
        for (int t = 0; t < threadCount; ++t) {
            threads.push_back(std::make_unique<RaceThread>());
            threads.back()->funnel = &funnel;
            threads.back()->objects = objects.data() + t * perThread;
            threads.back()->number = perThread;
        }
        for (int i = 0; i < objectCount; ++i) {
            objects[i] = new RaceObject;
            objects[i]->moveToThread(threads[i / perThread].get());
        }
        // Qt's test connects 17 times per object and kind; a quarter of that here.
        for (int i = 0; i < objectCount * 4; ++i) {
            QVERIFY(QtFastConnect::connect(
                    &funnel, objects[(i * 13) % objectCount], RaceSignals[(2 * i) % 7],
                    objects[((i + 2) * 17) % objectCount], RaceSlots[(3 * i + 2) % 7]));
            QVERIFY(QtFastConnect::connect(
                    &funnel, objects[((i + 6) * 23) % objectCount], RaceSignals[(5 * i + 4) % 7],
                    objects[((i + 8) * 41) % objectCount], RaceSlots[(i + 6) % 7]));
            QVERIFY(QtFastConnect::connect(
                    &funnel, objects[(i * 67) % objectCount], RaceSignalsPMF[(2 * i) % 7],
                    objects[((i + 1) * 71) % objectCount], RaceSlotsPMF[(3 * i + 2) % 7]));
            QVERIFY(QtFastConnect::connect(&funnel, objects[((i + 3) * 73) % objectCount],
                                           RaceSignalsPMF[(5 * i + 4) % 7],
                                           objects[((i + 5) * 79) % objectCount], RaceFunctor()));
        }
        QVERIFY(CountedValue::live > liveBefore);
        for (auto &t : threads)
            t->start();
        for (auto &t : threads) {
            QVERIFY(t->wait(QDeadlineTimer(std::chrono::minutes(5))));
#if defined(__SANITIZE_THREAD__)
            __tsan_acquire(t.get()); // run()'s release: the thread is done with its members
#endif
        }
    }

    // Calls the relay routed to receivers that died meanwhile are dropped in the main thread.
    funnel.flush();
    QTRY_COMPARE_WITH_TIMEOUT(funnel.pendingCalls(), qsizetype(0), 10000);
    const QFunnel::Statistics s = funnel.statistics();
    qInfo("emitted %llu, delivered %llu, discarded %llu", s.emitted, s.delivered, s.discarded);
    QVERIFY(s.emitted > 0);
    QVERIFY(s.delivered > 0);
    QCOMPARE(s.dropped, quint64(0));
    QCOMPARE(s.coalesced, quint64(0));
    QCOMPARE(s.delivered, g_slotRuns.load());
    QCOMPARE(s.emitted, s.delivered + s.discarded);
    // Every object is gone, with it every connection, and with those every functor.
    QCOMPARE(CountedValue::live.load(), liveBefore);
}

QTEST_GUILESS_MAIN(tst_DestroyRace)

#include "tst_destroyrace.moc"
