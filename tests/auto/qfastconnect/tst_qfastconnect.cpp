// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "countedvalue.h"
#include "eventloopthread.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qpointer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <memory>
#include <vector>

// Qt's flags and ours combine into one ConnectionMode, in either order.
static_assert((QtFastConnect::FunnelConnection | Qt::UniqueConnection).toInt() == 0x10080);
static_assert((Qt::SingleShotConnection | QtFastConnect::MoveArguments).toInt() == 0x30100);
static_assert((QtFastConnect::MoveArguments | QtFastConnect::CoalesceCalls)
                      .testFlag(QtFastConnect::FunnelConnection));

class Producer : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void sequenced(int producer, quint64 seq);
    void counted(const CountedValue &v);
    void plain();
};

class Receiver : public QObject
{
    Q_OBJECT
public:
    // Written in the receiver's thread, read by the test's: atomics.
    static inline std::atomic<int> countedCalls { 0 };
    std::atomic<int> calls { 0 };
    std::atomic<QThread *> lastThread { nullptr };
    std::atomic<QObject *> lastSender { nullptr };
    std::atomic<int> lastSignalIndex { -2 };
    std::atomic<quint64> lastValue { 0 };

    QObject *currentSender() const { return sender(); }
    // The call count last: a test that sees it sees what the slot recorded before it.
    void onPlain()
    {
        lastThread = QThread::currentThread();
        lastSender = sender();
        lastSignalIndex = senderSignalIndex();
        ++calls;
    }
    void onCounted(const CountedValue &v)
    {
        lastValue = v.value;
        ++countedCalls;
        ++calls;
    }
    void onCountedByValue(CountedValue v)
    {
        lastValue = v.value;
        ++countedCalls;
        ++calls;
    }
};

// Checks exactly-once, per-producer FIFO delivery; runs in the receiver's thread only.
class SequenceChecker : public QObject
{
    Q_OBJECT
public:
    explicit SequenceChecker(int producers) : next(producers, 0) {}
    std::vector<quint64> next;
    qint64 total = 0;
    qint64 outOfOrder = 0;
    void onSequenced(int producer, quint64 seq)
    {
        if (seq != next[producer])
            ++outOfOrder;
        next[producer] = seq + 1;
        ++total;
    }
};

// A functor that counts its live instances, to check the connection releases it once.
struct CountedFunctor
{
    static inline std::atomic<int> live { 0 };
    int *calls;
    explicit CountedFunctor(int *c) : calls(c) { ++live; }
    CountedFunctor(const CountedFunctor &o) : calls(o.calls) { ++live; }
    CountedFunctor(CountedFunctor &&o) noexcept : calls(o.calls) { ++live; }
    ~CountedFunctor() { --live; }
    void operator()() const { ++*calls; }
};

// A receiver with a second base class: a member function pointer to that base's function,
// converted to the receiver's class, carries a this-adjustment, and one to a virtual function a
// vtable offset. Qt compares such pointers with ==.
class Mixin
{
public:
    virtual ~Mixin() = default;
    void onMixin(int) { ++mixinCalls; }
    int mixinCalls = 0;
};

class MultiReceiver : public QObject, public Mixin
{
    Q_OBJECT
public:
    void onDirect(int) { ++directCalls; }
    virtual void onVirtual(int) { ++virtualCalls; }
    int directCalls = 0;
    int virtualCalls = 0;
};

// For the disconnect forms: which connections still run, by tag.
class FormSender : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(int v);
    void other();
};

class FormReceiver : public QObject
{
    Q_OBJECT
public:
    FormReceiver(const QString &name, QStringList *ran) : m_name(name), m_ran(ran) {}
    void record(const char *slot)
    {
        m_ran->append(m_name + QLatin1Char('.') + QLatin1String(slot));
    }

public Q_SLOTS:
    void onValue(int) { record("onValue"); }
    void onName(int) { record("onName"); }
    void onOther() { record("onOther"); }

private:
    QString m_name;
    QStringList *m_ran;
};

// What a connect by code built against the headers of an earlier release (0.9.0) installs: a
// capture whose Compare knows only a member function pointer, its connect recorded through
// connectRecorded() and made with the five-argument connectCapture().
class EarlierHeaderCapture : public QtPrivate::QSlotObjectBase
{
public:
    using Slot =
            QtFastConnectPrivate::QFunnelMemberSlot<void (FormReceiver::*)(int),
                                                    QtPrivate::List<int>, QtPrivate::List<int>>;
    EarlierHeaderCapture(QtFastConnectPrivate::QFunnelRoute *route, const Slot *slot)
        : QSlotObjectBase(&impl), m_route(route), m_slot(slot)
    {}

private:
    static void impl(int which, QSlotObjectBase *self, QObject *, void **argv, bool *ret)
    {
        using namespace QtFastConnectPrivate;
        auto *that = static_cast<EarlierHeaderCapture *>(self);
        switch (which) {
        case Destroy:
            qfcAnnotateAcquire(that);
            releaseRoute(that->m_route);
            delete that;
            break;
        case Call:
            qfcAnnotateAcquire(that);
            post(that->m_route,
                 new Slot::CallNode(that->m_route, *reinterpret_cast<const int *>(argv[1])));
            qfcAnnotateRelease(that);
            break;
        case Compare:
            *ret = that->m_slot->isSlot(argv);
            qfcAnnotateRelease(that);
            break;
        }
    }

    QtFastConnectPrivate::QFunnelRoute *const m_route;
    const Slot *const m_slot;
};

class tst_QFastConnect : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void init();
    void slotRunsInReceiverThread_data();
    void slotRunsInReceiverThread();
    void sameThreadEmissionIsDeferred();
    void exactlyOnceFifoPerProducer();
    void senderInSlot();
    void receiverDeletedWithPendingCalls_data();
    void receiverDeletedWithPendingCalls();
    void disconnectStopsNewEmissions();
    void pendingCallDeliveredAfterDisconnect();
    void senderDeletedBeforeDelivery();
    void functorWithContext();
    void contextDeletedCutsConnection();
    void receiverMovedToAnotherThread();
    void nestedEventLoopInSlotReceivesCalls();
    void byValueSlotGetsOneCopy();
    void badInput();
    void uniqueAndDisconnectWithMultipleInheritance_data();
    void uniqueAndDisconnectWithMultipleInheritance();
    void uniqueSeesQtsOwnConnections_data();
    void uniqueSeesQtsOwnConnections();
    void disconnectForms_data();
    void disconnectForms();
    void connectsOfEarlierHeadersStillFound();
};

void tst_QFastConnect::init()
{
    QCOMPARE(CountedValue::live.load(), 0);
    CountedValue::resetCounters();
}

void tst_QFastConnect::slotRunsInReceiverThread_data()
{
    QTest::addColumn<bool>("receiverInWorker");
    QTest::newRow("receiver in main thread") << false;
    QTest::newRow("receiver in worker thread") << true;
}

void tst_QFastConnect::slotRunsInReceiverThread()
{
    QFETCH(bool, receiverInWorker);
    EventLoopThread worker;
    auto *receiver = new Receiver;
    if (receiverInWorker) {
        worker.start();
        receiver->moveToThread(&worker);
    }
    QThread *receiverThread = receiver->thread();
    Producer producer;
    QVERIFY(QtFastConnect::connect(&producer, &Producer::plain, receiver, &Receiver::onPlain));

    // Emitted from a third thread, which is neither the receiver's nor the relay's.
    QThread *emitter = QThread::create([&] { Q_EMIT producer.plain(); });
    emitter->start();
    QVERIFY(emitter->wait(10000));
    QTRY_COMPARE(receiver->calls.load(), 1);
    QCOMPARE(receiver->lastThread.load(), receiverThread);
    QVERIFY(receiver->lastThread.load() != emitter);
    delete emitter;
    // Cut first: ~QObject of a receiver dying in its thread would otherwise read producer,
    // which dies here, ordered only by Qt's locks (invisible to ThreadSanitizer).
    QObject::disconnect(&producer, nullptr, receiver, nullptr);
    deleteLaterInItsThread(receiver); // a finishing QThread runs its deferred deletes
}

void tst_QFastConnect::sameThreadEmissionIsDeferred()
{
    Producer producer;
    Receiver receiver;
    QVERIFY(QtFastConnect::connect(&producer, &Producer::plain, &receiver, &Receiver::onPlain));
    Q_EMIT producer.plain();
    QCOMPARE(receiver.calls.load(), 0); // never inside emit, even in the receiver's own thread
    QTRY_COMPARE(receiver.calls.load(), 1);
    QCOMPARE(receiver.lastThread.load(), QThread::currentThread());
}

void tst_QFastConnect::exactlyOnceFifoPerProducer()
{
    constexpr int Producers = 8;
    constexpr quint64 PerProducer = 100000;
    SequenceChecker checker(Producers);
    std::vector<std::unique_ptr<Producer>> producers;
    std::vector<std::unique_ptr<QThread>> threads;
    for (int p = 0; p < Producers; ++p) {
        producers.push_back(std::make_unique<Producer>());
        QVERIFY(QtFastConnect::connect(producers.back().get(), &Producer::sequenced, &checker,
                                       &SequenceChecker::onSequenced));
        Producer *emitter = producers.back().get();
        threads.emplace_back(QThread::create([emitter, p] {
            for (quint64 seq = 0; seq < PerProducer; ++seq)
                Q_EMIT emitter->sequenced(p, seq);
        }));
    }
    for (auto &t : threads)
        t->start();
    // Pump events while they emit: 800,000 calls exceed the capacity, so producers wait for
    // this thread to make room (waiting for them first would deadlock, by design).
    QTRY_COMPARE_WITH_TIMEOUT(checker.total, qint64(Producers * PerProducer), 60000);
    for (auto &t : threads)
        QVERIFY(t->wait(60000));
    QCOMPARE(checker.outOfOrder, 0);
    for (int p = 0; p < Producers; ++p)
        QCOMPARE(checker.next[p], PerProducer); // every sequence number, none twice
    // Nothing more arrives: every call was settled exactly once.
    QCOMPARE(QFunnel::globalInstance()->pendingCalls(), 0);
}

void tst_QFastConnect::senderInSlot()
{
    Producer producer;
    Receiver receiver;
    QVERIFY(QtFastConnect::connect(&producer, &Producer::plain, &receiver, &Receiver::onPlain));
    QThread *emitter = QThread::create([&] { Q_EMIT producer.plain(); });
    emitter->start();
    QVERIFY(emitter->wait(10000));
    delete emitter;
    QTRY_COMPARE(receiver.calls.load(), 1);
    QCOMPARE(receiver.lastSender.load(), &producer);
    QCOMPARE(receiver.lastSignalIndex.load(), producer.metaObject()->indexOfSignal("plain()"));
    // Outside a slot, sender() is null again.
    QCOMPARE(receiver.currentSender(), nullptr);
}

void tst_QFastConnect::receiverDeletedWithPendingCalls_data()
{
    QTest::addColumn<bool>("emitFromWorker");
    QTest::newRow("emitted in receiver's thread") << false;
    QTest::newRow("emitted in another thread") << true;
}

void tst_QFastConnect::receiverDeletedWithPendingCalls()
{
    QFETCH(bool, emitFromWorker);
    constexpr int Calls = 1000;
    QFunnel funnel;
    Producer producer;
    auto *receiver = new Receiver;
    QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::counted, receiver,
                                   &Receiver::onCounted));
    auto emitAll = [&] {
        for (int i = 0; i < Calls; ++i)
            Q_EMIT producer.counted(CountedValue(i));
    };
    if (emitFromWorker) {
        QThread *emitter = QThread::create(emitAll);
        emitter->start();
        QVERIFY(emitter->wait(10000));
        delete emitter;
    } else {
        emitAll();
    }
    QVERIFY(CountedValue::live > 0); // copies wait in the funnel
    Receiver::countedCalls = 0;
    delete receiver; // no event processed since the emissions
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(Receiver::countedCalls.load(), 0);
    QCOMPARE(CountedValue::live.load(), 0);
    QCOMPARE(funnel.droppedCalls(), 0u); // a receiver's death is not a drop: Qt does the same
}

void tst_QFastConnect::disconnectStopsNewEmissions()
{
    QFunnel funnel;
    Producer producer;
    Receiver receiver;
    const QMetaObject::Connection c = QtFastConnect::connect(&funnel, &producer, &Producer::plain,
                                                             &receiver, &Receiver::onPlain);
    QVERIFY(c);
    Q_EMIT producer.plain();
    QTRY_COMPARE(receiver.calls.load(), 1);
    QVERIFY(QObject::disconnect(c));
    QVERIFY(!QObject::disconnect(c));
    Q_EMIT producer.plain();
    QCOMPARE(funnel.pendingCalls(), 0); // nothing was captured
    QCoreApplication::processEvents();
    QCOMPARE(receiver.calls.load(), 1);
}

void tst_QFastConnect::pendingCallDeliveredAfterDisconnect()
{
    // As with Qt::QueuedConnection, disconnecting does not recall an emission already made;
    // sender() is null inside that call because the sender is no longer connected.
    QFunnel funnel;
    Producer producer;
    Receiver receiver;
    const QMetaObject::Connection c = QtFastConnect::connect(&funnel, &producer, &Producer::plain,
                                                             &receiver, &Receiver::onPlain);
    Q_EMIT producer.plain();
    QVERIFY(QObject::disconnect(c));
    QTRY_COMPARE(receiver.calls.load(), 1);
    QCOMPARE(receiver.lastSender.load(), nullptr);
    QCOMPARE(receiver.lastSignalIndex.load(), -1);
}

void tst_QFastConnect::senderDeletedBeforeDelivery()
{
    QFunnel funnel;
    auto *producer = new Producer;
    Receiver receiver;
    QVERIFY(QtFastConnect::connect(&funnel, producer, &Producer::plain, &receiver,
                                   &Receiver::onPlain));
    Q_EMIT producer->plain();
    delete producer;
    QTRY_COMPARE(receiver.calls.load(), 1); // still delivered, as with Qt
    QCOMPARE(receiver.lastSender.load(), nullptr);
}

void tst_QFastConnect::functorWithContext()
{
    EventLoopThread worker;
    worker.start();
    auto *context = new QObject;
    context->moveToThread(&worker);
    Producer producer;
    std::atomic<QThread *> ranIn { nullptr };
    std::atomic<quint64> got { 0 };
    QVERIFY(QtFastConnect::connect(&producer, &Producer::counted, context,
                                   [&](const CountedValue &v) {
                                       ranIn = QThread::currentThread();
                                       got = v.value;
                                   }));
    Q_EMIT producer.counted(CountedValue(42));
    QTRY_COMPARE(got.load(), 42u);
    QCOMPARE(ranIn.load(), &worker);
    // Cut first, as above: ~QObject in the worker would otherwise read producer.
    QObject::disconnect(&producer, nullptr, context, nullptr);
    deleteLaterInItsThread(context);
}

void tst_QFastConnect::contextDeletedCutsConnection()
{
    QFunnel funnel;
    Producer producer;
    int calls = 0;
    auto *context = new QObject;
    QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::plain, context,
                                   CountedFunctor(&calls)));
    QCOMPARE(CountedFunctor::live.load(), 1);
    Q_EMIT producer.plain(); // pending when the context goes
    delete context;
    Q_EMIT producer.plain(); // after: nothing captured
    QTRY_COMPARE(funnel.pendingCalls(), 0);
    QCOMPARE(calls, 0);
    QCOMPARE(CountedFunctor::live.load(), 0); // released exactly once
}

void tst_QFastConnect::receiverMovedToAnotherThread()
{
    // A call routed to the main thread follows its receiver to a worker thread.
    EventLoopThread worker;
    worker.start();
    Producer producer;
    auto *receiver = new Receiver;
    QVERIFY(QtFastConnect::connect(&producer, &Producer::plain, receiver, &Receiver::onPlain));
    Q_EMIT producer.plain(); // routed to the main thread's inbox
    receiver->moveToThread(&worker); // before the main thread delivered it
    QTRY_COMPARE(receiver->calls.load(), 1);
    QCOMPARE(receiver->lastThread.load(), &worker);
    // Cut first, as above: ~QObject in the worker would otherwise read producer.
    QObject::disconnect(&producer, nullptr, receiver, nullptr);
    deleteLaterInItsThread(receiver);
}

void tst_QFastConnect::nestedEventLoopInSlotReceivesCalls()
{
    // A slot that runs an event loop (as a modal dialog does) keeps receiving later calls, as
    // with Qt::QueuedConnection.
    Producer producer;
    Receiver receiver;
    int calls = 0;
    bool deliveredInNestedLoop = false;
    QEventLoop nested;
    QVERIFY(QtFastConnect::connect(&producer, &Producer::plain, &receiver, [&] {
        if (++calls == 1) {
            Q_EMIT producer.plain();
            QTimer::singleShot(10000, &nested, &QEventLoop::quit); // safety net only
            nested.exec();
            deliveredInNestedLoop = calls == 2;
        } else {
            nested.quit();
        }
    }));
    Q_EMIT producer.plain();
    QTRY_COMPARE(calls, 2);
    QVERIFY(deliveredInNestedLoop);
}

void tst_QFastConnect::byValueSlotGetsOneCopy()
{
    // const T& signal → by-value slot: one copy at emit, then moved into the slot (Qt: 2 copies).
    EventLoopThread worker;
    worker.start();
    Producer producer;
    auto *receiver = new Receiver;
    receiver->moveToThread(&worker);
    QVERIFY(QtFastConnect::connect(&producer, &Producer::counted, receiver,
                                   &Receiver::onCountedByValue));
    {
        const CountedValue v(7);
        Q_EMIT producer.counted(v);
    }
    QTRY_COMPARE(CountedValue::live.load(), 0);
    QCOMPARE(receiver->lastValue.load(), 7u);
    QCOMPARE(CountedValue::copies.load(), 1);
    // Cut first, as above: ~QObject in the worker would otherwise read producer.
    QObject::disconnect(&producer, nullptr, receiver, nullptr);
    deleteLaterInItsThread(receiver);
}

void tst_QFastConnect::badInput()
{
    Producer producer;
    Receiver receiver;
    Producer *nullProducer = nullptr;
    Receiver *nullReceiver = nullptr;

    QTest::ignoreMessage(QtWarningMsg,
                         QRegularExpression("invalid nullptr parameter \\(sender\\)"));
    QVERIFY(!QtFastConnect::connect(nullProducer, &Producer::plain, &receiver, &Receiver::onPlain));
    QTest::ignoreMessage(QtWarningMsg,
                         QRegularExpression("invalid nullptr parameter \\(receiver\\)"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::plain, nullReceiver, &Receiver::onPlain));
    QTest::ignoreMessage(QtWarningMsg,
                         QRegularExpression("invalid nullptr parameter \\(receiver\\)"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::plain, nullReceiver, [] {}));
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("invalid nullptr funnel"));
    QVERIFY(!QtFastConnect::connect(static_cast<QFunnel *>(nullptr), &producer, &Producer::plain,
                                    &receiver, &Receiver::onPlain));
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("unsupported connection type 0x2"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::plain, &receiver, &Receiver::onPlain,
                                    Qt::QueuedConnection));
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("unsupported connection type 0x1"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::plain, &receiver, &Receiver::onPlain,
                                    QtFastConnect::FunnelConnection | Qt::DirectConnection));
    QTest::ignoreMessage(QtWarningMsg,
                         QRegularExpression("unsupported connection flags 0x1000000"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::plain, &receiver, &Receiver::onPlain,
                                    QtFastConnect::ConnectionMode::fromInt(0x1010000)));

    // Type-erased arguments are copied through QMetaType: MoveArguments cannot be honoured.
    QTest::ignoreMessage(QtWarningMsg,
                         QRegularExpression("MoveArguments needs the pointer-to-member"));
    QVERIFY(!QtFastConnect::connect(&producer, SIGNAL(plain()), &receiver, SLOT(deleteLater()),
                                    QtFastConnect::MoveArguments));

    QObject homeless;
    homeless.moveToThread(nullptr);
    QTest::ignoreMessage(QtWarningMsg, QRegularExpression("has no thread affinity"));
    QVERIFY(!QtFastConnect::connect(&producer, &Producer::plain, &homeless, [] {}));

    // None of these left a live connection behind.
    Q_EMIT producer.plain();
    QCOMPARE(QFunnel::globalInstance()->pendingCalls(), 0);
}

void tst_QFastConnect::uniqueAndDisconnectWithMultipleInheritance_data()
{
    QTest::addColumn<bool>("funnel");
    QTest::newRow("qt-queued") << false; // the oracle
    QTest::newRow("funnel") << true;
}

// Qt::UniqueConnection refuses a second connection to the same slot, and disconnect by slot
// cuts exactly that slot's connection, for each kind of member function pointer.
void tst_QFastConnect::uniqueAndDisconnectWithMultipleInheritance()
{
    QFETCH(bool, funnel);
    using Slot = void (MultiReceiver::*)(int);
    const Slot slots[] = { &MultiReceiver::onDirect, &MultiReceiver::onVirtual,
                           static_cast<Slot>(&Mixin::onMixin) };
    Producer producer;
    MultiReceiver receiver;
    const auto connect = [&](Slot slot) {
        const Qt::ConnectionType unique =
                Qt::ConnectionType(Qt::QueuedConnection | Qt::UniqueConnection);
        return bool(funnel ? QtFastConnect::connect(
                            &producer, &Producer::sequenced, &receiver, slot,
                            QtFastConnect::FunnelConnection | Qt::UniqueConnection)
                           : QObject::connect(&producer, &Producer::sequenced, &receiver, slot,
                                              unique));
    };
    const auto disconnect = [&](Slot slot) {
        return funnel ? QtFastConnect::disconnect(&producer, &Producer::sequenced, &receiver, slot)
                      : QObject::disconnect(&producer, &Producer::sequenced, &receiver, slot);
    };
    for (Slot slot : slots)
        QVERIFY(connect(slot));
    for (Slot slot : slots) {
        const Slot copy = slot; // an equal pointer, not the same object
        QVERIFY(!connect(copy));
    }
    Q_EMIT producer.sequenced(0, 1);
    QTRY_COMPARE(receiver.mixinCalls, 1);
    QCOMPARE(receiver.directCalls, 1);
    QCOMPARE(receiver.virtualCalls, 1);

    QVERIFY(disconnect(static_cast<Slot>(&Mixin::onMixin)));
    QVERIFY(!disconnect(static_cast<Slot>(&Mixin::onMixin)));
    Q_EMIT producer.sequenced(0, 2);
    QTRY_COMPARE(receiver.directCalls, 2);
    QCOMPARE(receiver.virtualCalls, 2);
    QCOMPARE(receiver.mixinCalls, 1);
    QVERIFY(disconnect(&MultiReceiver::onVirtual));
    QVERIFY(disconnect(&MultiReceiver::onDirect));
    QVERIFY(!disconnect(&MultiReceiver::onDirect));
}

void tst_QFastConnect::uniqueSeesQtsOwnConnections_data()
{
    QTest::addColumn<bool>("funnel");
    QTest::newRow("qt-queued") << false; // the oracle
    QTest::newRow("funnel") << true;
}

// Qt::UniqueConnection compares the slot with every connection of the signal to the receiver,
// whatever its type: a queued (or funnel) connection is refused when a direct one to the same
// slot exists, and a direct one when a queued (or funnel) one exists.
void tst_QFastConnect::uniqueSeesQtsOwnConnections()
{
    QFETCH(bool, funnel);
    QStringList ran;
    FormSender s;
    FormReceiver r(QStringLiteral("r"), &ran);
    const auto connectUnique = [&] {
        return bool(funnel ? QtFastConnect::connect(
                            &s, &FormSender::value, &r, &FormReceiver::onValue,
                            QtFastConnect::FunnelConnection | Qt::UniqueConnection)
                           : QObject::connect(&s, &FormSender::value, &r, &FormReceiver::onValue,
                                              Qt::ConnectionType(Qt::QueuedConnection
                                                                 | Qt::UniqueConnection)));
    };
    const auto connectDirectUnique = [&] {
        return bool(
                QObject::connect(&s, &FormSender::value, &r, &FormReceiver::onValue,
                                 Qt::ConnectionType(Qt::DirectConnection | Qt::UniqueConnection)));
    };
    QVERIFY(connectDirectUnique());
    QVERIFY(!connectUnique());
    QVERIFY(QObject::disconnect(&s, &FormSender::value, &r, &FormReceiver::onValue));
    QVERIFY(connectUnique());
    QVERIFY(!connectDirectUnique());
    QVERIFY(!connectUnique());
    Q_EMIT s.value(1);
    QTRY_COMPARE(ran, QStringList { QStringLiteral("r.onValue") });
}

enum class DisconnectForm {
    Slot,
    AnySlot,
    AnyReceiver,
    ByName,
    ByNameAnyReceiver,
    ByMetaMethod,
    AllSignalsToReceiver,
    Everything
};

void tst_QFastConnect::disconnectForms_data()
{
    QTest::addColumn<bool>("funnel");
    QTest::addColumn<DisconnectForm>("form");
    const std::pair<const char *, DisconnectForm> forms[] = {
        { "slot", DisconnectForm::Slot },
        { "any slot", DisconnectForm::AnySlot },
        { "any receiver", DisconnectForm::AnyReceiver },
        { "by name", DisconnectForm::ByName },
        { "by name, any receiver", DisconnectForm::ByNameAnyReceiver },
        { "by QMetaMethod", DisconnectForm::ByMetaMethod },
        { "all signals to a receiver", DisconnectForm::AllSignalsToReceiver },
        { "everything", DisconnectForm::Everything },
    };
    for (const auto &[name, form] : forms) {
        QTest::addRow("qt-queued, %s", name) << false << form; // the oracle
        QTest::addRow("funnel, %s", name) << true << form;
    }
}

// Each disconnect form cuts the same connections of a funnel as QObject::disconnect() with the
// same arguments cuts of queued ones (typed, functor and by-name connections to two receivers,
// two signals), returns the same, and leaves the sender's other Qt connections alone.
void tst_QFastConnect::disconnectForms()
{
    QFETCH(bool, funnel);
    QFETCH(DisconnectForm, form);
    QStringList ran;
    FormSender s;
    FormReceiver r1(QStringLiteral("r1"), &ran);
    FormReceiver r2(QStringLiteral("r2"), &ran);
    FormReceiver bystander(QStringLiteral("direct"), &ran);
    const auto connectPmf = [&](auto signal, FormReceiver *r, auto slot) {
        return bool(funnel ? QtFastConnect::connect(&s, signal, r, slot)
                           : QObject::connect(&s, signal, r, slot, Qt::QueuedConnection));
    };
    QVERIFY(connectPmf(&FormSender::value, &r1, &FormReceiver::onValue));
    QVERIFY(connectPmf(&FormSender::value, &r2, &FormReceiver::onValue));
    QVERIFY(connectPmf(&FormSender::other, &r1, &FormReceiver::onOther));
    const auto functor = [&ran] { ran.append(QStringLiteral("r1.functor")); };
    QVERIFY(funnel ? bool(QtFastConnect::connect(&s, &FormSender::value, &r1, functor))
                   : bool(QObject::connect(&s, &FormSender::value, &r1, functor,
                                           Qt::QueuedConnection)));
    QVERIFY(funnel ? bool(QtFastConnect::connect(&s, SIGNAL(value(int)), &r1, SLOT(onName(int))))
                   : bool(QObject::connect(&s, SIGNAL(value(int)), &r1, SLOT(onName(int)),
                                           Qt::QueuedConnection)));
    // A funnel disconnect leaves Qt's own connections alone.
    QVERIFY(QObject::connect(&s, &FormSender::value, &bystander, &FormReceiver::onValue,
                             Qt::DirectConnection));

    const QMetaMethod value = QMetaMethod::fromSignal(&FormSender::value);
    const QMetaMethod onName = r1.metaObject()->method(r1.metaObject()->indexOfSlot("onName(int)"));
    const auto disconnectByForm = [&] {
        bool cut = false;
        switch (form) {
        case DisconnectForm::Slot:
            cut = funnel
                    ? QtFastConnect::disconnect(&s, &FormSender::value, &r1, &FormReceiver::onValue)
                    : QObject::disconnect(&s, &FormSender::value, &r1, &FormReceiver::onValue);
            break;
        case DisconnectForm::AnySlot:
            cut = funnel ? QtFastConnect::disconnect(&s, &FormSender::value, &r1)
                         : QObject::disconnect(&s, &FormSender::value, &r1, nullptr);
            break;
        case DisconnectForm::AnyReceiver:
            cut = funnel ? QtFastConnect::disconnect(&s, &FormSender::value)
                         : QObject::disconnect(&s, &FormSender::value, nullptr, nullptr);
            break;
        case DisconnectForm::ByName:
            cut = funnel ? QtFastConnect::disconnect(&s, SIGNAL(value(int)), &r1, SLOT(onName(int)))
                         : QObject::disconnect(&s, SIGNAL(value(int)), &r1, SLOT(onName(int)));
            break;
        case DisconnectForm::ByNameAnyReceiver:
            cut = funnel ? QtFastConnect::disconnect(&s, SIGNAL(value(int)))
                         : QObject::disconnect(&s, SIGNAL(value(int)), nullptr, nullptr);
            break;
        case DisconnectForm::ByMetaMethod:
            cut = funnel ? QtFastConnect::disconnect(&s, value, &r1, onName)
                         : QObject::disconnect(&s, value, &r1, onName);
            break;
        case DisconnectForm::AllSignalsToReceiver:
            cut = funnel ? QtFastConnect::disconnect(&s, nullptr, &r1, nullptr)
                         : QObject::disconnect(&s, nullptr, &r1, nullptr);
            break;
        case DisconnectForm::Everything:
            cut = funnel ? QtFastConnect::disconnect(&s, nullptr, nullptr, nullptr)
                         : QObject::disconnect(&s, nullptr, nullptr, nullptr);
            break;
        }
        return cut;
    };
    QVERIFY(disconnectByForm());
    // The same again finds nothing left to cut.
    QVERIFY(!disconnectByForm());

    Q_EMIT s.value(1);
    Q_EMIT s.other();
    QtFastConnect::flush();
    QCoreApplication::processEvents();
    const bool bystanderRan = ran.removeAll(QStringLiteral("direct.onValue")) == 1;
    if (funnel)
        QVERIFY(bystanderRan);
    ran.sort();
    // What QObject::disconnect() leaves of the same queued connections.
    QStringList expected;
    switch (form) {
    case DisconnectForm::Slot:
        expected = { "r1.functor", "r1.onName", "r1.onOther", "r2.onValue" };
        break;
    case DisconnectForm::AnySlot:
        expected = { "r1.onOther", "r2.onValue" };
        break;
    case DisconnectForm::AnyReceiver:
    case DisconnectForm::ByNameAnyReceiver:
        expected = { "r1.onOther" };
        break;
    case DisconnectForm::ByName:
    case DisconnectForm::ByMetaMethod:
        expected = { "r1.functor", "r1.onOther", "r1.onValue", "r2.onValue" };
        break;
    case DisconnectForm::AllSignalsToReceiver:
        expected = { "r2.onValue" };
        break;
    case DisconnectForm::Everything:
        break;
    }
    QCOMPARE(ran, expected);
}

// A binary built against earlier headers keeps its Qt::UniqueConnection and its disconnects by
// slot, through the connection registry (its capture cannot answer a funnel slot query).
void tst_QFastConnect::connectsOfEarlierHeadersStillFound()
{
    using namespace QtFastConnectPrivate;
    using Slot = EarlierHeaderCapture::Slot;
    QStringList ran;
    FormSender s;
    FormReceiver r(QStringLiteral("r"), &ran);
    const QMetaMethod signal = QMetaMethod::fromSignal(&FormSender::value);
    void (FormReceiver::*const pmf)(int) = &FormReceiver::onValue;
    const int mode = (QtFastConnect::FunnelConnection | Qt::UniqueConnection).toInt();
    const auto connectEarlier = [&] {
        auto connect = [&]() -> QMetaObject::Connection {
            auto *slot = new Slot(pmf);
            QFunnelRoute *route = prepareConnection(QFunnel::globalInstance(), &s, signal, &r, slot,
                                                    &qfcSlotImpl<Slot>, mode, 0);
            if (!route)
                return {};
            return connectCapture(&s, signal, &r, new EarlierHeaderCapture(route, slot), 0);
        };
        using Connect = decltype(connect);
        return bool(connectRecorded(
                &s, signal, &r, 'P', &pmf, sizeof(pmf), mode,
                [](void *context) { return (*static_cast<Connect *>(context))(); }, &connect));
    };
    const auto deliver = [&] {
        ran.clear();
        Q_EMIT s.value(1);
        QtFastConnect::flush();
        QCoreApplication::processEvents();
        return ran.size();
    };

    QVERIFY(connectEarlier());
    QVERIFY(!connectEarlier());
    QCOMPARE(deliver(), 1);
    QVERIFY(QtFastConnect::disconnect(&s, &FormSender::value, &r, &FormReceiver::onValue));
    QCOMPARE(deliver(), 0);

    QVERIFY(connectEarlier());
    QVERIFY(QtFastConnect::disconnect(&s, nullptr, nullptr, nullptr));
    QCOMPARE(deliver(), 0);
    QVERIFY(!QtFastConnect::disconnect(&s, nullptr, nullptr, nullptr));

    // Qt's own disconnect compares its member function pointer.
    QVERIFY(connectEarlier());
    QVERIFY(QObject::disconnect(&s, &FormSender::value, &r, &FormReceiver::onValue));
    QCOMPARE(deliver(), 0);
}

QTEST_MAIN(tst_QFastConnect)
#include "tst_qfastconnect.moc"
