// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelconnectionregistry_p.h"
#include "qfunnelconnection_p.h"

#include <QtCore/private/qmetaobject_p.h>

#include <cstring>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelConnectionRegistry &QFunnelConnectionRegistry::instance()
{
    // Never destroyed: connections may be cut in other threads while static destructors run.
    static QFunnelConnectionRegistry *r = new QFunnelConnectionRegistry;
    return *r;
}

QFunnelConnectionRegistry::SlotKey::SlotKey(char k, const void *key, size_t n,
                                            QFunnelSlotKeyEqual eq)
    : equal(eq), size(quint32(n)), kind(k)
{
    if (n <= InlineSize)
        memcpy(inlineBytes, key, n);
    else
        large = QByteArray(static_cast<const char *>(key), qsizetype(n));
}

// Keys of one kind and size name the same slot if they compare equal as their type does (a
// member function pointer with ==); keys from code built against earlier headers carry no
// comparison, and compare by bytes unless the other key has one.
bool QFunnelConnectionRegistry::SlotKey::matches(const SlotKey &other) const
{
    if (size != other.size || isEmpty() || kind != other.kind)
        return false;
    const QFunnelSlotKeyEqual eq = equal ? equal : other.equal;
    if (!eq)
        return memcmp(data(), other.data(), size) == 0;
    return eq(data(), other.data());
}

bool QFunnelConnectionRegistry::containsLive(const QObject *sender, int signalIndex,
                                             const QObject *receiver, const SlotKey &slotKey)
{
    auto it = m_bySender.find(sender);
    if (it == m_bySender.end())
        return false;
    for (const Entry &e : std::as_const(*it)) {
        if (e.signalIndex == signalIndex && e.receiver == receiver && e.handle
            && e.slotKey.matches(slotKey)) {
            return true;
        }
    }
    return false;
}

void QFunnelConnectionRegistry::add(const QObject *sender, Entry entry)
{
    qfcAnnotateAcquire(&qfcConnectionListReaders); // [P22 drop] dropped handles may free them
    QList<Entry> &list = m_bySender[sender];
    // Dead entries of this sender go when its list would grow (a dead entry matches nothing, so
    // an address reused by a new object only inherits memory): amortized constant per connect,
    // where a sweep per connect made a sender's n connects quadratic.
    if (list.size() == list.capacity())
        m_entries -= list.removeIf([](const Entry &e) { return !e.handle; });
    list.append(std::move(entry));
    if (++m_entries >= m_purgeAt)
        purgeDead();
}

QList<QMetaObject::Connection> QFunnelConnectionRegistry::take(const QObject *sender,
                                                               int signalIndex,
                                                               const QObject *receiver,
                                                               const SlotKey &slotKey)
{
    QList<QMetaObject::Connection> found;
    qfcAnnotateAcquire(&qfcConnectionListReaders); // [P22 drop] dropped handles may free them
    auto it = m_bySender.find(sender);
    if (it == m_bySender.end())
        return found;
    m_entries -= it->removeIf([&](const Entry &e) {
        if (!e.handle)
            return true;
        if ((signalIndex >= 0 && e.signalIndex != signalIndex)
            || (receiver && e.receiver != receiver)
            || (!slotKey.isEmpty() && !e.slotKey.matches(slotKey))) {
            return false;
        }
        found.append(e.handle);
        return true;
    });
    if (it->isEmpty())
        m_bySender.erase(it);
    return found;
}

void QFunnelConnectionRegistry::purgeDead()
{
    for (auto it = m_bySender.begin(); it != m_bySender.end();) {
        m_entries -= it->removeIf([](const Entry &e) { return !e.handle; });
        if (it->isEmpty())
            it = m_bySender.erase(it);
        else
            ++it;
    }
    m_purgeAt = qMax<qsizetype>(1024, 2 * m_entries);
}

// The public header's side of the registry: every typed, by-name and by-QMetaMethod connect
// goes through connectRecorded().

static QFunnelConnectionRegistry::SlotKey makeSlotKey(char kind, const void *slotKey,
                                                      size_t keySize, QFunnelSlotKeyEqual equal)
{
    if (!slotKey)
        return {};
    return { kind, slotKey, keySize, equal };
}

QMetaObject::Connection connectRecorded(const QObject *sender, const QMetaMethod &signal,
                                        const QObject *receiver, char kind, const void *slotKey,
                                        size_t keySize, QFunnelSlotKeyEqual equal, int mode,
                                        QFunnelConnectFn connect, void *context)
{
    const int signalIndex = signal.isValid() ? QMetaObjectPrivate::signalIndex(signal) : -1;
    const QFunnelConnectionRegistry::SlotKey key = makeSlotKey(kind, slotKey, keySize, equal);
    QFunnelConnectionRegistry &reg = QFunnelConnectionRegistry::instance();
    // Under Qt::UniqueConnection, held from the check until the record: one step for other
    // connects. (A bad sender, receiver or signal is left to the connect to report.)
    std::unique_lock<std::recursive_mutex> unique(reg.lock(), std::defer_lock);
    if ((mode & Qt::UniqueConnection) && sender && receiver && signalIndex >= 0) {
        unique.lock();
        if (key.isEmpty()) {
            qWarning("QtFastConnect::connect(%s, %s): unique connections require a pointer to "
                     "member function of a QObject subclass, or a method given by name or by "
                     "QMetaMethod",
                     sender->metaObject()->className(), receiver->metaObject()->className());
            return QMetaObject::Connection();
        }
        if (reg.containsLive(sender, signalIndex, receiver, key))
            return QMetaObject::Connection(); // like QObject::connect: no warning
    }
    QMetaObject::Connection c = connect(context);
    if (c) {
        std::lock_guard<std::recursive_mutex> locker(reg.lock());
        reg.add(sender, QFunnelConnectionRegistry::Entry { signalIndex, receiver, key, c });
    }
    return c;
}

QMetaObject::Connection connectRecorded(const QObject *sender, const QMetaMethod &signal,
                                        const QObject *receiver, char kind, const void *slotKey,
                                        size_t keySize, int mode, QFunnelConnectFn connect,
                                        void *context)
{
    return connectRecorded(sender, signal, receiver, kind, slotKey, keySize, nullptr, mode, connect,
                           context);
}

QList<QMetaObject::Connection> takeConnections(const QObject *sender, int signalIndex,
                                               const QObject *receiver, char kind,
                                               const void *slotKey, size_t keySize,
                                               QFunnelSlotKeyEqual equal)
{
    QFunnelConnectionRegistry &reg = QFunnelConnectionRegistry::instance();
    std::lock_guard<std::recursive_mutex> locker(reg.lock());
    return reg.take(sender, signalIndex, receiver, makeSlotKey(kind, slotKey, keySize, equal));
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
