// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// The queued-connection scenarios (numbered as in the README's comparison table), each run
// against Qt::QueuedConnection, which proves the test right, and against every QtFastConnect
// connect overload, in the same process. Where the funnel differs on purpose, the row asserts
// the funnel's documented behaviour.

#include "countedvalue.h"
#include "eventloopthread.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qpointer.h>
#include <QtCore/qsharedpointer.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <memory>
#include <thread>
#include <vector>

struct NeverDefined; // forward-declared only: it has no QMetaType, so it cannot be queued

// Registered, but move-only: QMetaType cannot copy it into a queued call.
struct MoveOnly
{
    MoveOnly() = default;
    MoveOnly(MoveOnly &&) = default;
    MoveOnly &operator=(MoveOnly &&) = default;
    int value = 0;
};

// Its copies create and connect QObjects (scenario 8): a lock held around them would deadlock.
struct PlayWithObjects
{
    PlayWithObjects() = default;
    PlayWithObjects(const PlayWithObjects &) { play(); }
    PlayWithObjects &operator=(const PlayWithObjects &)
    {
        play();
        return *this;
    }
    ~PlayWithObjects() { play(); }
    static void play()
    {
        for (int i = 0; i < 16; ++i) {
            QObject a;
            QObject b;
            QObject::connect(&a, &QObject::destroyed, &b, &QObject::deleteLater);
            QtFastConnect::connect(&a, &QObject::objectNameChanged, &b, [](const QString &) {});
        }
    }
};

enum Path { QtQueued, FunnelPmf, FunnelFunctor, FunnelString, FunnelMetaMethod };

class Sender : public QObject
{
    Q_OBJECT
public:
    void emitNone() { Q_EMIT none(); }
    void emitValue(int v) { Q_EMIT value(v); }
Q_SIGNALS:
    void none();
    void value(int v);
    void seq(int producer, quint64 n);
    void counted(const CountedValue &v);
    void list(const QList<CountedValue> &l);
    void nine(int a, qint64 b, quint64 c, const QString &d, QObject *e, const QPointer<QObject> &f,
              const QSharedPointer<int> &g, const QList<int *> &h, double i);
    int returnsInt();
    void forward(const NeverDefined &n);
    void moveOnly(const MoveOnly &m);
    void play(const PlayWithObjects &p);
};

class Receiver : public QObject
{
    Q_OBJECT
public:
    static inline std::atomic<int> totalCalls { 0 }; // survives the receiver
    std::atomic<int> calls { 0 };
    std::atomic<QThread *> thread_ { nullptr };
    std::atomic<QObject *> lastSender { nullptr };
    std::atomic<int> lastSignalIndex { -2 };
    std::atomic<int> lastValue { 0 };
    QStringList log; // receiver's thread only
    std::vector<quint64> next = std::vector<quint64>(8, 0);
    qint64 outOfOrder = 0;
    int migrateEvery = 0;
    QThread *other[2] = { nullptr, nullptr };
    QVariantList nineArgs;

    QObject *currentSender() const { return sender(); }
    void record()
    {
        thread_ = QThread::currentThread();
        lastSender = sender();
        lastSignalIndex = senderSignalIndex();
        ++totalCalls;
        ++calls; // last: a reader that sees the count sees the rest
    }

public Q_SLOTS:
    void onNone()
    {
        record();
        log << QStringLiteral("A");
    }
    void onNoneB()
    {
        record();
        log << QStringLiteral("B");
    }
    void onValue(int v)
    {
        record();
        lastValue = v;
    }
    void onSeq(int p, quint64 n)
    {
        record();
        if (n != next[p])
            ++outOfOrder;
        next[p] = n + 1;
        // Scenario 18: the receiver moves itself while calls are in flight.
        if (migrateEvery && calls % migrateEvery == 0)
            moveToThread(other[calls / migrateEvery % 2]);
    }
    void onCounted(const CountedValue &v)
    {
        record();
        lastValue = int(v.value);
    }
    // Scenario 12: the slot destroys its own receiver with calls still pending.
    void onCountedDeleteSelf(const CountedValue &v)
    {
        record();
        if (v.value == 10)
            delete this;
    }
    void onCountedByValue(CountedValue v)
    {
        record();
        lastValue = int(v.value);
    }
    void onList(const QList<CountedValue> &l)
    {
        record();
        lastValue = int(l.size());
    }
    void onNine(int a, qint64 b, quint64 c, const QString &d, QObject *e,
                const QPointer<QObject> &f, const QSharedPointer<int> &g, const QList<int *> &h,
                double i)
    {
        record();
        nineArgs = { a,
                     b,
                     c,
                     d,
                     QVariant::fromValue(e),
                     QVariant::fromValue(f.data()),
                     g ? *g : -1,
                     QVariant::fromValue(h.value(0)),
                     i };
    }
    int onReturnsInt()
    {
        record();
        return 42;
    }
    void onForward(const NeverDefined &) { record(); }
    void onMoveOnly(const MoveOnly &) { record(); }
    void onPlay(const PlayWithObjects &) { record(); }
    void reEmit()
    {
        record();
        Q_EMIT again();
    }
    void onFinished()
    {
        record();
        auto *t = qobject_cast<QThread *>(sender());
        finishedSeen = t && t->isFinished();
    }
Q_SIGNALS:
    void again();

public:
    bool finishedSeen = false;
};

// Scenario 14: a slot of a class that is already destroyed must not run.
class DerivedReceiver;
class BaseReceiver : public Receiver
{
    Q_OBJECT
public:
    ~BaseReceiver() override { QCoreApplication::processEvents(); }
};
class DerivedReceiver : public BaseReceiver
{
    Q_OBJECT
public:
    static inline std::atomic<int> derivedCalls { 0 };
public Q_SLOTS:
    void onDerived() { ++derivedCalls; }
};

struct CountedFunctor
{
    static inline std::atomic<int> live { 0 };
    CountedFunctor() { ++live; }
    CountedFunctor(const CountedFunctor &) { ++live; }
    CountedFunctor(CountedFunctor &&) noexcept { ++live; }
    ~CountedFunctor() { --live; }
    void operator()() const { ++Receiver::totalCalls; }
};

static QMetaMethod slotOf(const QObject *r, const char *slotName)
{
    const QMetaObject *mo = r->metaObject();
    return mo->method(mo->indexOfMethod(QMetaObject::normalizedSignature(slotName + 1)));
}

// One signal/slot pair connected the way a row asks for.
template<typename Sig, typename Slot, typename R>
static QMetaObject::Connection connectVia(int path, Sender *s, Sig sig, const char *sigName, R *r,
                                          Slot slot, const char *slotName, int flags = 0)
{
    const QtFastConnect::ConnectionMode mode =
            QtFastConnect::FunnelConnection | Qt::ConnectionType(flags);
    switch (Path(path)) {
    case QtQueued:
        return QObject::connect(s, sig, r, slot, Qt::ConnectionType(Qt::QueuedConnection | flags));
    case FunnelPmf:
        return QtFastConnect::connect(s, sig, r, slot, mode);
    case FunnelFunctor:
        // SFINAE-friendly, so that Qt finds how many signal arguments the slot takes.
        return QtFastConnect::connect(
                s, sig, r,
                [r, slot](auto &&...a) -> decltype((std::declval<R *>()->*std::declval<Slot>())(
                                               std::forward<decltype(a)>(a)...)) {
                    return (r->*slot)(std::forward<decltype(a)>(a)...);
                },
                mode);
    case FunnelString:
        return QtFastConnect::connect(s, sigName, r, slotName, mode);
    case FunnelMetaMethod:
        return QtFastConnect::connect(s, QMetaMethod::fromSignal(sig), r, slotOf(r, slotName),
                                      mode);
    }
    return {};
}
#define CONNECT_VIA(path, s, sig, sigText, r, slot, slotText, ...)                                 \
    connectVia(path, s, &Sender::sig, SIGNAL(sigText), r,                                          \
               &std::remove_pointer_t<decltype(r)>::slot, SLOT(slotText), ##__VA_ARGS__)

// A QThread started again after it finished. Its wait() synchronizes inside Qt, where
// ThreadSanitizer cannot see it; the annotations order the two runs for it.
class RestartableThread : public QThread
{
public:
    void stop()
    {
        quit();
        wait();
#if defined(__SANITIZE_THREAD__)
        __tsan_acquire(this);
#endif
    }

protected:
    void run() override
    {
        QThread::run();
#if defined(__SANITIZE_THREAD__)
        __tsan_release(this);
#endif
    }
};

// Deletes a receiver in its own thread, its connections from s cut first in this thread:
// ~QObject would otherwise read s from that thread under Qt's locks, which ThreadSanitizer
// cannot see (Qt is not instrumented). Pending calls are unaffected.
static void deleteReceiverInItsThread(Sender &s, QObject *r)
{
    QObject::disconnect(&s, nullptr, r, nullptr);
    deleteLaterInItsThread(r);
}

// Delivers what the receiver's thread has pending; the funnel rows first make the emitting
// thread's calls visible to that pass (the documented difference of scenario 2).
static void flushIfFunnel(int path)
{
    if (path != QtQueued)
        QtFastConnect::flush();
}

class tst_Conformance : public QObject
{
    Q_OBJECT
    int path() const { return *static_cast<const int *>(QTest::qData("path", QMetaType::Int)); }
    static void addPaths(bool functor = true, bool byName = true, bool typed = true)
    {
        QTest::addColumn<int>("path");
        QTest::newRow("Qt::QueuedConnection") << int(QtQueued);
        if (typed)
            QTest::newRow("funnel, member function") << int(FunnelPmf);
        if (functor)
            QTest::newRow("funnel, functor") << int(FunnelFunctor);
        if (byName) {
            QTest::newRow("funnel, by name") << int(FunnelString);
            QTest::newRow("funnel, QMetaMethod") << int(FunnelMetaMethod);
        }
    }

private Q_SLOTS:
    void init()
    {
#if defined(__SANITIZE_THREAD__)
        // Qt hands its queued calls over under futex-based locks that ThreadSanitizer cannot
        // see (Qt is not instrumented); the reference rows run in the other builds.
        if (path() == QtQueued)
            QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
#endif
        Receiver::totalCalls = 0;
        CountedValue::resetCounters();
    }
    void cleanup()
    {
        QCOMPARE(CountedValue::live.load(), 0);
        QCOMPARE(CountedFunctor::live.load(), 0);
    }

#define PATHS(name, ...)                                                                           \
    void name##_data()                                                                             \
    {                                                                                              \
        addPaths(__VA_ARGS__);                                                                     \
    }                                                                                              \
    void name();
    PATHS(s01_sameThreadDeferred)
    PATHS(s02_emitHappensBeforeNextPump)
    PATHS(s03_slotRunsInReceiverThread)
    PATHS(s04_exactlyOnceFifoPerProducer)
    PATHS(s05_connectionOrder)
    PATHS(s06_argumentCopies)
    PATHS(s07_implicitlyShared)
    PATHS(s08_noLockAroundUserCode)
    PATHS(s09_argumentMatrix)
    PATHS(s09_notQueueable, false, true, false)
    PATHS(s10_moveOnlyFunctor, true, false)
    PATHS(s11_disconnectAfterEmit)
    PATHS(s11_disconnectRacesEmit)
    PATHS(s12_receiverDeletedWithPending)
    PATHS(s12_receiverDeletedBySlot)
    PATHS(s13_deleteLaterOrder)
    PATHS(s14_receiverUnderDestruction, false, true)
    PATHS(s15_senderDeletedBeforeDelivery)
    PATHS(s16_senderInSlot)
    PATHS(s17_contextAndFunctorLifetime, true, false)
    PATHS(s18_receiverMoved)
    PATHS(s19_threadNotRunning)
    PATHS(s19_noAffinity)
    PATHS(s20_singleShot)
    PATHS(s21_unique)
    PATHS(s22_returnValue)
    PATHS(s23_blockSignals)
    PATHS(s24_reEmitOncePerPass)
    PATHS(s25_wakeUp)
    PATHS(s27_threadFinished)
    PATHS(s30_stress)
#undef PATHS
};

void tst_Conformance::s01_sameThreadDeferred()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int)));
    s.emitValue(7);
    QCOMPARE(r.calls.load(), 0); // not run inside emit
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1); // the next pump runs it, once
    QCOMPARE(r.lastValue.load(), 7);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1);

    // Also right after this thread filled the funnel's relay with calls to another thread.
    EventLoopThread t;
    t.start();
    auto *far = new Receiver;
    far->moveToThread(&t);
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), far, onNone, onNone()));
    for (int i = 0; i < 1500; ++i)
        s.emitNone();
    s.emitValue(8);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 2);
    QCOMPARE(r.lastValue.load(), 8);
    QTRY_COMPARE(far->calls.load(), 1500);
    deleteReceiverInItsThread(s, far);
}

void tst_Conformance::s02_emitHappensBeforeNextPump()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int)));
    const int p = path();
    // Fewer calls than a delivery pass checks its time budget after (128), so that one pass
    // runs them all however loaded the machine is; most go through the relay.
    std::thread producer([&] {
        for (int i = 0; i < 100; ++i)
            s.emitValue(i);
        flushIfFunnel(p); // funnel: the documented way to get Qt's guarantee
    });
    producer.join();
    QCoreApplication::processEvents(); // one pass, no waiting
    QCOMPARE(r.calls.load(), 100);
}

void tst_Conformance::s03_slotRunsInReceiverThread()
{
    Sender s; // outlives the thread, so the receiver is deleted before it
    EventLoopThread t;
    t.start();
    auto *r = new Receiver;
    r->moveToThread(&t);
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), r, onNone, onNone()));
    std::thread([&] { s.emitNone(); }).join();
    s.emitNone();
    QTRY_COMPARE(r->calls.load(), 2);
    QCOMPARE(r->thread_.load(), &t);
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s04_exactlyOnceFifoPerProducer()
{
    Sender s; // outlives the thread, so the receiver is deleted before it
    EventLoopThread t;
    t.start();
    auto *r = new Receiver;
    r->moveToThread(&t);
    QVERIFY(CONNECT_VIA(path(), &s, seq, seq(int, quint64), r, onSeq, onSeq(int, quint64)));
    constexpr int Producers = 4;
    constexpr quint64 PerProducer = 2000;
    std::vector<std::thread> producers;
    for (int p = 0; p < Producers; ++p) {
        producers.emplace_back([&s, p] {
            for (quint64 n = 0; n < PerProducer; ++n)
                Q_EMIT s.seq(p, n);
        });
    }
    for (auto &p : producers)
        p.join();
    QTRY_COMPARE(r->calls.load(), int(Producers * PerProducer));
    QCOMPARE(r->outOfOrder, 0); // read after the last call: synchronized by calls
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s05_connectionOrder()
{
    Sender s;
    Receiver r1;
    Receiver r2;
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r1, onNone, onNone()));
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r1, onNoneB, onNoneB()));
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r2, onNone, onNone()));
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r1, onNone, onNone()));
    s.emitNone();
    s.emitNone();
    QCoreApplication::processEvents();
    QCOMPARE(r1.log.join(QString()), QStringLiteral("ABAABA"));
    QCOMPARE(r2.calls.load(), 2);
}

void tst_Conformance::s06_argumentCopies()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, counted, counted(CountedValue), &r, onCounted,
                        onCounted(CountedValue)));
    {
        CountedValue v(5);
        Q_EMIT s.counted(v);
        QCOMPARE(CountedValue::live.load(), 2); // one copy pending per connection
        QCOMPARE(CountedValue::copies.load(), 1);
    }
    QCoreApplication::processEvents();
    QCOMPARE(r.lastValue.load(), 5);
    QCOMPARE(CountedValue::copies.load(), 1); // a const& slot copies nothing more
    QCOMPARE(CountedValue::live.load(), 0);

    // A by-value slot: Qt copies twice; never more here (the funnel's typed paths move).
    CountedValue::resetCounters();
    Receiver r2;
    QVERIFY(CONNECT_VIA(path(), &s, counted, counted(CountedValue), &r2, onCountedByValue,
                        onCountedByValue(CountedValue)));
    Q_EMIT s.counted(CountedValue(6));
    QCoreApplication::processEvents();
    QCOMPARE(r2.lastValue.load(), 6);
    QVERIFY(CountedValue::copies.load() <= 3); // r: 1, r2: at most 2, as with Qt
    if (path() == FunnelPmf || path() == FunnelFunctor)
        QCOMPARE(CountedValue::copies.load(), 2); // r: 1, r2: 1 copy + 1 move
    QCOMPARE(CountedValue::live.load(), 0);
}

void tst_Conformance::s07_implicitlyShared()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, list, list(QList<CountedValue>), &r, onList,
                        onList(QList<CountedValue>)));
    QList<CountedValue> l(3);
    QCOMPARE(CountedValue::live.load(), 3);
    Q_EMIT s.list(l);
    QCOMPARE(CountedValue::live.load(), 3); // shared, not deep-copied
    QVERIFY(!l.isDetached());
    QCoreApplication::processEvents();
    QCOMPARE(r.lastValue.load(), 3);
    QVERIFY(l.isDetached()); // released after delivery
}

void tst_Conformance::s08_noLockAroundUserCode()
{
    Sender s; // outlives the thread, so the receiver is deleted before it
    EventLoopThread t;
    t.start();
    auto *r = new Receiver;
    r->moveToThread(&t);
    QMetaObject::Connection c = CONNECT_VIA(path(), &s, play, play(PlayWithObjects), r, onPlay,
                                            onPlay(PlayWithObjects));
    QVERIFY(c);
    for (int i = 0; i < 4; ++i)
        Q_EMIT s.play(PlayWithObjects());
    QTRY_COMPARE(r->calls.load(), 4);
    // Pending when disconnected and when the receiver is deleted: freed without a deadlock.
    Q_EMIT s.play(PlayWithObjects());
    QObject::disconnect(c);
    auto *r2 = new Receiver;
    QVERIFY(CONNECT_VIA(path(), &s, play, play(PlayWithObjects), r2, onPlay,
                        onPlay(PlayWithObjects)));
    Q_EMIT s.play(PlayWithObjects());
    delete r2;
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s09_argumentMatrix()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, nine,
                        nine(int, qint64, quint64, QString, QObject *, QPointer<QObject>,
                             QSharedPointer<int>, QList<int *>, double),
                        &r, onNine,
                        onNine(int, qint64, quint64, QString, QObject *, QPointer<QObject>,
                               QSharedPointer<int>, QList<int *>, double)));
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r, onNone, onNone()));
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onNone, onNone())); // consumes 0 of 1
    QObject o;
    int x = 0;
    Q_EMIT s.nine(-1, -(Q_INT64_C(1) << 40), Q_UINT64_C(1) << 63, QStringLiteral("text"), &o,
                  QPointer<QObject>(&o), QSharedPointer<int>::create(9), QList<int *> { &x }, 2.5);
    s.emitNone();
    s.emitValue(1);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 3);
    const QVariantList expected = { -1,
                                    -(Q_INT64_C(1) << 40),
                                    Q_UINT64_C(1) << 63,
                                    QStringLiteral("text"),
                                    QVariant::fromValue(&o),
                                    QVariant::fromValue(&o),
                                    9,
                                    QVariant::fromValue(&x),
                                    2.5 };
    QCOMPARE(r.nineArgs, expected);
}

void tst_Conformance::s09_notQueueable()
{
    Sender s;
    Receiver r;
    const char *source = path() == QtQueued ? "QObject" : "QtFastConnect";
    // Qt >= 6.11 quotes the type with the signature's closing parenthesis: 'NeverDefined)'.
    const char *type = path() == QtQueued ? "NeverDefined\\)?" : "NeverDefined";
    // No QMetaType (forward-declared): both refuse at connect time.
    QTest::ignoreMessage(
            QtWarningMsg,
            QRegularExpression(QStringLiteral("^%1::connect: Cannot queue arguments of type '%2'")
                                       .arg(source, type)));
    QMetaObject::Connection c;
    if (path() == QtQueued) {
        c = QObject::connect(&s, SIGNAL(forward(NeverDefined)), &r, SLOT(onForward(NeverDefined)),
                             Qt::QueuedConnection);
    } else if (path() == FunnelString) {
        c = QtFastConnect::connect(&s, SIGNAL(forward(NeverDefined)), &r,
                                   SLOT(onForward(NeverDefined)));
    } else {
        c = QtFastConnect::connect(&s, QMetaMethod::fromSignal(&Sender::forward), &r,
                                   slotOf(&r, SLOT(onForward(NeverDefined))));
    }
    QVERIFY(!c);
    // Move-only: the funnel refuses at connect time (the typed overloads do not compile); Qt
    // connects, and could only fail at emit.
    if (path() != QtQueued) {
        QTest::ignoreMessage(
                QtWarningMsg,
                QRegularExpression(QStringLiteral(
                        "^QtFastConnect::connect: Cannot queue arguments of type 'MoveOnly'")));
        c = path() == FunnelString
                ? QtFastConnect::connect(&s, SIGNAL(moveOnly(MoveOnly)), &r,
                                         SLOT(onMoveOnly(MoveOnly)))
                : QtFastConnect::connect(&s, QMetaMethod::fromSignal(&Sender::moveOnly), &r,
                                         slotOf(&r, SLOT(onMoveOnly(MoveOnly))));
        QVERIFY(!c);
    }
}

void tst_Conformance::s10_moveOnlyFunctor()
{
    Sender s;
    Receiver r;
    auto p = std::make_unique<int>(11);
    std::atomic<int> seen { 0 };
    auto f = [p = std::move(p), &seen] { seen = *p; };
    const auto c = path() == QtQueued
            ? QObject::connect(&s, &Sender::none, &r, std::move(f), Qt::QueuedConnection)
            : QtFastConnect::connect(&s, &Sender::none, &r, std::move(f));
    QVERIFY(c);
    s.emitNone();
    QCoreApplication::processEvents();
    QCOMPARE(seen.load(), 11);
}

void tst_Conformance::s11_disconnectAfterEmit()
{
    Sender s;
    Receiver r;
    QMetaObject::Connection c =
            CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int));
    s.emitValue(1);
    QVERIFY(QObject::disconnect(c));
    QVERIFY(!QObject::disconnect(c));
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1); // the pending call is still delivered
    QCOMPARE(r.lastSender.load(), nullptr); // ... with no sender any more
    QCOMPARE(r.lastSignalIndex.load(), -1);
    s.emitValue(2);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1); // nothing after the disconnect

    // The funnel's own disconnect overloads cut funnel connections by slot.
    if (path() != QtQueued) {
        QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int)));
        bool cut = false;
        switch (path()) {
        case FunnelPmf:
            cut = QtFastConnect::disconnect(&s, &Sender::value, &r, &Receiver::onValue);
            break;
        case FunnelFunctor:
            cut = QtFastConnect::disconnect(&s, &Sender::value, &r);
            break;
        case FunnelString:
            cut = QtFastConnect::disconnect(&s, SIGNAL(value(int)), &r, SLOT(onValue(int)));
            break;
        default:
            cut = QtFastConnect::disconnect(&s, QMetaMethod::fromSignal(&Sender::value), &r,
                                            slotOf(&r, SLOT(onValue(int))));
        }
        QVERIFY(cut);
        s.emitValue(3);
        QCoreApplication::processEvents();
        QCOMPARE(r.calls.load(), 1);
    }
}

void tst_Conformance::s11_disconnectRacesEmit()
{
    Sender s; // outlives the thread, so the receiver is deleted before it
    EventLoopThread t;
    t.start();
    auto *r = new Receiver;
    r->moveToThread(&t);
    QMetaObject::Connection c = CONNECT_VIA(path(), &s, counted, counted(CountedValue), r,
                                            onCounted, onCounted(CountedValue));
    std::atomic<int> emitted { 0 };
    std::atomic<bool> go { false };
    std::thread producer([&] {
        while (!go) {}
        for (int i = 0; i < 3000; ++i, ++emitted)
            Q_EMIT s.counted(CountedValue(i));
    });
    go = true;
    while (emitted < 500) {}
    QObject::disconnect(c);
    producer.join();
    if (path() != QtQueued)
        QtFastConnect::flush();
    // Each emission delivered or dropped, never both; every copy freed (checked in cleanup).
    QTRY_COMPARE(CountedValue::live.load(), 0);
    QVERIFY(r->calls.load() >= 500 && r->calls.load() <= 3000);
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s12_receiverDeletedWithPending()
{
    Sender s;
    auto *r = new Receiver;
    QVERIFY(CONNECT_VIA(path(), &s, counted, counted(CountedValue), r, onCounted,
                        onCounted(CountedValue)));
    for (int i = 0; i < 3000; ++i)
        Q_EMIT s.counted(CountedValue(i));
    QCOMPARE(CountedValue::live.load(), 3000);
    delete r;
    QCoreApplication::processEvents();
    QCOMPARE(Receiver::totalCalls.load(), 0);
    QTRY_COMPARE(CountedValue::live.load(), 0);

    // Pending for a receiver whose thread has finished, deleted from main.
    {
        RestartableThread t;
        auto *r2 = new Receiver;
        r2->moveToThread(&t);
        QVERIFY(CONNECT_VIA(path(), &s, counted, counted(CountedValue), r2, onCounted,
                            onCounted(CountedValue)));
        t.start();
        t.stop();
        for (int i = 0; i < 100; ++i)
            Q_EMIT s.counted(CountedValue(i));
        if (path() != QtQueued)
            QtFastConnect::flush();
        delete r2;
        // As with Qt: the receiver's destructor frees the copies (and the funnel's credits)
        // at once, although no thread runs that receiver's event loop any more.
        QCOMPARE(CountedValue::live.load(), 0);
    }
    QCOMPARE(Receiver::totalCalls.load(), 0);
    QTRY_COMPARE(CountedValue::live.load(), 0);
}

// A slot that deletes its receiver in the middle of a run of pending calls: the later calls
// are dropped, their arguments freed, never run (the funnel delivers a run of one connection's
// calls in one loop, which must notice).
void tst_Conformance::s12_receiverDeletedBySlot()
{
    Sender s;
    auto *r = new Receiver;
    QVERIFY(CONNECT_VIA(path(), &s, counted, counted(CountedValue), r, onCountedDeleteSelf,
                        onCountedDeleteSelf(CountedValue)));
    std::thread producer([&] {
        for (int i = 0; i < 100; ++i)
            Q_EMIT s.counted(CountedValue(i));
    });
    producer.join();
    flushIfFunnel(path());
    QCoreApplication::processEvents();
    QCOMPARE(Receiver::totalCalls.load(), 11);
    QTRY_COMPARE(CountedValue::live.load(), 0);
}

void tst_Conformance::s13_deleteLaterOrder()
{
    for (bool emitFirst : { true, false }) {
        Sender s;
        QPointer<Receiver> r = new Receiver;
        QVERIFY(CONNECT_VIA(path(), &s, none, none(), r.data(), onNone, onNone()));
        QEventLoop loop;
        QTimer::singleShot(0, &loop, [&] {
            if (emitFirst) {
                s.emitNone();
                r->deleteLater();
            } else {
                r->deleteLater();
                s.emitNone();
            }
            QTimer::singleShot(0, &loop, &QEventLoop::quit);
        });
        loop.exec();
        QTRY_VERIFY(r.isNull());
        QCoreApplication::processEvents();
        QCOMPARE(Receiver::totalCalls.load(), emitFirst ? 1 : 0);
        Receiver::totalCalls = 0;
    }
}

void tst_Conformance::s14_receiverUnderDestruction()
{
    Sender s;
    auto *r = new DerivedReceiver;
    DerivedReceiver::derivedCalls = 0;
    // The reference is Qt's connection by name: Qt's member-function-pointer connections do
    // call the destroyed subclass's slot.
    QVERIFY(path() == QtQueued
                    ? bool(QObject::connect(&s, SIGNAL(none()), r, SLOT(onDerived()),
                                            Qt::QueuedConnection))
                    : bool(CONNECT_VIA(path(), &s, none, none(), r, onDerived, onDerived())));
    s.emitNone();
    delete r; // ~BaseReceiver pumps events: DerivedReceiver is gone by then
    // Observed with Qt 6.4.2 in this very run: its call by name still reaches the destroyed
    // subclass's slot when the pump runs in the base class's destructor body. The funnel
    // checks the receiver's dynamic class first and does not run it.
    QCOMPARE(DerivedReceiver::derivedCalls.load(), path() == QtQueued ? 1 : 0);
}

void tst_Conformance::s15_senderDeletedBeforeDelivery()
{
    auto *s = new Sender;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), s, none, none(), &r, onNone, onNone()));
    s->emitNone();
    delete s;
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1);
    QCOMPARE(r.lastSender.load(), nullptr);

    // A connection from destroyed() fires after its sender is gone.
    auto *o = new QObject;
    bool fired = false;
    auto c = path() == QtQueued
            ? QObject::connect(
                    o, &QObject::destroyed, &r, [&] { fired = true; }, Qt::QueuedConnection)
            : QtFastConnect::connect(o, &QObject::destroyed, &r, [&] { fired = true; });
    QVERIFY(c);
    delete o;
    QCoreApplication::processEvents();
    QVERIFY(fired);
}

void tst_Conformance::s16_senderInSlot()
{
    Sender s; // outlives the thread, so the receiver is deleted before it
    EventLoopThread t;
    t.start();
    auto *r = new Receiver;
    r->moveToThread(&t);
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), r, onValue, onValue(int)));
    std::thread([&] { s.emitValue(1); }).join();
    QTRY_COMPARE(r->calls.load(), 1);
    QCOMPARE(r->lastSender.load(), &s);
    QCOMPARE(r->lastSignalIndex.load(), QMetaMethod::fromSignal(&Sender::value).methodIndex());
    // Outside a slot. QTRY: calls counts inside the slot, so the delivery (Qt's too) may still
    // be unwinding its sender() scope in the receiver's thread when this thread gets here.
    QTRY_COMPARE(r->currentSender(), nullptr);
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s17_contextAndFunctorLifetime()
{
    Sender s;
    // Context deleted with calls pending: the connection is cut, the functor freed once.
    for (int how = 0; how < 3; ++how) {
        auto *context = new QObject;
        auto *sender = how == 2 ? new Sender : &s;
        auto c = path() == QtQueued
                ? QObject::connect(sender, &Sender::none, context, CountedFunctor(),
                                   Qt::QueuedConnection)
                : QtFastConnect::connect(sender, &Sender::none, context, CountedFunctor());
        QVERIFY(c);
        sender->emitNone();
        sender->emitNone();
        QVERIFY(CountedFunctor::live.load() >= 1);
        if (how == 0) {
            delete context; // pending calls dropped with it
            QCoreApplication::processEvents();
            QCOMPARE(Receiver::totalCalls.load(), 0);
        } else if (how == 1) {
            QObject::disconnect(c); // pending calls still delivered
            QCoreApplication::processEvents();
            QCOMPARE(Receiver::totalCalls.load(), 2);
            delete context;
        } else {
            delete sender; // likewise
            QCoreApplication::processEvents();
            QCOMPARE(Receiver::totalCalls.load(), 2);
            delete context;
        }
        QCOMPARE(CountedFunctor::live.load(), 0);
        Receiver::totalCalls = 0;
    }
}

void tst_Conformance::s18_receiverMoved()
{
    Sender s; // outlives the threads, so the receivers are deleted before it
    EventLoopThread t1;
    EventLoopThread t2;
    t1.start();
    t2.start();
    auto *r = new Receiver;
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), r, onValue, onValue(int)));
    s.emitValue(1);
    r->moveToThread(&t1); // the pending call follows the object
    QCoreApplication::processEvents();
    QTRY_COMPARE(r->calls.load(), 1);
    QCOMPARE(r->thread_.load(), &t1);

#if !defined(__SANITIZE_THREAD__)
    // Repeated migrations, driven by the receiver itself, with calls in flight. Not under
    // ThreadSanitizer: what orders the threads' uses of the receiver is moveToThread()'s
    // locking inside Qt, which it cannot see.
    auto *m = new Receiver;
    m->migrateEvery = 100;
    m->other[0] = &t1;
    m->other[1] = &t2;
    m->moveToThread(&t1);
    QVERIFY(CONNECT_VIA(path(), &s, seq, seq(int, quint64), m, onSeq, onSeq(int, quint64)));
    std::thread producer([&] {
        for (quint64 n = 0; n < 2000; ++n)
            Q_EMIT s.seq(0, n);
    });
    producer.join();
    QTRY_COMPARE(m->calls.load(), 2000); // exactly once
    // Known limitation of the funnel: order is kept across one move (above), but not yet
    // across repeated moves racing new emissions; see the README.
    if (path() == QtQueued)
        QCOMPARE(m->outOfOrder, 0);
    deleteReceiverInItsThread(s, m);
#endif
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s19_threadNotRunning()
{
    Sender s;
    RestartableThread t;
    auto *r = new Receiver;
    r->moveToThread(&t); // not started yet
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), r, onValue, onValue(int)));
    s.emitValue(1);
    flushIfFunnel(path());
    QCoreApplication::processEvents();
    QCOMPARE(r->calls.load(), 0);
    t.start();
    QTRY_COMPARE(r->calls.load(), 1);
    QCOMPARE(r->thread_.load(), &t);
    t.stop(); // finished: calls wait until it is started again
    s.emitValue(2);
    flushIfFunnel(path());
    QTest::qWait(20);
    QCOMPARE(r->calls.load(), 1);
    t.start();
    QTRY_COMPARE(r->calls.load(), 2);
    QCOMPARE(r->lastValue.load(), 2);
    t.stop();
    delete r;
}

void tst_Conformance::s19_noAffinity()
{
    Sender s;
    Receiver r;
    r.moveToThread(nullptr);
    if (path() == QtQueued) {
        QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int)));
        s.emitValue(1);
        QCoreApplication::processEvents();
        QCOMPARE(r.calls.load(), 0); // nothing until pulled into a thread
        r.moveToThread(QThread::currentThread());
        QTRY_COMPARE(r.calls.load(), 1);
    } else {
        // Documented difference: no thread could ever run the slot, so the funnel refuses.
        QTest::ignoreMessage(QtWarningMsg,
                             QRegularExpression(QStringLiteral("no thread affinity")));
        QVERIFY(!CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int)));
        r.moveToThread(QThread::currentThread());
    }
}

void tst_Conformance::s20_singleShot()
{
    Sender s;
    Receiver r;
    QMetaObject::Connection c = CONNECT_VIA(path(), &s, value, value(int), &r, onValue,
                                            onValue(int), Qt::SingleShotConnection);
    QVERIFY(c);
    s.emitValue(1);
    QVERIFY(!c); // invalid right after the first emit
    s.emitValue(2);
    s.emitValue(3);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1);
    QCOMPARE(r.lastValue.load(), 1);

    c = CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int),
                    Qt::SingleShotConnection);
    QVERIFY(QObject::disconnect(c));
    s.emitValue(4);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1);

    // A receiver that deletes itself in the slot.
    auto *self = new Receiver;
    QPointer<Receiver> watch(self);
    const auto del = path() == QtQueued
            ? QObject::connect(
                    &s, &Sender::none, self, [self] { delete self; },
                    Qt::ConnectionType(Qt::QueuedConnection | Qt::SingleShotConnection))
            : QtFastConnect::connect(
                    &s, &Sender::none, self, [self] { delete self; },
                    QtFastConnect::FunnelConnection | Qt::SingleShotConnection);
    QVERIFY(del);
    s.emitNone();
    QCoreApplication::processEvents();
    QVERIFY(watch.isNull());
}

void tst_Conformance::s21_unique()
{
    Sender s;
    Receiver r;
    if (path() == FunnelFunctor) {
        QTest::ignoreMessage(QtWarningMsg,
                             QRegularExpression(QStringLiteral(
                                     "unique connections require a pointer to member function")));
        QVERIFY(!CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int),
                             Qt::UniqueConnection));
        return;
    }
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int),
                        Qt::UniqueConnection));
    QVERIFY(!CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int),
                         Qt::UniqueConnection));
    // A different slot, or a different receiver, is not a duplicate.
    Receiver r2;
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r2, onValue, onValue(int),
                        Qt::UniqueConnection));
    s.emitValue(1);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1);
    QCOMPARE(r2.calls.load(), 1);
    // Once disconnected, the same connection can be made again.
    QVERIFY(QObject::disconnect(&s, nullptr, &r, nullptr));
    QVERIFY(CONNECT_VIA(path(), &s, value, value(int), &r, onValue, onValue(int),
                        Qt::UniqueConnection));
}

void tst_Conformance::s22_returnValue()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, returnsInt, returnsInt(), &r, onReturnsInt, onReturnsInt()));
    QCOMPARE(Q_EMIT s.returnsInt(), 0); // queued: the slot's value is not forwarded
    QObject::connect(
            &s, &Sender::returnsInt, &r, [] { return 7; }, Qt::DirectConnection);
    QCOMPARE(Q_EMIT s.returnsInt(), 7); // the direct connection's value wins
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 2);
}

void tst_Conformance::s23_blockSignals()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r, onNone, onNone()));
    s.blockSignals(true);
    s.emitNone();
    s.blockSignals(false);
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 0);
    s.emitNone();
    s.blockSignals(true); // after the emit: does not cancel it
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1);
}

void tst_Conformance::s24_reEmitOncePerPass()
{
    Sender s;
    Receiver r;
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), &r, reEmit, reEmit()));
    // The receiver's again() re-enters the same slot, queued the same way.
    if (path() == QtQueued)
        QObject::connect(&r, &Receiver::again, &r, &Receiver::reEmit, Qt::QueuedConnection);
    else
        QtFastConnect::connect(&r, &Receiver::again, &r, &Receiver::reEmit);
    s.emitNone();
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 1); // no live-lock: the re-emitted call waits for the next pass
    QCoreApplication::processEvents();
    QCOMPARE(r.calls.load(), 2);
    QObject::disconnect(&r, &Receiver::again, nullptr, nullptr);
    QCoreApplication::processEvents();
}

void tst_Conformance::s25_wakeUp()
{
    // The receiver's thread is idle in exec(); emissions from many producers wake it.
    Sender s; // outlives the thread, so the receiver is deleted before it
    EventLoopThread t;
    t.start();
    auto *r = new Receiver;
    r->moveToThread(&t);
    QVERIFY(CONNECT_VIA(path(), &s, none, none(), r, onNone, onNone()));
    for (int round = 1; round <= 20; ++round) {
        std::vector<std::thread> producers;
        for (int p = 0; p < 4; ++p)
            producers.emplace_back([&s] { s.emitNone(); });
        for (auto &p : producers)
            p.join();
        QTRY_COMPARE(r->calls.load(), 4 * round); // no lost wake-up
    }
    deleteReceiverInItsThread(s, r);
}

void tst_Conformance::s27_threadFinished()
{
    QThread t;
    Receiver r;
    QMetaObject::Connection c;
    switch (Path(path())) {
    case QtQueued:
        c = QObject::connect(&t, &QThread::finished, &r, &Receiver::onFinished,
                             Qt::QueuedConnection);
        break;
    case FunnelPmf:
        c = QtFastConnect::connect(&t, &QThread::finished, &r, &Receiver::onFinished);
        break;
    case FunnelFunctor:
        c = QtFastConnect::connect(&t, &QThread::finished, &r, [&r] { r.onFinished(); });
        break;
    case FunnelString:
        c = QtFastConnect::connect(&t, SIGNAL(finished()), &r, SLOT(onFinished()));
        break;
    case FunnelMetaMethod:
        c = QtFastConnect::connect(&t, QMetaMethod::fromSignal(&QThread::finished), &r,
                                   slotOf(&r, SLOT(onFinished())));
        break;
    }
    QVERIFY(c);
    t.start();
    t.quit();
    t.wait();
    QTRY_COMPARE(r.calls.load(), 1);
    QVERIFY(r.finishedSeen);
    QCOMPARE(r.lastSender.load(), &t);

    // finished -> deleteLater on the thread object itself, several times.
    for (int i = 0; i < 5; ++i) {
        auto *t2 = new QThread;
        QPointer<QThread> watch(t2);
        QVERIFY(path() == QtQueued ? QObject::connect(t2, &QThread::finished, t2,
                                                      &QObject::deleteLater, Qt::QueuedConnection)
                                   : QtFastConnect::connect(t2, &QThread::finished, t2,
                                                            &QObject::deleteLater));
        t2->start();
        t2->quit();
        t2->wait();
        QTRY_VERIFY(watch.isNull());
    }
}

void tst_Conformance::s30_stress()
{
    Sender s;
    {
        RestartableThread t;
        t.start();
        auto *r = new Receiver;
        r->moveToThread(&t);
        QVERIFY(CONNECT_VIA(path(), &s, counted, counted(CountedValue), r, onCounted,
                            onCounted(CountedValue)));
        for (int i = 0; i < 10000; ++i)
            Q_EMIT s.counted(CountedValue(i));
        flushIfFunnel(path());
        t.stop();
        delete r; // from main, with whatever is left pending
        QVERIFY(Receiver::totalCalls.load() <= 10000);
        QCOMPARE(CountedValue::live.load(), 0); // freed by the destructor (as in s12)
    }
    QTRY_COMPARE(CountedValue::live.load(), 0);
    QVERIFY(Receiver::totalCalls.load() <= 10000);

    // 300 objects in a thread, deleted there while QPointers in this thread watch them.
    EventLoopThread t;
    t.start();
    std::vector<QPointer<Receiver>> watches;
    for (int i = 0; i < 300; ++i) {
        auto *r = new Receiver;
        r->moveToThread(&t);
        QVERIFY(CONNECT_VIA(path(), &s, none, none(), r, onNone, onNone()));
        watches.emplace_back(r);
    }
    s.emitNone();
    QObject::disconnect(&s, nullptr, nullptr, nullptr); // see deleteReceiverInItsThread()
    for (auto &w : watches)
        deleteLaterInItsThread(w.data()); // deleted in their thread, watched from here
    for (auto &w : watches)
        QTRY_VERIFY(w.isNull());
    QVERIFY(Receiver::totalCalls.load() <= 10000 + 300);
}

QTEST_MAIN(tst_Conformance)
#include "tst_conformance.moc"
