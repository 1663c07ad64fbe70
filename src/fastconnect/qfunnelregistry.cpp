// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelregistry_p.h"
#include "qfastconnect.h"

#include <QtCore/private/qmetaobject_p.h>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

QFunnelRegistry &QFunnelRegistry::instance()
{
    // Never destroyed: connections may be cut in other threads while static destructors run.
    static QFunnelRegistry *r = new QFunnelRegistry;
    return *r;
}

bool QFunnelRegistry::containsLive(const QObject *sender, int signalIndex,
                                   const QObject *receiver, const QByteArray &slotKey)
{
    auto it = m_bySender.find(sender);
    if (it == m_bySender.end())
        return false;
    for (const Entry &e : std::as_const(*it)) {
        if (e.signalIndex == signalIndex && e.receiver == receiver && e.slotKey == slotKey
            && e.handle) {
            return true;
        }
    }
    return false;
}

void QFunnelRegistry::add(const QObject *sender, Entry entry)
{
    QList<Entry> &list = m_bySender[sender];
    // Dead entries of this sender go first: an address reused by a new object starts clean.
    m_entries -= list.removeIf([](const Entry &e) { return !e.handle; });
    list.append(std::move(entry));
    if (++m_entries >= m_purgeAt)
        purgeDead();
}

QList<QMetaObject::Connection> QFunnelRegistry::take(const QObject *sender, int signalIndex,
                                                     const QObject *receiver,
                                                     const QByteArray &slotKey)
{
    QList<QMetaObject::Connection> found;
    auto it = m_bySender.find(sender);
    if (it == m_bySender.end())
        return found;
    m_entries -= it->removeIf([&](const Entry &e) {
        if (!e.handle)
            return true;
        if ((signalIndex >= 0 && e.signalIndex != signalIndex)
            || (receiver && e.receiver != receiver)
            || (!slotKey.isEmpty() && e.slotKey != slotKey)) {
            return false;
        }
        found.append(e.handle);
        return true;
    });
    if (it->isEmpty())
        m_bySender.erase(it);
    return found;
}

void QFunnelRegistry::purgeDead()
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

// The public header's side of the registry: see QFunnelConnectScope in qfastconnect.h.

static QByteArray makeSlotKey(char kind, const void *slotKey, size_t keySize)
{
    if (!slotKey)
        return QByteArray();
    QByteArray key(1, kind);
    key.append(static_cast<const char *>(slotKey), qsizetype(keySize));
    return key;
}

QFunnelConnectScope::QFunnelConnectScope(const QObject *sender, const QMetaMethod &signal,
                                         const QObject *receiver, char kind,
                                         const void *slotKey, size_t keySize,
                                         QtFastConnect::ConnectionMode mode)
    : m_sender(sender), m_receiver(receiver),
      m_signalIndex(signal.isValid() ? QMetaObjectPrivate::signalIndex(signal) : -1)
{
    m_slotKey = makeSlotKey(kind, slotKey, keySize);
    if (!sender || !receiver || m_signalIndex < 0)
        return; // the connect itself reports it
    if (mode.testFlag(Qt::UniqueConnection)) {
        // Held until record(): the check and the insertion are one step for other connects.
        QFunnelRegistry &reg = QFunnelRegistry::instance();
        reg.lock().lock();
        m_locked = true;
        if (m_slotKey.isEmpty()) {
            qWarning("QtFastConnect::connect(%s, %s): unique connections require a pointer to "
                     "member function of a QObject subclass, or a method given by name or by "
                     "QMetaMethod",
                     sender->metaObject()->className(), receiver->metaObject()->className());
            m_refused = true;
        } else if (reg.containsLive(sender, m_signalIndex, receiver, m_slotKey)) {
            m_refused = true;   // like QObject::connect: no warning, an invalid handle
        }
    }
}

QFunnelConnectScope::~QFunnelConnectScope()
{
    if (m_locked)
        QFunnelRegistry::instance().lock().unlock();
}

QMetaObject::Connection QFunnelConnectScope::record(QMetaObject::Connection c)
{
    if (c) {
        QFunnelRegistry &reg = QFunnelRegistry::instance();
        std::lock_guard<std::recursive_mutex> locker(reg.lock());
        reg.add(m_sender, QFunnelRegistry::Entry{ m_signalIndex, m_receiver, m_slotKey, c });
    }
    return c;
}

bool disconnectFunnel(const QObject *sender, const QMetaMethod &signal, const QObject *receiver,
                      char kind, const void *slotKey, size_t keySize)
{
    if (!sender) {
        qWarning("QtFastConnect::disconnect: unexpected nullptr parameter");
        return false;
    }
    if (signal.isValid() && signal.methodType() != QMetaMethod::Signal) {
        qWarning("QtFastConnect::disconnect: %s::%s is not a signal",
                 sender->metaObject()->className(), signal.methodSignature().constData());
        return false;
    }
    const int signalIndex = signal.isValid() ? QMetaObjectPrivate::signalIndex(signal) : -1;
    QList<QMetaObject::Connection> cut;
    {
        QFunnelRegistry &reg = QFunnelRegistry::instance();
        std::lock_guard<std::recursive_mutex> locker(reg.lock());
        cut = reg.take(sender, signalIndex, receiver, makeSlotKey(kind, slotKey, keySize));
    }
    // Outside the registry lock: disconnecting may destroy slot objects and run destructors.
    bool any = false;
    for (const QMetaObject::Connection &c : std::as_const(cut))
        any |= QObject::disconnect(c);
    return any;
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
