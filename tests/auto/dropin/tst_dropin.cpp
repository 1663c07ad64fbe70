// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Drop-in fidelity with Qt::QueuedConnection where the two once differed: calls follow their
// receiver across moveToThread() (old thread finished, old thread blocked, a flood racing
// 1,000 moves), QObject::disconnect() by signature, blocked producers that sleep, and the
// corners of thread lifetime (invoke to a finished thread, a receiver moved to a finished
// thread, emitting from thread_local destructors, connecting while the receiver moves).

#include "eventloopthread.h"
#include "movableobject.h"
#include "sanitizers.h"
#include "threadlocaldestructors.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qfile.h>
#include <QtCore/qscopeguard.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qset.h>
#include <QtCore/qthread.h>
#include <QtTest/qtest.h>

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#ifdef Q_OS_LINUX
#include <sys/syscall.h>
#include <unistd.h>
#endif

class Sender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(int v);
    void sequenced(int producer, quint64 seq);
};

// An argument that notes the threads its copies (the ones a queued call stores) are destroyed in.
struct Probe
{
    static inline std::atomic<int> copies { 0 };
    static inline std::atomic<int> destroyedCopies { 0 };
    static inline std::mutex lock;
    static inline QSet<Qt::HANDLE> threads; // guarded by lock
    bool copy = false;
    bool noted = true; // false: not counted
    Probe() = default;
    explicit Probe(bool noted) : noted(noted) {}
    Probe(const Probe &other) : copy(true), noted(other.noted)
    {
        if (noted)
            copies.fetch_add(1, std::memory_order_relaxed);
    }
    Probe &operator=(const Probe &) = default;
    ~Probe()
    {
        if (!copy || !noted)
            return;
        {
            std::lock_guard<std::mutex> locker(lock);
            threads.insert(QThread::currentThreadId());
        }
        destroyedCopies.fetch_add(1, std::memory_order_release);
    }
};
Q_DECLARE_METATYPE(Probe)

class ProbeSender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void probe(const Probe &p);
};

class ProbeReceiver : public QObject
{
    Q_OBJECT
public:
    std::atomic<Qt::HANDLE> ranIn { nullptr };
    std::atomic<bool> *destroyed = nullptr;
    ~ProbeReceiver() override
    {
        if (destroyed)
            destroyed->store(true, std::memory_order_release);
    }
    void onProbe(const Probe &)
    {
        ranIn.store(QThread::currentThreadId(), std::memory_order_relaxed);
    }
};

// Where the dead-receiver tests start: a funnel, and a receiver living in a worker thread
// (deleted there by the test).
struct ProbeFixture
{
    QFunnel funnel;
    EventLoopThread worker;
    ProbeSender sender;
    ProbeReceiver *receiver = new ProbeReceiver;
    ProbeFixture()
    {
        qRegisterMetaType<Probe>();
        worker.start();
        receiver->moveToThread(&worker);
    }
};

// A test row's probe connection: the funnel's, or Qt's queued one (the oracle).
static bool connectProbe(bool funnel, QFunnel *f, ProbeSender *sender, ProbeReceiver *receiver)
{
    if (funnel) {
        return bool(QtFastConnect::connect(f, sender, &ProbeSender::probe, receiver,
                                           &ProbeReceiver::onProbe));
    }
    return bool(QObject::connect(sender, &ProbeSender::probe, receiver, &ProbeReceiver::onProbe,
                                 Qt::QueuedConnection));
}

static void resetProbes()
{
    Probe::copies = 0;
    Probe::destroyedCopies = 0;
    std::lock_guard<std::mutex> locker(Probe::lock);
    Probe::threads.clear();
}

// Empty if every argument copy was destroyed in one of the allowed threads; else says in how
// many others, and whether suspect (named so) is among them.
static QByteArray copiesDestroyedElsewhere(std::initializer_list<Qt::HANDLE> allowed,
                                           Qt::HANDLE suspect, const char *suspectName)
{
    std::lock_guard<std::mutex> locker(Probe::lock);
    QSet<Qt::HANDLE> elsewhere = Probe::threads;
    for (Qt::HANDLE thread : allowed)
        elsewhere.remove(thread);
    if (elsewhere.isEmpty())
        return {};
    return QByteArray("argument copies destroyed in ") + QByteArray::number(elsewhere.size())
            + " other threads (" + (elsewhere.contains(suspect) ? "" : "not ") + suspectName
            + (elsewhere.contains(suspect) ? " among them)" : ")");
}

class Receiver : public MovableObject
{
    Q_OBJECT
public:
    std::atomic<int> calls { 0 };
    std::atomic<int> lastValue { -1 };
    std::atomic<QThread *> lastThread { nullptr };

    static constexpr int Producers = 4;
    std::array<std::atomic<quint64>, Producers> next {};
    std::atomic<quint64> received { 0 };
    std::atomic<quint64> outOfOrder { 0 };

public Q_SLOTS:
    void onValue(int v)
    {
        lastValue = v;
        lastThread = QThread::currentThread();
        ++calls;
    }
    void onBatch(const QList<int> &values) { calls += int(values.size()); }
    void onSequenced(int producer, quint64 seq)
    {
        // Relaxed: the slot runs in one thread at a time; Qt's locks order the moves.
        if (next[producer].load(std::memory_order_relaxed) != seq)
            outOfOrder.fetch_add(1, std::memory_order_relaxed);
        next[producer].store(seq + 1, std::memory_order_relaxed);
        received.fetch_add(1, std::memory_order_relaxed);
    }
};

// Starts threads and returns a new receiver living in the first. Each thread then acquires
// what this thread did so far (the receiver's construction included), for ThreadSanitizer: the
// receiver reaches them through Qt's moveToThread(), which it cannot see.
template<std::size_t N>
static Receiver *receiverAmong(std::array<EventLoopThread, N> &threads)
{
    for (EventLoopThread &t : threads)
        t.start();
    auto *r = new Receiver;
    r->moveToThread(&threads[0]);
    for (EventLoopThread &t : threads) {
        QObject anchor;
        anchor.moveToThread(&t);
        synchronizeWithItsThread(&anchor);
    }
    return r;
}

class tst_DropIn : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void connectThenMoveOldThreadFinished();
    void pendingCallsMoveWithBlockedOldThread();
    void parkedRateLimitedCallMovesWithBlockedOldThread();
    void deadReceiversArgumentsDestroyedInItsLastThread_data();
    void deadReceiversArgumentsDestroyedInItsLastThread();
    void dyingReceiversArgumentsDestroyedInItsLastThread_data();
    void dyingReceiversArgumentsDestroyedInItsLastThread();
    void orderAcrossThousandMoves();
    void disconnectBySignature();
    void blockedProducerSleeps();
    void invokeToFinishedThreadRefused();
    void invokeRefusedOnceItsThreadFinished_data();
    void invokeRefusedOnceItsThreadFinished();
    void invokeChecksReceiverClass();
    void invokeWhoseArgumentCopyThrows();
    void movedToFinishedThreadThenDeleted();
    void emitFromThreadLocalDestructor();
    void connectWhileReceiverMoves();
};

// The reproduction: the most common worker pattern. The object is made in a worker,
// connected there, handed to the main thread; the worker returns; main emits.
void tst_DropIn::connectThenMoveOldThreadFinished()
{
    QFunnel funnel;
    // Handed over through atomics ThreadSanitizer sees (QThread::wait() synchronizes inside Qt).
    std::atomic<Receiver *> made { nullptr };
    std::unique_ptr<QThread> worker(QThread::create([&] {
        auto *r = new Receiver;
        QtFastConnect::connect(&funnel, r, &Receiver::destroyed, r,
                               [] {}); // an unrelated connection, as apps have
        r->moveToThread(QCoreApplication::instance()->thread());
        made.store(r, std::memory_order_release);
    }));
    auto sender = std::make_unique<Sender>();
    worker->start();
    QVERIFY(worker->wait(10000));
    Receiver *o = made.load(std::memory_order_acquire);
    QVERIFY(o);
    QVERIFY(QtFastConnect::connect(&funnel, sender.get(), &Sender::value, o, &Receiver::onValue));
    worker.reset();
    Q_EMIT sender->value(7);
    QTest::qWait(500);
    QCOMPARE(o->calls.load(), 1);
    QCOMPARE(o->lastThread.load(), QThread::currentThread());

    // Connected while it lived in the worker, moved, worker gone: the same.
    std::atomic<Receiver *> made2 { nullptr };
    std::unique_ptr<QThread> worker2(QThread::create([&] {
        auto *r = new Receiver;
        QtFastConnect::connect(&funnel, sender.get(), &Sender::value, r, &Receiver::onValue);
        r->moveToThread(QCoreApplication::instance()->thread());
        made2.store(r, std::memory_order_release);
    }));
    worker2->start();
    QVERIFY(worker2->wait(10000));
    worker2.reset();
    Receiver *p = made2.load(std::memory_order_acquire);
    QVERIFY(p);
    Q_EMIT sender->value(8);
    QTest::qWait(500);
    QCOMPARE(p->calls.load(), 1);
    QCOMPARE(p->lastValue.load(), 8);
    QCOMPARE(funnel.pendingCalls(), 0);
    delete o;
    delete p;
}

// Calls already pending when the receiver moves go with it, while the old thread is blocked.
// The hand-offs use static atomics and a capture-less functor: Qt's posted-event list and
// semaphores synchronize inside Qt, where ThreadSanitizer cannot see it.
static std::atomic<int> g_stage { 0 }; // 1: calls pending, 2: moved, 3: old thread released
static std::atomic<Receiver *> g_moving { nullptr };

void tst_DropIn::pendingCallsMoveWithBlockedOldThread()
{
    QFunnel funnel;
    Sender s;
    EventLoopThread old;
    old.start();
    auto *r = new Receiver;
    r->moveToThread(&old);
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, r, &Receiver::onValue));

    g_stage = 0;
    QMetaObject::invokeMethod(
            r,
            [] {
                while (g_stage.load(std::memory_order_acquire) < 1)
                    QThread::yieldCurrentThread(); // the calls below are pending for r by now
                g_moving.load(std::memory_order_acquire)
                        ->moveToThread(QCoreApplication::instance()->thread());
                g_stage.store(2, std::memory_order_release);
                while (g_stage.load(std::memory_order_acquire) < 3)
                    QThread::yieldCurrentThread(); // the old thread stays blocked
            },
            Qt::QueuedConnection);
    for (int i = 0; i < 100; ++i)
        Q_EMIT s.value(i);
    funnel.flush();
    g_moving.store(r, std::memory_order_release);
    g_stage.store(1, std::memory_order_release);
    while (g_stage.load(std::memory_order_acquire) < 2)
        QThread::yieldCurrentThread();
    QTRY_COMPARE_WITH_TIMEOUT(r->calls.load(), 100, 5000);
    QCOMPARE(r->lastValue.load(), 99);
    QCOMPARE(r->lastThread.load(), QThread::currentThread());
    g_stage.store(3, std::memory_order_release);
    delete r;
}

// Four producers number their calls while the receiver moves between three threads 1,000
// times: each call runs exactly once, in its producer's order.
void tst_DropIn::orderAcrossThousandMoves()
{
    QFunnel funnel;
    std::array<EventLoopThread, 3> threads;
    Receiver *r = receiverAmong(threads);
    std::array<Sender, Receiver::Producers> senders;
    for (Sender &s : senders) {
        QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::sequenced, r, &Receiver::onSequenced));
    }

    std::atomic<bool> stop { false };
    std::array<quint64, Receiver::Producers> emitted {};
    std::vector<std::thread> producers;
    for (int p = 0; p < Receiver::Producers; ++p) {
        producers.emplace_back([&, p] {
            quint64 i = 0;
            // At least a few calls between any two moves, however the threads are scheduled.
            for (; !stop.load(std::memory_order_relaxed) || i < 1000; ++i) {
                Q_EMIT senders[p].sequenced(p, i);
                if ((i & 255) == 0)
                    std::this_thread::yield();
            }
            emitted[p] = i;
        });
    }
    for (int move = 1; move <= 1000; ++move)
        r->moveFromItsThread(&threads[move % 3]);
    stop = true;
    for (std::thread &t : producers)
        t.join();

    quint64 total = 0;
    for (quint64 n : emitted)
        total += n;
    QTRY_COMPARE_WITH_TIMEOUT(r->received.load(), total, 60000);
    QCOMPARE(r->outOfOrder.load(), 0u);
    for (int p = 0; p < Receiver::Producers; ++p)
        QCOMPARE(r->next[p].load(), emitted[p]);
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    const QFunnel::Statistics st = funnel.statistics();
    QCOMPARE(st.delivered, total);
    QCOMPARE(st.dropped + st.discarded + st.coalesced, 0u);
    // Cut the connections first: the receiver's destructor, in its thread, would otherwise
    // look at senders this thread destroys (Qt's locks order that, ThreadSanitizer cannot see).
    for (Sender &s : senders)
        s.disconnect();
    deleteLaterInItsThread(r);
}

// Existing code that disconnects with QObject::disconnect(sender, &S::sig, receiver, &R::slot)
// keeps working after its connect switched to QtFastConnect::connect.
void tst_DropIn::disconnectBySignature()
{
    QFunnel funnel;
    Sender s;
    Receiver r;
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, &r, &Receiver::onValue));
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::sequenced, &r, &Receiver::onSequenced));
    // Another slot of the same receiver is not this one.
    QVERIFY(!QObject::disconnect(&s, &Sender::value, &r, &Receiver::moveToTarget));
    QVERIFY(QObject::disconnect(&s, &Sender::value, &r, &Receiver::onValue));
    QVERIFY(!QObject::disconnect(&s, &Sender::value, &r, &Receiver::onValue)); // gone
    Q_EMIT s.value(1);
    funnel.flush();
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 0);

    // The forms that name no slot find funnel connections too.
    QVERIFY(QObject::disconnect(&s, SIGNAL(sequenced(int, quint64)), &r, nullptr));
    Q_EMIT s.sequenced(0, 0);
    funnel.flush();
    QCoreApplication::processEvents();
    QCOMPARE(r.received.load(), 0u);

    // A functor connection compares equal to no slot, as with QObject::connect().
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, &r, [&r](int v) { r.onValue(v); }));
    QVERIFY(!QObject::disconnect(&s, &Sender::value, &r, &Receiver::onValue));
    Q_EMIT s.value(2);
    QTRY_COMPARE(r.calls.load(), 1);
}

#ifdef Q_OS_LINUX
static qint64 voluntarySwitches(long tid)
{
    QFile f(QStringLiteral("/proc/self/task/%1/status").arg(tid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray &line : f.readAll().split('\n')) {
        if (line.startsWith("voluntary_ctxt_switches:"))
            return line.mid(line.indexOf(':') + 1).trimmed().toLongLong();
    }
    return -1;
}
#endif

// The same for a RateLimitCalls call parked in the old thread, waiting for its interval: it
// runs in the new thread when due, while the old thread stays blocked (as a Qt::QueuedConnection
// call pending then runs there at once), not when the old thread runs its events again.
void tst_DropIn::parkedRateLimitedCallMovesWithBlockedOldThread()
{
    using namespace std::chrono_literals;
    QFunnel funnel;
    Sender s;
    EventLoopThread old;
    old.start();
    auto *r = new Receiver;
    r->moveToThread(&old);
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, r, &Receiver::onValue,
                                   QtFastConnect::rateLimit(200ms)));
    Q_EMIT s.value(1); // runs at once, and starts the interval
    QTRY_COMPARE_WITH_TIMEOUT(r->calls.load(), 1, 5000);
    Q_EMIT s.value(2); // parked in the old thread until the interval has passed
    funnel.flush();
    QTest::qWait(50); // delivered to the old thread, and parked there

    g_stage = 0;
    g_moving.store(r, std::memory_order_release);
    QMetaObject::invokeMethod(
            r,
            [] {
                g_moving.load(std::memory_order_acquire)
                        ->moveToThread(QCoreApplication::instance()->thread());
                g_stage.store(2, std::memory_order_release);
                while (g_stage.load(std::memory_order_acquire) < 3)
                    QThread::yieldCurrentThread(); // the old thread stays blocked
            },
            Qt::QueuedConnection);
    const auto releaseOldThread = qScopeGuard([r] {
        g_stage.store(3, std::memory_order_release);
        delete r;
    });
    while (g_stage.load(std::memory_order_acquire) < 2)
        QThread::yieldCurrentThread();
    QTRY_COMPARE_WITH_TIMEOUT(r->calls.load(), 2, 5000);
    QCOMPARE(r->lastValue.load(), 2);
    QCOMPARE(r->lastThread.load(), QThread::currentThread());
}

// Calls still on their way when their receiver is destroyed are dropped in the thread that
// destroyed it, as Qt destroys a dead receiver's queued calls in ~QObject's thread: their
// arguments' destructors never run in the application's thread, or in another producer inside
// an unrelated emit. (Qt destroys an emission's arguments in the emitting thread, inside that
// emit, when the emission races with the receiver's destruction: so may the funnel.) Producer
// A floods a receiver in a worker thread, which deletes it mid-flood; producer B floods another
// receiver through the same funnel meanwhile.
void tst_DropIn::deadReceiversArgumentsDestroyedInItsLastThread_data()
{
    QTest::addColumn<bool>("funnel");
    QTest::newRow("qt-queued") << false;
    QTest::newRow("funnel") << true;
}

void tst_DropIn::deadReceiversArgumentsDestroyedInItsLastThread()
{
    QFETCH(bool, funnel);
    if (QfcTest::ThreadSanitized && !funnel)
        QSKIP("Qt's queued path is not instrumented");
    ProbeFixture fixture;
    QFunnel &f = fixture.funnel;
    ProbeSender &sender = fixture.sender;
    ProbeReceiver *const r = fixture.receiver;
    QVERIFY(connectProbe(funnel, &f, &sender, r));
    resetProbes();
    std::atomic<bool> destroyed { false };
    r->destroyed = &destroyed;
    ProbeReceiver other; // destroyed after its thread finished (declared before it)
    EventLoopThread otherWorker;
    otherWorker.start();
    ProbeSender otherSender;
    other.moveToThread(&otherWorker);
    QVERIFY(connectProbe(funnel, &f, &otherSender, &other));
    std::atomic<bool> stop { false };
    std::atomic<Qt::HANDLE> producerA { nullptr };
    std::thread a([&] {
        producerA.store(QThread::currentThreadId(), std::memory_order_relaxed);
        const Probe p;
        // Paced, so that the funnel never fills (a producer waiting for room has nothing on its
        // way): calls are always in the relay's hands, also when the receiver dies.
        for (int i = 1; !stop.load(std::memory_order_relaxed); ++i) {
            Q_EMIT sender.probe(p);
            if (i % 64 == 0)
                std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        Q_EMIT sender.probe(p); // after the receiver's death: connected no more
    });
    std::thread b([&] {
        const Probe p(false);
        while (!stop.load(std::memory_order_relaxed))
            Q_EMIT otherSender.probe(p);
    });
    // A failed check returns early: the producers must still be stopped and joined.
    const auto joinProducers = [&] {
        stop.store(true, std::memory_order_relaxed);
        a.join();
        b.join();
    };
    auto joinOnFailure = qScopeGuard(joinProducers);
    // Deleted in its thread while the flood goes on, once some calls ran (how soon depends on
    // the machine: under Wine with other work beside, Qt's queued calls took over 50 ms).
    QTRY_VERIFY_WITH_TIMEOUT(r->ranIn.load(), 20000);
    const Qt::HANDLE receiverThread = r->ranIn.load();
    deleteLaterInItsThread(r);
    QTRY_VERIFY_WITH_TIMEOUT(destroyed.load(std::memory_order_acquire), 20000);
    QTest::qWait(50); // the relay routes what was on its way meanwhile
    joinOnFailure.dismiss();
    joinProducers();
    f.flush();
    QTRY_COMPARE_WITH_TIMEOUT(Probe::destroyedCopies.load(std::memory_order_acquire),
                              Probe::copies.load(), 20000);
    const QByteArray elsewhere = copiesDestroyedElsewhere(
            { receiverThread, producerA.load() }, QThread::currentThreadId(), "the main thread");
    QVERIFY2(elsewhere.isEmpty(), elsewhere.constData());
}

void tst_DropIn::dyingReceiversArgumentsDestroyedInItsLastThread_data()
{
    deadReceiversArgumentsDestroyedInItsLastThread_data();
}

// Calls that reach a receiver while ~QObject runs, between clearing its weak references and the
// funnel's destroyed() hook (a destroyed() slot connected earlier runs in between): Qt destroys
// them in the destroying thread, with the receiver's posted events. They used to be dropped by
// whichever thread found the receiver so: the application's thread for the relay's, the emitting
// thread for its flush().
void tst_DropIn::dyingReceiversArgumentsDestroyedInItsLastThread()
{
    QFETCH(bool, funnel);
    if (QfcTest::ThreadSanitized && !funnel)
        QSKIP("Qt's queued path is not instrumented");
    ProbeFixture fixture;
    QFunnel &f = fixture.funnel;
    ProbeSender &sender = fixture.sender;
    ProbeReceiver *const r = fixture.receiver;
    QSemaphore dying;
    QSemaphore emitted;
    std::atomic<Qt::HANDLE> destroyingThread { nullptr };
    // Before the funnel's connect, so before its hook.
    connect(
            r, &QObject::destroyed, r,
            [&] {
                destroyingThread.store(QThread::currentThreadId(), std::memory_order_relaxed);
                dying.release();
                emitted.tryAcquire(1, 20000);
            },
            Qt::DirectConnection);
    QVERIFY(connectProbe(funnel, &f, &sender, r));
    resetProbes();
    std::atomic<bool> destroyed { false };
    r->destroyed = &destroyed;
    deleteLaterInItsThread(r);
    QVERIFY(dying.tryAcquire(1, 20000));
    std::atomic<Qt::HANDLE> producer { nullptr };
    std::thread t([&] {
        producer.store(QThread::currentThreadId(), std::memory_order_relaxed);
        const Probe p;
        for (int i = 0; i < 100; ++i)
            Q_EMIT sender.probe(p);
        f.flush(); // the relay tried to wake the dying receiver
    });
    t.join();
    emitted.release();
    QTRY_VERIFY_WITH_TIMEOUT(destroyed.load(std::memory_order_acquire), 20000);
    QTRY_COMPARE_WITH_TIMEOUT(Probe::destroyedCopies.load(std::memory_order_acquire),
                              Probe::copies.load(), 20000);
    QCOMPARE_GT(Probe::copies.load(), 0);
    const QByteArray elsewhere =
            copiesDestroyedElsewhere({ destroyingThread.load(std::memory_order_relaxed) },
                                     producer.load(std::memory_order_relaxed), "the producer");
    QVERIFY2(elsewhere.isEmpty(), elsewhere.constData());
}

// A producer blocked on a full funnel (the default Block policy, no timeout) sleeps until room
// is made: it used to wake every millisecond. (It looks for stalled receivers every
// QFunnelAdmission::StallCheckMs, 100 ms; a receiver whose slot is running is not stalled.)
void tst_DropIn::blockedProducerSleeps()
{
#ifndef Q_OS_LINUX
    QSKIP("Counts the producer thread's context switches in /proc");
#else
    QFunnel funnel;
    funnel.setCapacity(1);
    Sender s;
    EventLoopThread receiverThread;
    receiverThread.start();
    Receiver r;
    r.moveToThread(&receiverThread);
    // The first call's slot holds the receiver's thread until the end: nothing makes room.
    QSemaphore entered;
    QSemaphore gate;
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, &r, [&](int v) {
        if (v == 1) {
            entered.release();
            gate.acquire();
        }
        r.onValue(v);
    }));

    std::atomic<long> tid { 0 };
    std::thread producer([&] {
        tid = long(syscall(SYS_gettid));
        Q_EMIT s.value(1); // takes the only credit
        Q_EMIT s.value(2); // blocks
    });
    auto release = qScopeGuard([&] {
        gate.release();
        producer.join();
    });
    QVERIFY(entered.tryAcquire(1, 20000));
    QTest::qSleep(200); // well inside the wait by now
    const qint64 before = voluntarySwitches(tid);
    QVERIFY(before >= 0);
    QTest::qSleep(1000);
    const qint64 wakeUps = voluntarySwitches(tid) - before;
    qInfo("blocked producer: %lld wake-ups in 1 s", static_cast<long long>(wakeUps));
    QVERIFY2(wakeUps < 20, QByteArray::number(wakeUps).constData());

    release.dismiss();
    gate.release();
    producer.join();
    QTRY_COMPARE(r.calls.load(), 2);
    QCOMPARE(r.lastValue.load(), 2);
#endif
}

// A base class destructor that runs the object's pending meta-call events: what the subclass
// was invoked for must not run any more (issue 21, 10). Connections checked the receiver's
// class already; invoke() did not.
class PumpingBase : public QObject
{
    Q_OBJECT
public:
    ~PumpingBase() override { QCoreApplication::sendPostedEvents(this, QEvent::MetaCall); }
};

class InvokedDerived : public PumpingBase
{
    Q_OBJECT
public:
    static inline std::atomic<int> calls { 0 };
    static inline std::atomic<int> callsAfterDestruction { 0 };
    bool destroyed = false;
    ~InvokedDerived() override { destroyed = true; }
    void slot()
    {
        ++calls;
        if (destroyed)
            ++callsAfterDestruction;
    }
};

class InvokedSubclass : public InvokedDerived
{
    Q_OBJECT
};

void tst_DropIn::invokeChecksReceiverClass()
{
    auto *d = new InvokedDerived;
    InvokedDerived::calls = 0;
    InvokedDerived::callsAfterDestruction = 0;
    QVERIFY(QtFastConnect::invoke(d, &InvokedDerived::slot));
    QTRY_COMPARE(InvokedDerived::calls.load(), 1); // a live receiver runs it
    QVERIFY(QtFastConnect::invoke(d, &InvokedDerived::slot));
    QtFastConnect::flush();
    delete d; // ~PumpingBase delivers the pending call, after ~InvokedDerived
    QCOMPARE(InvokedDerived::callsAfterDestruction.load(), 0);
    QCOMPARE(InvokedDerived::calls.load(), 1);

    // A receiver of a subclass of the member's class runs it; once that class's part is
    // destroyed, not.
    auto *s = new InvokedSubclass;
    QVERIFY(QtFastConnect::invoke(s, &InvokedDerived::slot));
    QTRY_COMPARE(InvokedDerived::calls.load(), 2);
    QVERIFY(QtFastConnect::invoke(s, &InvokedDerived::slot));
    QtFastConnect::flush();
    delete s;
    QCOMPARE(InvokedDerived::callsAfterDestruction.load(), 0);
    QCOMPARE(InvokedDerived::calls.load(), 2);
}

// An argument whose copy throws inside invoke(): the exception reaches the caller, and the
// reference invoke() took on its route is released (issue 21, 10). The invoking thread exits,
// so that its invoke cache lets go of the route too: a leaked reference then leaves the route
// unreachable, which LeakSanitizer reports (the ASan stage).
struct ThrowingCopy
{
    ThrowingCopy() = default;
    ThrowingCopy(const ThrowingCopy &) { throw std::runtime_error("copy"); }
};

void tst_DropIn::invokeWhoseArgumentCopyThrows()
{
    QFunnel funnel;
    QObject receiver;
    bool thrown = false;
    std::thread invoker([&] {
        const ThrowingCopy arg;
        try {
            QtFastConnect::invoke(
                    &funnel, &receiver, [](const ThrowingCopy &) {}, arg);
        } catch (const std::runtime_error &) {
            thrown = true;
        }
    });
    invoker.join();
    QVERIFY(thrown);
    // The receiver still gets what follows.
    int ran = 0;
    QVERIFY(QtFastConnect::invoke(&funnel, &receiver, [&ran] { ++ran; }));
    QTRY_COMPARE(ran, 1);
}

// invoke() checks its receiver as connect() does: a receiver whose thread has finished gets a
// warning and false, and no credit is taken for a call that could never run.
void tst_DropIn::invokeToFinishedThreadRefused()
{
    QFunnel funnel;
    QThread finished;
    finished.start();
    finished.quit();
    QVERIFY(finished.wait(10000));
    Receiver r;
    r.moveToThread(&finished);
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("thread that has finished"));
    QVERIFY(!QtFastConnect::invoke(&funnel, &r, &Receiver::onValue, 1));
    QCOMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.statistics().emitted, 0u);
}

// The same once the calling thread had invoked the receiver while its thread ran (the route is
// cached then): every later invoke is refused, none waits for ever. (A receiver moved to a thread
// that had finished already keeps its cached route: its calls wait there, as Qt's do.)
void tst_DropIn::invokeRefusedOnceItsThreadFinished_data()
{
    QTest::addColumn<bool>("batched");
    QTest::newRow("invoke") << false;
    QTest::newRow("invokeBatched") << true;
}

void tst_DropIn::invokeRefusedOnceItsThreadFinished()
{
    QFETCH(bool, batched);
    QFunnel funnel;
    EventLoopThread worker;
    worker.start();
    Receiver r;
    r.moveToThread(&worker);
    auto invoke = [&](int v) {
        return batched ? QtFastConnect::invokeBatched(&funnel, &r, &Receiver::onBatch, v)
                       : QtFastConnect::invoke(&funnel, &r, &Receiver::onValue, v);
    };
    for (int i = 0; i < 10; ++i)
        QVERIFY(invoke(i));
    QTRY_COMPARE(r.calls.load(), 10);
    worker.quit();
    QVERIFY(worker.wait(10000));
    worker.acquireRun();
    constexpr int Invokes = 100;
    for (int i = 0; i < Invokes; ++i)
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression("thread that has finished"));
    int accepted = 0;
    for (int i = 0; i < Invokes; ++i)
        accepted += invoke(i);
    QCOMPARE(accepted, 0);
    QCOMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.statistics().emitted, 10u);
}

// Calls pending for a receiver that moved to a thread that has finished wait there, as Qt's
// do; destroying the receiver frees them and gives their credits back.
void tst_DropIn::movedToFinishedThreadThenDeleted()
{
    QFunnel funnel;
    Sender s;
    QThread finished;
    finished.start();
    finished.quit();
    QVERIFY(finished.wait(10000));
    auto *r = new Receiver;
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, r, &Receiver::onValue));
    for (int i = 0; i < 10; ++i)
        Q_EMIT s.value(i);
    funnel.flush();
    r->moveToThread(&finished);
    QCoreApplication::processEvents();
    QCOMPARE(r->calls.load(), 0);
    QCOMPARE(funnel.pendingCalls(), 10);
    delete r;
    QCOMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.statistics().discarded, 10u);
}

// Emissions and invokes from a thread_local destructor that runs after the funnel's own
// thread-locals of that thread were destroyed.
struct LateEmitter
{
    QFunnel *funnel = nullptr;
    Sender *sender = nullptr;
    Receiver *receiver = nullptr;
    ~LateEmitter()
    {
        if (!sender)
            return;
        Q_EMIT sender->value(3);
        QtFastConnect::invoke(funnel, receiver, &Receiver::onValue, 4);
    }
};

void tst_DropIn::emitFromThreadLocalDestructor()
{
    QFC_SKIP_UNLESS_THREAD_LOCAL_DESTRUCTORS_WORK();
    QFunnel funnel;
    Sender s;
    Receiver r;
    QVERIFY(QtFastConnect::connect(&funnel, &s, &Sender::value, &r, &Receiver::onValue));
    std::thread t([&] {
        // Constructed before the funnel's thread-locals (first used by the emission below), so
        // destroyed after them.
        thread_local LateEmitter late;
        late.funnel = &funnel;
        late.sender = &s;
        late.receiver = &r;
        Q_EMIT s.value(1);
        QtFastConnect::invoke(&funnel, &r, &Receiver::onValue, 2);
    });
    t.join();
    QTRY_COMPARE(r.calls.load(), 4);
    QCOMPARE(r.lastValue.load(), 4); // in the thread's order
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(funnel.statistics().emitted, 4u);
}

// Connecting from one thread while the receiver's own thread moves it back and forth: every
// connect succeeds and every call arrives once.
void tst_DropIn::connectWhileReceiverMoves()
{
    QFunnel funnel;
    std::array<EventLoopThread, 2> threads;
    Receiver *r = receiverAmong(threads);
    Sender s;
    constexpr int Connects = 200;
    std::atomic<int> connected { 0 };
    std::thread connector([&] {
        for (int i = 0; i < Connects; ++i) {
            if (QtFastConnect::connect(&funnel, &s, &Sender::value, r, &Receiver::onValue))
                ++connected;
        }
    });
    for (int move = 1; move <= 200; ++move)
        r->moveFromItsThread(&threads[move % 2]);
    connector.join();
    QCOMPARE(connected.load(), Connects);
    Q_EMIT s.value(1);
    QTRY_COMPARE(r->calls.load(), Connects);
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    s.disconnect(); // as in orderAcrossThousandMoves()
    deleteLaterInItsThread(r);
}

QTEST_MAIN(tst_DropIn)
#include "tst_dropin.moc"
