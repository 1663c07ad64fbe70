// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCONNECTION_P_H
#define QFUNNELCONNECTION_P_H

//
//  W A R N I N G
//  -------------
//
// This file is not part of the QtFastConnect API. It exists purely as an
// implementation detail. This header file may change from version to
// version without notice, or even be removed.
//
// We mean it.
//

#include "qfunnelroute_p.h"

#include <atomic>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Connection set-up, shared by connect(), invoke() and connect by name.

// What a refused connect or invoke names in its warning: the text, or the connect's
// "QtFastConnect::connect(Sender::signal(args), Receiver)", spelled out only when a warning is
// printed (methodSignature() and the concatenation cost a connect more than the rest of its
// checks).
struct QFunnelWhere
{
    const char *text = nullptr;
    const QObject *sender = nullptr;
    const QMetaMethod *signal = nullptr;
    const QObject *receiver = nullptr;

    QByteArray toByteArray() const;
};

// The one check of a receiver (or context object) shared by every connect and invoke: core has
// not stopped, the receiver has thread affinity and its thread has not finished. On success
// fills in route's core, guard and inbox (each with a reference) and returns true; otherwise
// prints a qWarning starting with where and returns false. Any thread.
bool routeToReceiver(QFunnelCore *core, const QObject *receiver, QFunnelRoute *route,
                     const QFunnelWhere &where, struct QFunnelReceiverStamp *stamp = nullptr);

// Counts the receiver threads that began to finish: bumped from QThread::finished (emitted in the
// finishing thread once Qt marked it as finishing, before QThread::wait() returns) of every
// thread routeToReceiver() accepted.
inline std::atomic<quint32> qfcThreadsFinishing { 0 };

// What routeToReceiver() checked, for a route that later calls reuse without the check (the
// invoke route cache): it still holds while no receiver thread began to finish since. It reads
// no receiver memory: the receiver may be being destroyed in its thread meanwhile. (A receiver
// moved to a thread that had finished already keeps its cached route: its calls wait there, as
// Qt's queued calls do.)
struct QFunnelReceiverStamp
{
    quint32 threadsFinishing = 0;
    bool reusable = false; // false while the receiver's thread is finishing: check every call

    bool holds() const noexcept;
};

// ThreadSanitizer only: mayMoveArguments() reads Qt's connection lists while it emits; Qt frees
// a removed connection only after every emission that could reach it has ended, counting them
// with atomics ThreadSanitizer cannot see. The reader releases this address when it is done,
// and whoever drops a connection handle (QFunnelConnectionRegistry) acquires it first.
inline char qfcConnectionListReaders = 0;

inline bool QFunnelReceiverStamp::holds() const noexcept
{
    // [P26 read] relaxed: Qt's thread mutex orders the count's bump after the check that made the
    // stamp, and before a QThread::wait() that returns; a stale read is the check's own race.
    return reusable && threadsFinishing == qfcThreadsFinishing.load(std::memory_order_relaxed);
}

// What QtFastConnect's disconnect and a unique connect by name hand to Qt's compare of slot
// objects (Qt passes a void ** it takes for the address of a member function pointer; see
// compareTarget()). Its first word is the address of queryTag, a data address, which no member
// function pointer's first word (a function's address, or a virtual function's vtable offset)
// can equal, and it is at least as large as any member function pointer, so that Qt's own slot
// objects, which read one from it, read only the query and never match it.
struct QFunnelSlotQuery
{
    static const char queryTag;

    const void *tag = &queryTag;
    const void *key = nullptr; // as in QtFastConnect::disconnect(); nullptr: any slot
    char kind = 0; // of key: 'P' a member function pointer's address, 'M' a method index's
    void *padding[3] = {};

    QFunnelSlotQuery(char k, const void *slotKey) : key(slotKey), kind(k) {}
    void **asSlot() { return reinterpret_cast<void **>(this); }
};

// For warnings about a bad connect or invoke: the object's class, like QObject::connect() says.
inline const char *classNameOf(const QObject *o)
{
    return o ? o->metaObject()->className() : "(nullptr)";
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCONNECTION_P_H
