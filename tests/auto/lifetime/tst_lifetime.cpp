// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// Lifetime and robustness scenarios as users reported them: receivers deleted, disconnected,
// moved, stuck or nested while producers emit, funnels that depend on each other, a second
// QCoreApplication, and a seeded torture mixing all of it. Each runs with Qt::QueuedConnection
// (the "qt-queued" rows, the reference: if one fails, the test is wrong) and with the funnel, in
// the same process. Waits have deadlines that only guard against a hang; a scenario that hangs
// fails at its deadline and leaves its blocked threads behind (see abandon()).

#include "childprocess.h"
#include "countedvalue.h"
#include "eventloopthread.h"
#include "movableobject.h"
#include "sanitizers.h"

#include <QtFastConnect/qfastconnect.h>
#include <QtFastConnect/qfastinvoke.h>
#include <QtCore/qcoreapplication.h>
#include <QtCore/qdeadlinetimer.h>
#include <QtCore/qelapsedtimer.h>
#include <QtCore/qeventloop.h>
#include <QtCore/qpointer.h>
#include <QtCore/qprocess.h>
#include <QtCore/qrandom.h>
#include <QtCore/qscopeguard.h>
#include <QtCore/qsemaphore.h>
#include <QtCore/qthread.h>
#include <QtCore/qtimer.h>
#include <QtTest/qtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

namespace {

using QfcTest::Sanitized;

// Only guards against a hang: a scenario that passes meets its condition long before.
constexpr int HangTimeoutMs = Sanitized ? 60000 : 20000;

enum Path { QtQueued, Funnel };

quint64 envNumber(const char *name, quint64 fallback)
{
    bool ok = false;
    const quint64 v = qEnvironmentVariable(name).toULongLong(&ok);
    return ok && v > 0 ? v : fallback;
}

// printf-style message for QFAIL and QVERIFY2; the compiler checks the arguments.
Q_ATTRIBUTE_FORMAT_PRINTF(1, 2) QByteArray text(const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    const QString s = QString::vasprintf(format, ap);
    va_end(ap);
    return s.toUtf8();
}

// Waits for done() while this thread's events run; false at the deadline.
template<typename Predicate>
bool waitFor(Predicate done, int timeoutMs = HangTimeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QTest::qWait(1);
    }
    return true;
}

// Set once a scenario left threads blocked inside the library; main() then skips exit handlers.
std::atomic<bool> g_abandoned { false };

// A hung scenario's threads stay blocked inside the funnel: joining them would hang, and
// destroying what they use would let them run on freed memory if something woke them. So the
// scenario's state is leaked on purpose, kept reachable for LeakSanitizer.
template<typename T>
void abandon(std::unique_ptr<T> &state)
{
    static auto *kept = new std::vector<void *>;
    kept->push_back(state.release());
    g_abandoned = true;
}

// A std::thread (its join is visible to ThreadSanitizer, QThread::wait()'s is not) that the
// test waits for by a deadline. One still running when destroyed after that is detached, so
// that a hung thread fails its test instead of hanging the binary.
class BoundedThread
{
public:
    template<typename F>
    explicit BoundedThread(F &&f)
        : m_finished(std::make_shared<std::atomic<bool>>(false)),
          m_thread([finished = m_finished, f = std::forward<F>(f)]() mutable {
              f();
              finished->store(true);
          })
    {}
    ~BoundedThread()
    {
        if (join())
            return;
        qWarning("a thread of this test is stuck; it is left running");
        m_thread.detach();
        g_abandoned = true;
    }
    bool isFinished() const { return m_finished->load(); }
    bool join(int timeoutMs = HangTimeoutMs)
    {
        if (!m_thread.joinable())
            return true;
        if (!waitFor([this] { return isFinished(); }, timeoutMs))
            return false;
        m_thread.join();
        return true;
    }

private:
    // Shared: a detached thread may still set it. Before m_thread: set up before it starts.
    std::shared_ptr<std::atomic<bool>> m_finished;
    std::thread m_thread;
};

class Producer : public QObject
{
    Q_OBJECT
Q_SIGNALS:
    void value(quint64 v);
    void toStuck(quint64 v);
    void seq(int producer, quint64 n);
    void moved(CountedValue v); // by value: MoveArguments can move it
};

// The receiver of most scenarios; counts its live instances and the calls that ran outside
// its thread, over all instances.
class Receiver : public MovableObject
{
    Q_OBJECT
public:
    static inline std::atomic<int> live { 0 };
    static inline std::atomic<quint64> wrongThreadCalls { 0 };

    explicit Receiver(std::atomic<quint64> *counter = nullptr) : m_counter(counter) { ++live; }
    ~Receiver() override { --live; }

    std::atomic<quint64> calls { 0 };
    std::atomic<quint64> last { 0 };
    std::atomic<QThread *> lastThread { nullptr };
    // With checkOrder, values must come as 0, 1, 2, ... (one producer).
    bool checkOrder = false;
    std::atomic<quint64> outOfOrder { 0 };

    Q_INVOKABLE void disconnectAllAndDelete(bool now)
    {
        disconnect(); // QObject::disconnect(this, nullptr, nullptr, nullptr)
        if (now)
            delete this;
        else
            deleteLater();
    }

public Q_SLOTS:
    void onValue(quint64 v) { record(v); }
    void onMoved(CountedValue v) { record(v.value); }

private:
    void record(quint64 v)
    {
        if (thread() != QThread::currentThread())
            ++wrongThreadCalls;
        if (checkOrder) {
            if (v != m_next)
                ++outOfOrder;
            m_next = v + 1;
        }
        last = v;
        lastThread = QThread::currentThread();
        if (m_counter)
            ++*m_counter;
        ++calls; // last: a reader that sees the count sees the rest
    }

    std::atomic<quint64> *m_counter;
    quint64 m_next = 0;
};

// Gets every emission of up to MaxProducers producers; checks each producer's order.
class OrderedReceiver : public QObject
{
    Q_OBJECT
public:
    static constexpr int MaxProducers = 4;
    explicit OrderedReceiver(std::atomic<quint64> *counter) : m_counter(counter) {}

    std::array<std::atomic<quint64>, MaxProducers> next {};
    std::atomic<quint64> outOfOrder { 0 };

public Q_SLOTS:
    void onSeq(int producer, quint64 n)
    {
        if (n != next[producer].load(std::memory_order_relaxed))
            ++outOfOrder;
        ++*m_counter;
        next[producer].store(n + 1);
    }

private:
    std::atomic<quint64> *m_counter;
};

// An event another thread posted travelled through Qt's posted-event list, whose locks
// ThreadSanitizer cannot see (Qt is not instrumented); the funnel's wake-up events are
// published for it (qfcAnnotateRelease()) before they are posted. No code without TSan.
inline QEvent::Type typeOfPosted(QEvent *e)
{
    QtFastConnectPrivate::qfcAnnotateAcquire(e);
    return e->type();
}

// Scenario 2's stuck receivers: one that swallows every QEvent::MetaCall in event(), and an
// event filter that does the same; until the test lets them go, to destroy them in their thread
// (deleteLaterInItsThread() posts a functor there under ThreadSanitizer).
std::atomic<bool> g_swallowMetaCalls { true };
class SwallowingReceiver : public Receiver
{
    Q_OBJECT
public:
    using Receiver::Receiver;

protected:
    bool event(QEvent *e) override
    {
        if (typeOfPosted(e) == QEvent::MetaCall && g_swallowMetaCalls.load())
            return true;
        return Receiver::event(e);
    }
};

class MetaCallSwallower : public QObject
{
    Q_OBJECT
public:
    using QObject::QObject;

protected:
    bool eventFilter(QObject *, QEvent *e) override
    {
        return typeOfPosted(e) == QEvent::MetaCall && g_swallowMetaCalls.load();
    }
};

// Scenario 3: thread A's client sends requests, thread B's server replies from its slot.
class Client : public QObject
{
    Q_OBJECT
public:
    std::atomic<int> sent { 0 };
    std::atomic<int> replies { 0 };
    std::atomic<int> outOfOrder { 0 };
    void sendBurst(int n)
    {
        for (int i = 0; i < n; ++i) {
            Q_EMIT request(i);
            ++sent;
        }
    }
public Q_SLOTS:
    void onReply(int id)
    {
        if (id != replies.load())
            ++outOfOrder;
        ++replies;
    }
Q_SIGNALS:
    void request(int id);
};

class Server : public QObject
{
    Q_OBJECT
public:
    std::atomic<int> requests { 0 };
public Q_SLOTS:
    void onRequest(int id)
    {
        ++requests;
        Q_EMIT reply(id);
    }
Q_SIGNALS:
    void reply(int id);
};

// Scenario 4: the first call does some slow work (it waits until the whole burst is emitted),
// then runs a nested event loop until every call has run (or the hang deadline passes).
class NestingReceiver : public QObject
{
    Q_OBJECT
public:
    int expected = 0;
    int calls = 0; // this (the main) thread only
    int insideNested = 0;
    bool nestedTimedOut = false;
    std::atomic<bool> firstCallRunning { false };
    std::atomic<bool> burstEmitted { false };
public Q_SLOTS:
    void onValue(quint64)
    {
        ++calls;
        if (m_loop) {
            ++insideNested;
            if (calls == expected)
                m_loop->quit();
            return;
        }
        if (calls != 1)
            return;
        firstCallRunning = true;
        QDeadlineTimer deadline(HangTimeoutMs);
        while (!burstEmitted.load() && !deadline.hasExpired())
            QThread::usleep(100);
        QEventLoop loop;
        m_loop = &loop;
        QTimer::singleShot(HangTimeoutMs, &loop, [this, &loop] {
            nestedTimedOut = true;
            loop.quit();
        });
        loop.exec();
        m_loop = nullptr;
    }

private:
    QEventLoop *m_loop = nullptr;
};

// The four connect forms a user may port; each has a QObject::connect() twin for the reference.
enum Form { Member, Functor, ByName, ByMetaMethod };
const char *const FormNames[] = { "member slot", "functor", "by name", "QMetaMethod" };

QMetaMethod onValueMethod()
{
    const QMetaObject &mo = Receiver::staticMetaObject;
    return mo.method(mo.indexOfSlot(QMetaObject::normalizedSignature("onValue(quint64)")));
}

using ValueSignal = void (Producer::*)(quint64);

// Connects signal (of value(quint64)'s signature) to r's onValue() the way the row asks for.
QMetaObject::Connection
connectValue(int path, QFunnel *funnel, int form, Producer *s, ValueSignal signal, Receiver *r,
             QtFastConnect::ConnectionMode mode = QtFastConnect::FunnelConnection)
{
    const QMetaMethod signalMethod = QMetaMethod::fromSignal(signal);
    const QByteArray signalName = "2" + signalMethod.methodSignature(); // as SIGNAL() makes it
    const char *slotName = SLOT(onValue(quint64));
    auto functor = [r](quint64 v) { r->onValue(v); };
    const bool qt = path == QtQueued;
    switch (Form(form)) {
    case Member:
        return qt ? QObject::connect(s, signal, r, &Receiver::onValue, Qt::QueuedConnection)
                  : QtFastConnect::connect(funnel, s, signal, r, &Receiver::onValue, mode);
    case Functor:
        return qt ? QObject::connect(s, signal, r, functor, Qt::QueuedConnection)
                  : QtFastConnect::connect(funnel, s, signal, r, functor, mode);
    case ByName:
        return qt ? QObject::connect(s, signalName.constData(), r, slotName, Qt::QueuedConnection)
                  : QtFastConnect::connect(funnel, s, signalName.constData(), r, slotName, mode);
    case ByMetaMethod:
        return qt ? QObject::connect(s, signalMethod, r, onValueMethod(), Qt::QueuedConnection)
                  : QtFastConnect::connect(funnel, s, signalMethod, r, onValueMethod(), mode);
    }
    return {};
}

// invoke() for the funnel rows, QMetaObject::invokeMethod() for the reference.
bool invokeValue(int path, QFunnel *funnel, Receiver *r, quint64 v)
{
    if (path == QtQueued)
        return QMetaObject::invokeMethod(
                r, [r, v] { r->onValue(v); }, Qt::QueuedConnection);
    return QtFastConnect::invoke(funnel, r, &Receiver::onValue, v);
}

// Runs f in o's thread, later: for the test's own hand-offs. The reference rows use Qt's queued
// call; the funnel rows a private funnel's invoke(), whose hand-off ThreadSanitizer sees (Qt's
// event queue hides a functor's captures from it), and which keeps the funnels under test free
// of the test's own calls.
template<typename F>
void postToThreadOf(int path, QObject *o, F f)
{
    if (path == QtQueued) {
        QMetaObject::invokeMethod(o, std::move(f), Qt::QueuedConnection);
        return;
    }
    static QFunnel *plumbing = new QFunnel; // never destroyed: threads may outlive main()
    QtFastConnect::invoke(plumbing, o, std::move(f));
}

// Runs f in o's thread and waits for it by the hang deadline (a blocking queued call would wait
// for ever if that thread hung). Main thread only, one at a time. The task goes through an
// atomic stored after the post, which the posted functor (captureless) waits for: so
// ThreadSanitizer sees the hand-off, which Qt's event queue hides from it.
template<typename F>
bool runInThreadOf(QObject *o, F f)
{
    static std::atomic<std::function<void()> *> task { nullptr };
    static std::atomic<bool> done { false };
    // On the heap: left behind if that thread hangs, and runs late.
    auto *fn = new std::function<void()>(std::move(f));
    done.store(false, std::memory_order_relaxed);
    QMetaObject::invokeMethod(
            o,
            [] {
                std::function<void()> *t;
                while (!(t = task.exchange(nullptr, std::memory_order_acq_rel)))
                    QThread::yieldCurrentThread();
                (*t)();
                delete t;
                done.store(true, std::memory_order_release);
            },
            Qt::QueuedConnection);
    task.store(fn, std::memory_order_release);
    for (int i = 0; i < 1000 && !done.load(std::memory_order_acquire); ++i)
        QThread::yieldCurrentThread(); // usually enough, without waitFor()'s millisecond
    return waitFor([] { return done.load(std::memory_order_acquire); });
}

// A worker thread with an object in it, through which this thread can wait until the worker
// has handled everything posted to it so far.
struct Worker
{
    std::unique_ptr<EventLoopThread> thread;
    QObject *anchor = nullptr;

    void start()
    {
        thread = std::make_unique<EventLoopThread>();
        thread->start();
        anchor = new QObject;
        anchor->moveToThread(thread.get());
    }
    bool sync()
    {
        return runInThreadOf(anchor, [] {});
    }
    bool stop()
    {
        if (!sync())
            return false;
        thread->quit();
        if (!thread->wait(QDeadlineTimer(HangTimeoutMs)))
            return false;
        thread->acquireRun();
        delete anchor; // its thread has finished
        anchor = nullptr;
        return true;
    }
};

// Deletes objects in their threads and waits until they are gone.
bool destroyInTheirThreads(std::initializer_list<QObject *> objects)
{
    std::vector<QPointer<QObject>> watches;
    for (QObject *o : objects) {
        watches.emplace_back(o);
        deleteLaterInItsThread(o);
    }
    return waitFor([&] {
        for (const QPointer<QObject> &w : watches) {
            if (w)
                return false;
        }
        return true;
    });
}

// The funnel's own accounting, exact once nothing is pending.
QByteArray accountingError(const QFunnel::Statistics &s, quint64 slotRuns)
{
    if (s.emitted == s.delivered + s.dropped + s.discarded + s.coalesced && s.delivered == slotRuns)
        return {};
    return text("emitted %llu != delivered %llu + dropped %llu + discarded %llu + "
                "coalesced %llu, or slots ran %llu times (pending %lld)",
                s.emitted, s.delivered, s.dropped, s.discarded, s.coalesced, slotRuns,
                static_cast<long long>(s.pending));
}

int secondApplicationHelper(int argc, char **argv, bool funnel);

} // namespace

class tst_Lifetime : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void init();
    void receiverDeletedWhileEmitting_data();
    void receiverDeletedWhileEmitting();
    void stuckReceiverDoesNotStallOthers_data();
    void stuckReceiverDoesNotStallOthers();
    void twoFunnelsRequestReply_data() { addPaths(); }
    void twoFunnelsRequestReply();
    void nestedEventLoopRunsBurst_data() { addPaths(); }
    void nestedEventLoopRunsBurst();
    void rateLimitAfterMoveToThread_data() { addPaths(); }
    void rateLimitAfterMoveToThread();
    void reconnectAfterMoveAndFunnelGone_data() { addPaths(); }
    void reconnectAfterMoveAndFunnelGone();
    void secondApplication_data() { addPaths(); }
    void secondApplication();
    void disconnectAllThenDelete_data();
    void disconnectAllThenDelete();
    void torture_data() { addPaths(); }
    void torture();

private:
    static void addPaths()
    {
        QTest::addColumn<int>("path");
        QTest::newRow("qt-queued") << int(QtQueued);
        QTest::newRow("funnel") << int(Funnel);
    }
    bool receiversGone() const { return Receiver::live.load() == m_liveReceivers; }

    int m_liveReceivers = 0; // left by abandoned scenarios
};

void tst_Lifetime::init()
{
#if defined(__SANITIZE_THREAD__)
    // As in tst_conformance: Qt hands its queued calls over under locks ThreadSanitizer cannot
    // see (Qt is not instrumented); the reference rows run in the other builds.
    if (QByteArray(QTest::currentDataTag()).startsWith("qt-queued"))
        QSKIP("Qt::QueuedConnection is not observable by ThreadSanitizer");
#endif
    m_liveReceivers = Receiver::live.load();
    Receiver::wrongThreadCalls = 0;
}

void tst_Lifetime::receiverDeletedWhileEmitting_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("form");
    for (int form = Member; form <= ByMetaMethod; ++form) {
        QTest::addRow("qt-queued, %s", FormNames[form]) << int(QtQueued) << form;
        QTest::addRow("funnel, %s", FormNames[form]) << int(Funnel) << form;
    }
}

// A worker emits in a loop; each round the main thread makes a receiver in another thread,
// connects it, and deleteLater()s it 200 µs later, without disconnecting.
void tst_Lifetime::receiverDeletedWhileEmitting()
{
    QFETCH(int, path);
    QFETCH(int, form);
    const int rounds = int(envNumber("QFC_LIFETIME_DELETE_ROUNDS", Sanitized ? 1000 : 3000));
    QFunnel *funnel = QFunnel::globalInstance(); // what connect() uses by default
    EventLoopThread worker;
    worker.start();
    Producer producer;
    // Gets every emission. The producer stays at most 1,000 calls ahead of it, which also bounds
    // Qt's queue: the churned receivers share its thread.
    auto *permanent = new Receiver;
    permanent->checkOrder = true;
    permanent->moveToThread(&worker);
    QVERIFY(connectValue(path, funnel, form, &producer, &Producer::value, permanent));

    std::atomic<bool> stop { false };
    std::atomic<quint64> emitted { 0 };
    BoundedThread emitter([&] {
        for (quint64 i = 0; !stop.load(std::memory_order_relaxed); ++i) {
            Q_EMIT producer.value(i);
            emitted.store(i + 1, std::memory_order_relaxed);
            while (i + 1 - permanent->calls.load() > 1000 && !stop.load(std::memory_order_relaxed))
                QThread::yieldCurrentThread();
        }
    });
    auto stopEmitter = qScopeGuard([&] { stop = true; }); // before ~BoundedThread joins

    std::atomic<quint64> churnedCalls { 0 };
    for (int round = 0; round < rounds; ++round) {
        auto *r = new Receiver(&churnedCalls);
        r->moveToThread(&worker);
        QVERIFY(connectValue(path, funnel, form, &producer, &Producer::value, r));
        QThread::usleep(200);
        deleteLaterInItsThread(r); // no disconnect first
    }
    stop = true;
    QVERIFY2(emitter.join(), "the producer hung");
    const quint64 total = emitted.load();
    QVERIFY2(waitFor([&] { return Receiver::live.load() == m_liveReceivers + 1; }),
             "the deleted receivers were not destroyed");
    QVERIFY2(waitFor([&] { return permanent->calls.load() == total; }),
             text("the permanent receiver got %llu of %llu calls", permanent->calls.load(), total)
                     .constData());
    qInfo("%d receivers deleted while %llu emissions; they ran %llu calls", rounds, total,
          churnedCalls.load());
    QCOMPARE(permanent->outOfOrder.load(), 0u);
    QCOMPARE(Receiver::wrongThreadCalls.load(), 0u);
    QVERIFY(destroyInTheirThreads({ permanent }));
}

enum Stuck { FinishedThread, SwallowingEvent, SwallowingFilter, InvokeFinishedThread };

void tst_Lifetime::stuckReceiverDoesNotStallOthers_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<int>("stuck");
    const char *const names[] = { "finished thread", "event() swallows MetaCall",
                                  "event filter swallows MetaCall", "invoke, finished thread" };
    for (int stuck = FinishedThread; stuck <= InvokeFinishedThread; ++stuck) {
        QTest::addRow("qt-queued, %s", names[stuck]) << int(QtQueued) << stuck;
        QTest::addRow("funnel, %s", names[stuck]) << int(Funnel) << stuck;
    }
}

// One producer alternately sends to a receiver that never runs its calls and to a healthy one.
// The stuck receiver's calls never run (Qt keeps them posted, or the receiver swallows them),
// but they must not stop the healthy receiver's. The funnel has capacity 1,024, so that the
// stuck calls would fill it within the first rounds (the default 65,536 fills after 65,536).
void tst_Lifetime::stuckReceiverDoesNotStallOthers()
{
    QFETCH(int, path);
    QFETCH(int, stuck);
    constexpr quint64 iterations = Sanitized ? 20000 : 100000;
    const bool finishes = stuck == FinishedThread || stuck == InvokeFinishedThread;
    const bool invokes = stuck == InvokeFinishedThread;

    // On the heap: left behind if the producer hangs.
    struct State
    {
        QFunnel funnel;
        EventLoopThread healthyThread;
        EventLoopThread stuckThread;
        Producer producer;
        Receiver *healthy = nullptr;
        Receiver *stuck = nullptr;
        // The stuck receiver's slot runs, also those its thread runs while it is destroyed.
        std::atomic<quint64> stuckRuns { 0 };
        std::atomic<bool> go { false };
        std::atomic<quint64> iterations { 0 };
        std::unique_ptr<BoundedThread> emitter;
    };
    auto state = std::make_unique<State>();
    State *s = state.get();
    s->funnel.setCapacity(1024);
    s->healthyThread.start();
    s->stuckThread.start();
    s->healthy = new Receiver;
    s->healthy->checkOrder = true;
    s->healthy->moveToThread(&s->healthyThread);
    s->stuck = stuck == SwallowingEvent ? new SwallowingReceiver(&s->stuckRuns)
                                        : new Receiver(&s->stuckRuns);
    if (stuck == SwallowingFilter) // a child: it moves to the receiver's thread with it
        s->stuck->installEventFilter(new MetaCallSwallower(s->stuck));
    s->stuck->moveToThread(&s->stuckThread);
    QVERIFY(connectValue(path, &s->funnel, Member, &s->producer, &Producer::value, s->healthy));
    if (!invokes) {
        QVERIFY(connectValue(path, &s->funnel, Member, &s->producer, &Producer::toStuck, s->stuck));
    }

    auto toStuck = [s, path, invokes](quint64 v) {
        if (invokes)
            invokeValue(path, &s->funnel, s->stuck, v);
        else
            Q_EMIT s->producer.toStuck(v);
    };
    s->emitter = std::make_unique<BoundedThread>([s, toStuck, finishes] {
        if (finishes) {
            // While the stuck receiver's thread still runs (an invoke also sets up this
            // thread's route to it); then the test lets that thread finish.
            toStuck(0);
            while (!s->go.load())
                QThread::yieldCurrentThread();
        }
        for (quint64 i = 0; i < iterations; ++i) {
            toStuck(i);
            Q_EMIT s->producer.value(i);
            s->iterations.store(i + 1);
        }
    });
    if (finishes) {
        if (!waitFor([s] { return s->stuck->calls.load() == 1; })) {
            s->go = true;
            abandon(state);
            QFAIL("the call made while its thread ran never reached the stuck receiver");
        }
        s->stuckThread.quit();
        s->stuckThread.wait();
    }
    s->go = true;

    if (!waitFor([&] {
            return s->emitter->isFinished() && s->healthy->calls.load() == iterations;
        })) {
        const QByteArray why = text(
                "stalled: the producer made %llu of %llu rounds, the healthy receiver got %llu "
                "calls (funnel: %lld calls pending of capacity %lld)",
                s->iterations.load(), iterations, s->healthy->calls.load(),
                static_cast<long long>(s->funnel.pendingCalls()),
                static_cast<long long>(s->funnel.capacity()));
        abandon(state);
        QFAIL(why.constData());
    }
    QCOMPARE(s->healthy->outOfOrder.load(), 0u);
    QCOMPARE(Receiver::wrongThreadCalls.load(), 0u);
    const quint64 stuckCalls = s->stuck->calls.load();
    if (finishes)
        QCOMPARE(stuckCalls, 1u); // nothing runs in a finished thread

    if (finishes) {
        delete s->stuck; // its thread has finished; its pending calls go with it
    } else {
        g_swallowMetaCalls = false;
        QVERIFY(destroyInTheirThreads({ s->stuck }));
        g_swallowMetaCalls = true;
    }
    QVERIFY(destroyInTheirThreads({ s->healthy }));
    if (path == Funnel) {
        QVERIFY(waitFor([s] { return s->funnel.pendingCalls() == 0; }));
        // Once the stuck receiver lets its events through to be destroyed, a wake-up pending
        // for it may still run some of its calls: count them too.
        const QByteArray error =
                accountingError(s->funnel.statistics(), iterations + s->stuckRuns.load());
        QVERIFY2(error.isEmpty(), error.constData());
    }
}

// Thread A sends a burst of requests to thread B through funnel F1; each request's slot replies
// to A through funnel F2; both funnels have capacity 16. Neither funnel may wait for the other.
void tst_Lifetime::twoFunnelsRequestReply()
{
    QFETCH(int, path);
    constexpr int Requests = 200;
    struct State // on the heap: left behind if A and B hang
    {
        QFunnel f1;
        QFunnel f2;
        EventLoopThread a;
        EventLoopThread b;
        Client *client = nullptr;
        Server *server = nullptr;
    };
    auto state = std::make_unique<State>();
    State *s = state.get();
    s->f1.setCapacity(16);
    s->f2.setCapacity(16);
    s->a.start();
    s->b.start();
    s->client = new Client;
    s->client->moveToThread(&s->a);
    s->server = new Server;
    s->server->moveToThread(&s->b);
    if (path == QtQueued) {
        QVERIFY(QObject::connect(s->client, &Client::request, s->server, &Server::onRequest,
                                 Qt::QueuedConnection));
        QVERIFY(QObject::connect(s->server, &Server::reply, s->client, &Client::onReply,
                                 Qt::QueuedConnection));
    } else {
        QVERIFY(QtFastConnect::connect(&s->f1, s->client, &Client::request, s->server,
                                       &Server::onRequest));
        QVERIFY(QtFastConnect::connect(&s->f2, s->server, &Server::reply, s->client,
                                       &Client::onReply));
    }
    // The burst starts in A's thread. Captureless, the client handed over through an atomic
    // stored after the post: ThreadSanitizer sees that, not Qt's event queue (it also orders
    // the functor's allocation before its deletion there).
    static std::atomic<Client *> burstClient { nullptr };
    burstClient.store(nullptr);
    QMetaObject::invokeMethod(
            s->client,
            [] {
                Client *c;
                while (!(c = burstClient.load(std::memory_order_acquire)))
                    QThread::yieldCurrentThread();
                c->sendBurst(Requests);
            },
            Qt::QueuedConnection);
    burstClient.store(s->client, std::memory_order_release);

    if (!waitFor([s] { return s->client->replies.load() == Requests; })) {
        const QByteArray why = text(
                "deadlock: A sent %d of %d requests, B ran %d, A got %d replies (F1 pending %lld, "
                "F2 pending %lld)",
                s->client->sent.load(), Requests, s->server->requests.load(),
                s->client->replies.load(), static_cast<long long>(s->f1.pendingCalls()),
                static_cast<long long>(s->f2.pendingCalls()));
        abandon(state);
        QFAIL(why.constData());
    }
    QCOMPARE(s->client->sent.load(), Requests);
    QCOMPARE(s->server->requests.load(), Requests);
    QCOMPARE(s->client->outOfOrder.load(), 0);
    QVERIFY(destroyInTheirThreads({ s->client, s->server }));
    if (path == Funnel) {
        for (QFunnel *f : { &s->f1, &s->f2 }) {
            const QByteArray error = accountingError(f->statistics(), Requests);
            QVERIFY2(error.isEmpty(), error.constData());
        }
    }
}

// A worker emits 50,000 calls to a receiver in the main thread: one, then the rest while the
// first call's slot does some slow work; then that slot runs a nested QEventLoop until all have
// run. Every other call must run inside that nested loop.
void tst_Lifetime::nestedEventLoopRunsBurst()
{
    QFETCH(int, path);
    constexpr int total = Sanitized ? 10000 : 50000; // below the global funnel's capacity
    Producer producer;
    NestingReceiver receiver;
    receiver.expected = total;
    if (path == QtQueued) {
        QVERIFY(QObject::connect(&producer, &Producer::value, &receiver, &NestingReceiver::onValue,
                                 Qt::QueuedConnection));
    } else {
        QVERIFY(QtFastConnect::connect(&producer, &Producer::value, &receiver,
                                       &NestingReceiver::onValue));
    }
    BoundedThread emitter([&producer, &receiver, path] {
        Q_EMIT producer.value(0);
        QDeadlineTimer deadline(HangTimeoutMs);
        while (!receiver.firstCallRunning.load() && !deadline.hasExpired())
            QThread::usleep(100);
        for (int i = 1; i < total; ++i)
            Q_EMIT producer.value(quint64(i));
        if (path == Funnel)
            QtFastConnect::flush(); // all of them reach the main thread's next pass
        receiver.burstEmitted = true;
    });
    // The nested loop may wait for its own deadline first.
    QVERIFY2(waitFor([&] { return emitter.isFinished() && receiver.calls == total; },
                     2 * HangTimeoutMs),
             text("%d of %d calls ran", receiver.calls, total).constData());
    QVERIFY2(receiver.insideNested == total - 1,
             text("%d of the %d calls after the first ran inside the nested event loop%s",
                  receiver.insideNested, total - 1,
                  receiver.nestedTimedOut ? " (it gave up at the hang deadline)" : "")
                     .constData());
}

// RateLimitCalls promises that the last call of a burst always runs. Here it is parked (too
// early) when the receiver moves from T1 to T2, and T1 then finishes.
void tst_Lifetime::rateLimitAfterMoveToThread()
{
    using namespace std::chrono_literals;
    QFETCH(int, path);
    constexpr quint64 Burst = 100;
    QFunnel funnel;
    EventLoopThread t1;
    EventLoopThread t2;
    t1.start();
    t2.start();
    Producer producer;
    auto *r = new Receiver;
    r->moveToThread(&t1);
    if (path == QtQueued) {
        QVERIFY(QObject::connect(&producer, &Producer::value, r, &Receiver::onValue,
                                 Qt::QueuedConnection));
    } else {
        // A long interval: the burst's last call is surely still parked when the receiver moves.
        QVERIFY(QtFastConnect::connect(&funnel, &producer, &Producer::value, r, &Receiver::onValue,
                                       QtFastConnect::rateLimit(2s)));
    }
    Q_EMIT producer.value(1);
    QVERIFY(waitFor([r] { return r->calls.load() == 1; }));
    for (quint64 v = 2; v <= Burst; ++v)
        Q_EMIT producer.value(v);
    // The burst's wake-up is posted to the receiver, and T1 has handled it.
    funnel.flush();
    QVERIFY(runInThreadOf(r, [] {}));
    if (path == Funnel) {
        const QFunnel::Statistics s = funnel.statistics();
        if (s.delivered != 1 || s.pending != 1)
            QSKIP("the burst's last call was not parked (T1 took longer than the interval)");
        QCOMPARE(s.coalesced, Burst - 2);
    }
    r->moveFromItsThread(&t2);
    t1.quit();
    t1.wait();

    QVERIFY2(waitFor([r] { return r->last.load() == Burst; }),
             text("the burst's last call never ran: last value %llu of %llu, %llu calls, %lld "
                  "pending in the funnel",
                  r->last.load(), Burst, r->calls.load(),
                  static_cast<long long>(funnel.pendingCalls()))
                     .constData());
    QCOMPARE(Receiver::wrongThreadCalls.load(), 0u);
    if (path == Funnel) {
        QCOMPARE(r->lastThread.load(), &t2);
        QCOMPARE(r->calls.load(), 2u);
    } else {
        QCOMPARE(r->calls.load(), Burst);
    }
    QVERIFY(destroyInTheirThreads({ r }));
    if (path == Funnel) {
        const QFunnel::Statistics s = funnel.statistics();
        QCOMPARE(s.coalesced, Burst - 2);
        const QByteArray error = accountingError(s, 2);
        QVERIFY2(error.isEmpty(), error.constData());
    }
}

// A receiver connected, cut and connected again while it lives (its funnel inbox outlives the
// cut), moved to another thread in between, then connected through a new funnel once the first
// is destroyed: each connection's calls run in the receiver's thread of the time, all of them,
// and the funnels' accounting closes (ASan: nothing of either funnel stays behind).
void tst_Lifetime::reconnectAfterMoveAndFunnelGone()
{
    QFETCH(int, path);
    constexpr quint64 Calls = 100;
    auto funnel = std::make_unique<QFunnel>();
    EventLoopThread t1;
    EventLoopThread t2;
    t1.start();
    t2.start();
    Producer producer;
    auto *r = new Receiver;
    r->moveToThread(&t1);
    quint64 emitted = 0;
    const auto connectAndEmit = [&] {
        const QMetaObject::Connection c = path == QtQueued
                ? QObject::connect(&producer, &Producer::value, r, &Receiver::onValue,
                                   Qt::QueuedConnection)
                : QtFastConnect::connect(funnel.get(), &producer, &Producer::value, r,
                                         &Receiver::onValue);
        for (quint64 i = 0; i < Calls; ++i)
            Q_EMIT producer.value(++emitted);
        return c;
    };
    const auto allRan = [&] { return waitFor([&] { return r->calls.load() == emitted; }); };

    QMetaObject::Connection c = connectAndEmit();
    QVERIFY(c);
    QVERIFY(allRan());
    QCOMPARE(r->lastThread.load(), &t1);
    QVERIFY(QObject::disconnect(c));
    r->moveFromItsThread(&t2);
    t1.quit();
    QVERIFY(t1.wait(QDeadlineTimer(HangTimeoutMs)));

    c = connectAndEmit();
    QVERIFY(c);
    QVERIFY2(allRan(), text("%llu of %llu calls ran", r->calls.load(), emitted).constData());
    QCOMPARE(r->lastThread.load(), &t2);
    QVERIFY(QObject::disconnect(c));
    if (path == Funnel) {
        const QByteArray error = accountingError(funnel->statistics(), emitted);
        QVERIFY2(error.isEmpty(), error.constData());
    }

    funnel = std::make_unique<QFunnel>();
    c = connectAndEmit();
    QVERIFY(c);
    QVERIFY2(allRan(), text("%llu of %llu calls ran", r->calls.load(), emitted).constData());
    QCOMPARE(r->lastThread.load(), &t2);
    QCOMPARE(Receiver::wrongThreadCalls.load(), 0u);
    QVERIFY(destroyInTheirThreads({ r }));
    if (path == Funnel) {
        const QByteArray error = accountingError(funnel->statistics(), Calls);
        QVERIFY2(error.isEmpty(), error.constData());
    }
}

// A process that destroys its QCoreApplication and creates another one (plugin hosts, test
// runners, tools that restart their application object) keeps connecting and delivering.
// Runs this binary again as the helper (secondApplicationHelper()).
void tst_Lifetime::secondApplication()
{
    QFETCH(int, path);
#if defined(__SANITIZE_THREAD__)
    // QProcess starts the helper with vfork(), which ThreadSanitizer takes for a fork whose
    // child goes on: this process could start no thread after it.
    QSKIP("QProcess's vfork() is not supported by ThreadSanitizer; runs in the other builds");
#endif
    QProcess helper;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QFC_LIFETIME_HELPER"),
               path == Funnel ? QStringLiteral("funnel") : QStringLiteral("qt-queued"));
    helper.setProcessEnvironment(env);
    helper.setProcessChannelMode(QProcess::MergedChannels);
    helper.start(QCoreApplication::applicationFilePath(), {});
    QFC_WAIT_FOR_CHILD_START(helper);
    QVERIFY2(helper.waitForFinished(2 * HangTimeoutMs + 30000), "the helper hung");
    const QByteArray out = helper.readAll();
    QVERIFY2(helper.exitStatus() == QProcess::NormalExit, out.constData());
    for (const char *line : { "application 1: connected 1, invoked 1, delivered 1001 of 1001",
                              "application 2: connected 1, invoked 1, delivered 1001 of 1001" })
        QVERIFY2(out.contains(line), out.constData());
    QCOMPARE(helper.exitCode(), 0);
}

void tst_Lifetime::disconnectAllThenDelete_data()
{
    QTest::addColumn<int>("path");
    QTest::addColumn<bool>("connected");
    for (bool connected : { true, false }) {
        const char *feed = connected ? "connections and invokes" : "invokes only";
        QTest::addRow("qt-queued, %s", feed) << int(QtQueued) << connected;
        QTest::addRow("funnel, %s", feed) << int(Funnel) << connected;
    }
}

// Receivers in worker threads call this->disconnect() (which cuts the connections they are the
// sender of, not the ones to them) and are then deleted in their thread, while calls made to
// them earlier are pending: invokes, and (connected) what producers keep emitting to them
// through the connections made when they were created. In the invokes-only rows the producers
// emit only to the permanent receivers, which are never deleted: that keeps the funnel busy.
void tst_Lifetime::disconnectAllThenDelete()
{
    QFETCH(int, path);
    QFETCH(bool, connected);
    constexpr int Producers = 4;
    constexpr int Workers = 2;
    constexpr int Slots = 8;
    constexpr int invokesPerReceiver = 16;
    const qint64 churnMs = Sanitized ? 500 : 2000;
    QFunnel funnel; // a private one: its statistics count this test's calls only
    std::atomic<quint64> slotRuns { 0 };
    std::array<Worker, Workers> workers;
    std::array<Producer, Producers> producers;
    std::array<OrderedReceiver *, Workers> permanents;
    for (int w = 0; w < Workers; ++w) {
        workers[w].start();
        // In each worker: the producers stay at most 1,000 calls ahead of the permanent
        // receivers, and through each thread's order that bounds Qt's queues too.
        permanents[w] = new OrderedReceiver(&slotRuns);
        permanents[w]->moveToThread(workers[w].thread.get());
        for (Producer &p : producers) {
            QVERIFY(path == QtQueued
                            ? QObject::connect(&p, &Producer::seq, permanents[w],
                                               &OrderedReceiver::onSeq, Qt::QueuedConnection)
                            : QtFastConnect::connect(&funnel, &p, &Producer::seq, permanents[w],
                                                     &OrderedReceiver::onSeq));
        }
    }

    std::atomic<bool> stop { false };
    std::array<std::atomic<quint64>, Producers> emitted {};
    std::vector<std::unique_ptr<BoundedThread>> threads;
    for (int p = 0; p < Producers; ++p) {
        threads.push_back(std::make_unique<BoundedThread>([&, p] {
            for (quint64 i = 0; !stop.load(std::memory_order_relaxed); ++i) {
                Q_EMIT producers[p].seq(p, i);
                Q_EMIT producers[p].value(i);
                emitted[p].store(i + 1, std::memory_order_relaxed);
                auto behind = [&] {
                    quint64 slowest = i + 1;
                    for (OrderedReceiver *r : permanents)
                        slowest = qMin(slowest, r->next[p].load());
                    return i + 1 - slowest > 1000;
                };
                while (behind() && !stop.load(std::memory_order_relaxed))
                    QThread::yieldCurrentThread();
            }
        }));
    }
    auto stopProducers = qScopeGuard([&] { stop = true; }); // before ~BoundedThread joins

    // Each slot's receiver is replaced every Slots rounds. A replaced one disconnects all and
    // deletes itself in its thread (now, or with deleteLater()), with invokes made just before
    // pending: its thread waits at a gate until they are made.
    std::array<Receiver *, Slots> slots {};
    std::array<int, Slots> slotWorker {};
    QRandomGenerator rng(20260714);
    auto retire = [&](int i) {
        Receiver *r = slots[i];
        const bool now = rng.bounded(2);
        auto gate = std::make_shared<QSemaphore>();
        postToThreadOf(path, r, [r, now, gate] {
            gate->acquire();
            r->disconnectAllAndDelete(now);
        });
        bool invoked = true;
        for (int v = 0; v < invokesPerReceiver; ++v)
            invoked = invokeValue(path, &funnel, r, quint64(v)) && invoked;
        gate->release();
        return invoked;
    };
    QElapsedTimer clock;
    clock.start();
    quint64 rounds = 0;
    while (clock.elapsed() < churnMs) {
        const int i = int(rounds % Slots);
        if (slots[i])
            QVERIFY(retire(i));
        slots[i] = new Receiver(&slotRuns);
        slotWorker[i] = int(rng.bounded(Workers));
        slots[i]->moveToThread(workers[slotWorker[i]].thread.get());
        for (Producer &p : producers) {
            if (connected)
                QVERIFY(connectValue(path, &funnel, Member, &p, &Producer::value, slots[i]));
        }
        ++rounds;
        QThread::usleep(200); // the producers' turn
    }
    for (int i = 0; i < Slots; ++i)
        QVERIFY(retire(i));
    stop = true;
    for (auto &t : threads)
        QVERIFY2(t->join(), "a producer hung");
    QVERIFY2(waitFor([&] { return receiversGone(); }), "receivers were not destroyed");
    QVERIFY2(waitFor([&] {
                 for (OrderedReceiver *r : permanents) {
                     for (int p = 0; p < Producers; ++p) {
                         if (r->next[p].load() != emitted[p].load())
                             return false;
                     }
                 }
                 return true;
             }),
             "the permanent receivers did not get every emission");
    quint64 total = 0;
    for (const auto &e : emitted)
        total += e.load();
    qInfo("%llu receivers disconnected all and deleted themselves, %d invokes pending for each; "
          "%llu emissions",
          rounds, invokesPerReceiver, total);
    for (OrderedReceiver *r : permanents)
        QCOMPARE(r->outOfOrder.load(), 0u);
    QCOMPARE(Receiver::wrongThreadCalls.load(), 0u);
    for (OrderedReceiver *r : permanents)
        QVERIFY(destroyInTheirThreads({ r }));
    if (path == Funnel) {
        QVERIFY(waitFor([&] { return funnel.pendingCalls() == 0; }));
        const QFunnel::Statistics s = funnel.statistics();
        const QByteArray error = accountingError(s, slotRuns.load());
        QVERIFY2(error.isEmpty(), error.constData());
        QCOMPARE(s.dropped, 0u);
    }
    for (Worker &w : workers)
        QVERIFY(w.stop());
}

// Producers emit while the main thread picks actions at random: receivers and contexts made
// and connected every way, deleted, disconnected every way, moved; worker threads finished and
// replaced; the global funnel and two private ones, one of them destroyed and re-made. At the
// end every call is accounted for.
void tst_Lifetime::torture()
{
    QFETCH(int, path);
    const bool funnelRow = path == Funnel;
    constexpr int Producers = 3;
    constexpr int Workers = 3;
    constexpr int Funnels = 3; // the global one, P1, and P2 (destroyed and re-made)
    constexpr int MaxLive = 48;
    const quint32 seed = qEnvironmentVariableIsSet("QFC_LIFETIME_SEED")
            ? qEnvironmentVariable("QFC_LIFETIME_SEED").toUInt()
            : QRandomGenerator::global()->generate();
    const int rounds = int(envNumber("QFC_LIFETIME_ROUNDS", Sanitized ? 2000 : 10000));
    qInfo("seed %u, %d rounds (replay: QFC_LIFETIME_SEED=%u QFC_LIFETIME_ROUNDS=%d)", seed, rounds,
          seed, rounds);
    QRandomGenerator rng(seed);

    // On the heap: left behind (abandon()) if something hangs.
    struct State
    {
        std::array<QFunnel *, Funnels> funnels {};
        std::array<std::atomic<quint64>, Funnels> slotRuns {};
        std::array<Worker, Workers> workers;
        EventLoopThread stableThread;
        std::array<OrderedReceiver *, 2> permanents {};
        std::array<Producer, Producers> producers;
        std::atomic<bool> stop { false };
        std::atomic<quint64> allowance { 0 };
        std::array<std::atomic<quint64>, Producers> emitted {};
        std::vector<std::unique_ptr<BoundedThread>> threads;

        void makeFunnel(int f)
        {
            funnels[f] = new QFunnel;
            funnels[f]->setCapacity(4096); // small enough that producers wait at times
            // A producer blocked this long on a full funnel drops its call: counted, and a
            // failure below, instead of a hang.
            funnels[f]->setBlockTimeout(HangTimeoutMs);
        }
        ~State()
        {
            stop = true;
            threads.clear(); // joins the producers
            for (Worker &w : workers) {
                if (w.anchor)
                    w.stop();
            }
            delete funnels[1];
            delete funnels[2];
        }
    };
    auto state = std::make_unique<State>();
    State *s = state.get();
#define TORTURE_VERIFY(condition, ...)                                                             \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            abandon(state);                                                                        \
            QFAIL(text(__VA_ARGS__).constData());                                                  \
        }                                                                                          \
    } while (false)

    QFunnel *global = QFunnel::globalInstance();
    global->setBlockTimeout(HangTimeoutMs);
    auto restoreGlobal = qScopeGuard([global] { global->setBlockTimeout(-1); });
    const QFunnel::Statistics globalBefore = global->statistics();
    s->funnels[0] = global;
    s->makeFunnel(1);
    s->makeFunnel(2);
    for (Worker &w : s->workers)
        w.start();

    // The permanent receivers, one on the global funnel and one on P1, in a thread of their own.
    s->stableThread.start();
    for (int f = 0; f < 2; ++f) {
        s->permanents[f] = new OrderedReceiver(&s->slotRuns[f]);
        s->permanents[f]->moveToThread(&s->stableThread);
        for (Producer &p : s->producers) {
            QVERIFY(funnelRow ? QtFastConnect::connect(s->funnels[f], &p, &Producer::seq,
                                                       s->permanents[f], &OrderedReceiver::onSeq)
                              : QObject::connect(&p, &Producer::seq, s->permanents[f],
                                                 &OrderedReceiver::onSeq, Qt::QueuedConnection));
        }
    }

    // Producers emit as the main thread allows (32 per round each), and at most 1,000 calls
    // ahead of the permanent receivers.
    for (int p = 0; p < Producers; ++p) {
        s->threads.push_back(std::make_unique<BoundedThread>([s, p] {
            for (quint64 i = 0; !s->stop.load(std::memory_order_relaxed); ++i) {
                Q_EMIT s->producers[p].seq(p, i);
                Q_EMIT s->producers[p].value(i);
                Q_EMIT s->producers[p].moved(CountedValue(i));
                s->emitted[p].store(i + 1, std::memory_order_relaxed);
                auto mayGoOn = [&] {
                    return i + 1 < s->allowance.load(std::memory_order_relaxed)
                            && i + 1
                                    - qMin(s->permanents[0]->next[p].load(),
                                           s->permanents[1]->next[p].load())
                            <= 1000;
                };
                while (!mayGoOn() && !s->stop.load(std::memory_order_relaxed))
                    QThread::usleep(20);
            }
        }));
    }

    enum Kind { KMember, KFunctor, KByName, KMetaMethod, KCoalesce, KMoveArgs, KInvokeOnly, Kinds };
    struct Rec
    {
        Receiver *r;
        int kind;
        int funnel;
        int worker;
        int producer;
        QMetaObject::Connection c;
        bool connected;
    };
    std::vector<Rec> recs;
    std::array<bool, Producers> movedTaken {}; // MoveArguments needs the signal's only connection
    std::array<int, 12> done {};
    auto pick = [&] { return int(rng.bounded(int(recs.size()))); };
    auto indexOf = [&](Receiver *r) {
        return int(std::find_if(recs.begin(), recs.end(), [r](const Rec &x) { return x.r == r; })
                   - recs.begin());
    };
    auto cut = [&](Rec &rec) {
        rec.connected = false;
        if (rec.kind == KMoveArgs)
            movedTaken[rec.producer] = false;
    };
    // Removes recs[i]; how: 0 deleteLater, 1 a queued delete, 2 delete here (finished thread).
    auto deleteRec = [&](int i, int how) {
        Rec rec = recs[i];
        recs.erase(recs.begin() + i);
        if (rec.kind == KMoveArgs && rec.connected) {
            // Cut here, now, so that the signal can take a MoveArguments connection again.
            QObject::disconnect(rec.c);
            cut(rec);
        }
        Receiver *r = rec.r;
        if (how == 0)
            deleteLaterInItsThread(r);
        else if (how == 1)
            postToThreadOf(path, r, [r] { delete r; });
        else
            delete r;
    };
    auto moveRec = [&](Rec &rec, int to) {
        QThread *thread = s->workers[to].thread.get();
        Receiver *r = rec.r;
        rec.worker = to;
        return runInThreadOf(r, [r, thread] { r->moveToThread(thread); });
    };
    auto syncWorkers = [s] {
        for (Worker &w : s->workers) {
            if (!w.sync())
                return false;
        }
        return true;
    };

    for (int round = 0; round < rounds; ++round) {
        s->allowance += 32;
        if (round % 64 == 63) // bounds the backlog of Qt's (unbounded) queues
            TORTURE_VERIFY(syncWorkers(), "round %d: a worker thread hung", round);
        const int dice = int(rng.bounded(100));
        if (dice < 25 || recs.empty()) { // create and connect
            Rec rec {};
            rec.kind = int(rng.bounded(int(Kinds)));
            rec.funnel = int(rng.bounded(Funnels));
            rec.worker = int(rng.bounded(Workers));
            rec.producer = int(rng.bounded(Producers));
            if (rec.kind == KMoveArgs && movedTaken[rec.producer])
                rec.kind = KMember;
            rec.r = new Receiver(&s->slotRuns[rec.funnel]);
            rec.r->moveToThread(s->workers[rec.worker].thread.get());
            Producer *sender = &s->producers[rec.producer];
            QFunnel *f = s->funnels[rec.funnel];
            switch (rec.kind) {
            case KMember:
            case KFunctor:
            case KByName:
            case KMetaMethod:
                rec.c = connectValue(path, f, rec.kind - KMember + Member, sender, &Producer::value,
                                     rec.r);
                break;
            case KCoalesce:
                rec.c = connectValue(path, f, Member, sender, &Producer::value, rec.r,
                                     QtFastConnect::FunnelConnection
                                             | QtFastConnect::CoalesceCalls);
                break;
            case KMoveArgs:
                rec.c = funnelRow
                        ? QtFastConnect::connect(f, sender, &Producer::moved, rec.r,
                                                 &Receiver::onMoved, QtFastConnect::MoveArguments)
                        : QObject::connect(sender, &Producer::moved, rec.r, &Receiver::onMoved,
                                           Qt::QueuedConnection);
                movedTaken[rec.producer] = true;
                break;
            case KInvokeOnly:
                break;
            }
            rec.connected = rec.kind != KInvokeOnly;
            recs.push_back(rec);
            TORTURE_VERIFY(!rec.connected || rec.c, "round %d: connect (kind %d) failed", round,
                           rec.kind);
            ++done[0];
        } else if (dice < 35) { // a burst of invokes
            const Rec &rec = recs[pick()];
            const int n = 1 + int(rng.bounded(16));
            for (int k = 0; k < n; ++k) {
                TORTURE_VERIFY(invokeValue(path, s->funnels[rec.funnel], rec.r, quint64(k)),
                               "round %d: invoke failed", round);
            }
            ++done[1];
        } else if (dice < 43) { // deleteLater (a receiver, or a functor's context)
            deleteRec(pick(), 0);
            ++done[2];
        } else if (dice < 48) { // delete in its thread
            deleteRec(pick(), 1);
            ++done[3];
        } else if (dice < 66) { // disconnect, one of four ways
            Rec &rec = recs[pick()];
            if (!rec.connected)
                continue;
            Producer *sender = &s->producers[rec.producer];
            const int way = int(rng.bounded(4));
            bool found = true;
            if (way == 0) {
                found = QObject::disconnect(rec.c);
            } else if (way == 1) { // by signature
                const QMetaMethod valueSignal = QMetaMethod::fromSignal(&Producer::value);
                switch (rec.kind) {
                case KMember:
                case KCoalesce:
                    found = QObject::disconnect(sender, &Producer::value, rec.r,
                                                &Receiver::onValue);
                    break;
                case KFunctor:
                    found = QObject::disconnect(sender, &Producer::value, rec.r, nullptr);
                    break;
                case KByName:
                    found = funnelRow ? QtFastConnect::disconnect(sender, SIGNAL(value(quint64)),
                                                                  rec.r, SLOT(onValue(quint64)))
                                      : QObject::disconnect(sender, SIGNAL(value(quint64)), rec.r,
                                                            SLOT(onValue(quint64)));
                    break;
                case KMetaMethod:
                    found = funnelRow
                            ? QtFastConnect::disconnect(sender, valueSignal, rec.r, onValueMethod())
                            : QObject::disconnect(sender, valueSignal, rec.r, onValueMethod());
                    break;
                case KMoveArgs:
                    found = QObject::disconnect(sender, &Producer::moved, rec.r,
                                                &Receiver::onMoved);
                    break;
                }
            } else if (way == 2) {
                // What users write for "disconnect everything": it cuts the connections the
                // receiver is the sender of, not this one.
                rec.r->disconnect();
                ++done[4 + way];
                continue;
            } else {
                found = sender->disconnect(rec.r);
            }
            TORTURE_VERIFY(found, "round %d: disconnect way %d (kind %d) found no connection",
                           round, way, rec.kind);
            cut(rec);
            ++done[4 + way];
        } else if (dice < 76) { // move to another worker
            Rec &rec = recs[pick()];
            const int to = (rec.worker + 1 + int(rng.bounded(Workers - 1))) % Workers;
            TORTURE_VERIFY(moveRec(rec, to), "round %d: a move hung", round);
            ++done[8];
        } else if (dice < 79) { // a worker thread finishes; a new one replaces it
            const int w = int(rng.bounded(Workers));
            std::vector<Receiver *> leftBehind;
            for (int i = 0; i < int(recs.size());) {
                if (recs[i].worker != w) {
                    ++i;
                    continue;
                }
                switch (rng.bounded(3)) {
                case 0:
                    TORTURE_VERIFY(
                            moveRec(recs[i], (w + 1 + int(rng.bounded(Workers - 1))) % Workers),
                            "round %d: a move hung", round);
                    ++i;
                    break;
                case 1:
                    deleteRec(i, 0);
                    break;
                default:
                    // Cut before its thread finishes: QCoreApplication::postEvent() may call the
                    // event dispatcher that a finishing thread is deleting (Qt's race, which
                    // crashed the Qt::QueuedConnection row); its pending calls stay.
                    if (recs[i].connected) {
                        QObject::disconnect(recs[i].c);
                        cut(recs[i]);
                    }
                    leftBehind.push_back(recs[i].r);
                    ++i;
                    break;
                }
            }
            TORTURE_VERIFY(s->workers[w].stop(), "round %d: a worker thread hung", round);
            for (Receiver *r : leftBehind)
                deleteRec(indexOf(r), 2); // its thread has finished: from here, calls pending
            s->workers[w].start();
            ++done[9];
        } else if (dice < 81) { // destroy P2 while producers emit, and make a new one
            delete s->funnels[2];
            s->funnels[2] = nullptr;
            // A slot of the old P2 that was running has returned; none starts after ~QFunnel.
            TORTURE_VERIFY(syncWorkers(), "round %d: a worker thread hung", round);
            s->slotRuns[2] = 0; // from now on, count the new P2's
            s->makeFunnel(2);
            ++done[10];
        } else { // let the producers run
            QThread::usleep(rng.bounded(200));
            ++done[11];
        }
        if (int(recs.size()) > MaxLive)
            deleteRec(pick(), 0);
    }

    s->stop = true;
    for (auto &t : s->threads)
        TORTURE_VERIFY(t->join(), "a producer hung");
    while (!recs.empty())
        deleteRec(int(recs.size()) - 1, 0);
    TORTURE_VERIFY(waitFor([&] { return receiversGone(); }), "receivers were not destroyed");
    auto permanentsDone = [s] {
        for (OrderedReceiver *r : s->permanents) {
            for (int p = 0; p < Producers; ++p) {
                if (r->next[p].load() != s->emitted[p].load())
                    return false;
            }
        }
        return true;
    };
    TORTURE_VERIFY(waitFor(permanentsDone), "the permanent receivers did not get every emission");
    quint64 total = 0;
    for (const auto &e : s->emitted)
        total += e.load();
    qInfo("%llu emissions per signal; %d creates, %d invoke bursts, %d deleteLater, %d deletes, "
          "disconnects %d by handle, %d by signature, %d receiver->disconnect(), "
          "%d sender->disconnect(receiver); %d moves, %d finished workers, %d funnels destroyed",
          total, done[0], done[1], done[2], done[3], done[4], done[5], done[6], done[7], done[8],
          done[9], done[10]);
    for (OrderedReceiver *r : s->permanents)
        QCOMPARE(r->outOfOrder.load(), 0u);
    QCOMPARE(Receiver::wrongThreadCalls.load(), 0u);
    TORTURE_VERIFY(destroyInTheirThreads({ s->permanents[0], s->permanents[1] }),
                   "the permanent receivers were not destroyed");

    if (funnelRow) {
        TORTURE_VERIFY(waitFor([&] {
                           return global->pendingCalls() == globalBefore.pending
                                   && s->funnels[1]->pendingCalls() == 0
                                   && s->funnels[2]->pendingCalls() == 0;
                       }),
                       "calls stayed pending: global %lld (%lld before), P1 %lld, P2 %lld",
                       static_cast<long long>(global->pendingCalls()),
                       static_cast<long long>(globalBefore.pending),
                       static_cast<long long>(s->funnels[1]->pendingCalls()),
                       static_cast<long long>(s->funnels[2]->pendingCalls()));
        for (int f = 0; f < Funnels; ++f) {
            QFunnel::Statistics st = s->funnels[f]->statistics();
            if (f == 0) { // what this test did to the global funnel
                st.emitted -= globalBefore.emitted;
                st.delivered -= globalBefore.delivered;
                st.dropped -= globalBefore.dropped;
                st.discarded -= globalBefore.discarded;
                st.coalesced -= globalBefore.coalesced;
            }
            const QByteArray error = accountingError(st, s->slotRuns[f].load());
            QVERIFY2(error.isEmpty(),
                     ("funnel " + QByteArray::number(f) + ": " + error).constData());
            // Block policy: a drop means a producer waited for the hang deadline.
            QCOMPARE(st.dropped, 0u);
        }
    }
    QVERIFY(waitFor([] { return CountedValue::live.load() == 0; }));
#undef TORTURE_VERIFY
}

namespace {

// secondApplication's helper process: two QCoreApplications in turn, each connecting, emitting
// from a worker and invoking as a fresh application would. Prints a line per application; exit
// code 0 only if both delivered everything.
int secondApplicationHelper(int argc, char **argv, bool funnel)
{
    constexpr quint64 Calls = 1000;
    bool ok = true;
    for (int n = 1; n <= 2; ++n) {
        QCoreApplication app(argc, argv);
        Producer producer;
        Receiver receiver;
        const bool connected = funnel
                ? bool(QtFastConnect::connect(&producer, &Producer::value, &receiver,
                                              &Receiver::onValue))
                : bool(QObject::connect(&producer, &Producer::value, &receiver, &Receiver::onValue,
                                        Qt::QueuedConnection));
        std::thread([&producer] {
            for (quint64 i = 0; i < Calls; ++i)
                Q_EMIT producer.value(i);
        }).join();
        const bool invoked =
                invokeValue(funnel ? Funnel : QtQueued,
                            funnel ? QFunnel::globalInstance() : nullptr, &receiver, Calls);
        const quint64 expected = (connected ? Calls : 0) + (invoked ? 1 : 0);
        QDeadlineTimer deadline(HangTimeoutMs);
        while (receiver.calls.load() < expected && !deadline.hasExpired()) {
            QCoreApplication::processEvents();
            QThread::msleep(1);
        }
        QCoreApplication::processEvents();
        std::printf("application %d: connected %d, invoked %d, delivered %llu of %llu\n", n,
                    int(connected), int(invoked),
                    static_cast<unsigned long long>(receiver.calls.load()),
                    static_cast<unsigned long long>(Calls + 1));
        std::fflush(stdout);
        ok = ok && connected && invoked && receiver.calls.load() == Calls + 1;
    }
    return ok ? 0 : 1;
}

} // namespace

int main(int argc, char *argv[])
{
    const QByteArray helper = qgetenv("QFC_LIFETIME_HELPER");
    if (!helper.isEmpty())
        return secondApplicationHelper(argc, argv, helper == "funnel");
    QCoreApplication app(argc, argv);
    tst_Lifetime tc;
    QTEST_SET_MAIN_SOURCE_PATH
    const int result = QTest::qExec(&tc, argc, argv);
    if (g_abandoned) {
        // Threads are still blocked inside the funnel, on objects leaked for them: exit handlers
        // (~QCoreApplication stops the global funnel and wakes its producers) would run them on.
        std::fflush(stdout);
        std::fflush(stderr);
        std::_Exit(result ? result : 1);
    }
    return result;
}

#include "tst_lifetime.moc"
