// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELCONNECTIONREGISTRY_P_H
#define QFUNNELCONNECTIONREGISTRY_P_H

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

#include <QtFastConnect/qfastconnect.h>
#include <QtCore/qbytearray.h>
#include <QtCore/qhash.h>
#include <QtCore/qlist.h>
#include <QtCore/qobject.h>

#include <mutex>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// The funnel connections made by code built against earlier headers (connectRecorded()), by
// sender, signal, receiver and slot: their captures answer Qt's compare only for a member
// function pointer, so a funnel slot query (see compareTarget()) does not find them, and a
// unique connect of such code checks here. Today's connects are not recorded. Entries keep the connection's handle, so a connection cut by Qt (disconnect, sender
// or receiver destroyed, single shot) reads as dead and is purged lazily.
class QFunnelConnectionRegistry
{
public:
    // A slot as connect() and disconnect() name it: its kind and key (see connectRecorded() in
    // qfastconnect.h), and how two keys of its kind compare.
    struct SlotKey
    {
        // Keys up to this size (a pointer to member function, a method index) are kept in the
        // entry itself: a connect allocates nothing for its key.
        static constexpr size_t InlineSize = 16;

        SlotKey() = default;
        SlotKey(char kind, const void *key, size_t size, QFunnelSlotKeyEqual equal);
        bool isEmpty() const noexcept { return kind == 0; }
        bool matches(const SlotKey &other) const;
        const char *data() const noexcept
        {
            return size <= InlineSize ? inlineBytes : large.constData();
        }

        alignas(void *) char inlineBytes[InlineSize] = {};
        QByteArray large; // a key longer than InlineSize
        QFunnelSlotKeyEqual equal = nullptr; // nullptr: equal bytes
        quint32 size = 0;
        char kind = 0; // 0: a functor's, which matches no slot
    };
    struct Entry
    {
        int signalIndex; // QMetaObjectPrivate::signalIndex() of the signal
        const QObject *receiver; // receiver or context; never dereferenced
        SlotKey slotKey;
        QMetaObject::Connection handle;
    };

    static QFunnelConnectionRegistry &instance();

    // Held by a connect from its uniqueness check until its connection is recorded.
    // Recursive: a functor destroyed by a failed connect may itself connect. The standard
    // library's, so that ThreadSanitizer sees it (Qt's recursive mutex is not instrumented).
    std::recursive_mutex &lock() noexcept { return m_lock; }

    // With lock() held.
    bool containsLive(const QObject *sender, int signalIndex, const QObject *receiver,
                      const SlotKey &slotKey);
    void add(const QObject *sender, Entry entry);
    // Removes and returns the live connections that match; signalIndex -1, receiver nullptr
    // and an empty slotKey match anything.
    QList<QMetaObject::Connection> take(const QObject *sender, int signalIndex,
                                        const QObject *receiver, const SlotKey &slotKey);

private:
    void purgeDead();

    std::recursive_mutex m_lock;
    QHash<const QObject *, QList<Entry>> m_bySender;
    qsizetype m_entries = 0;
    qsizetype m_purgeAt = 1024; // a full sweep when the count doubles: amortized O(1)
};

// Removes and returns the live connections that match (see QFunnelConnectionRegistry::take());
// kind, slotKey and keySize as for connectRecorded() in qfastconnect.h.
QList<QMetaObject::Connection> takeConnections(const QObject *sender, int signalIndex,
                                               const QObject *receiver, char kind,
                                               const void *slotKey, size_t keySize,
                                               QFunnelSlotKeyEqual equal);

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELCONNECTIONREGISTRY_P_H
