// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELQTCOMPAT_P_H
#define QFUNNELQTCOMPAT_P_H

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

// The one place where the Qt private API this module uses differs between the Qt 6 releases it
// supports (6.4 to the newest). Each difference is detected from the Qt headers themselves
// (what a type can be constructed from, which member exists), not from version numbers, so a
// backport in a distribution's Qt is picked up too.

#include <QtFastConnect/qfastconnectglobal.h>
#include <QtCore/qmetatype.h>
#include <QtCore/private/qobject_p.h>
#include <QtCore/private/qobject_p_p.h>

#include <type_traits>

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

// Whether a QThread is in QThreadPrivate::finish() (its finished() signal may have run): Qt up
// to 6.8 keeps a flag, later releases a state; read with the thread's mutex held.
template<typename D>
auto qfcThreadIsFinishing(const D *d, int) noexcept -> decltype(bool(d->isInFinish))
{
    return d->isInFinish;
}
template<typename D>
auto qfcThreadIsFinishing(const D *d, long) noexcept -> decltype(d->threadState == D::Finishing)
{
    return d->threadState == D::Finishing;
}

// What sender() and senderSignalIndex() read while a slot runs. Qt 6.4 finds the receiver's
// ConnectionData itself; later releases take it as a fourth argument. Construct it only when
// that ConnectionData exists.
class QFunnelSenderScope : public QObjectPrivate::Sender
{
    template<typename S>
    static constexpr bool TakesConnectionData =
            std::is_constructible_v<S, QObject *, QObject *, int, QObjectPrivate::ConnectionData *>;

public:
    template<typename S = QObjectPrivate::Sender,
             std::enable_if_t<TakesConnectionData<S>, bool> = true>
    QFunnelSenderScope(QObject *receiver, QObject *sender, int signal,
                       QObjectPrivate::ConnectionData *receiverConnections)
        : S(receiver, sender, signal, receiverConnections)
    {}
    template<typename S = QObjectPrivate::Sender,
             std::enable_if_t<!TakesConnectionData<S>, bool> = true>
    QFunnelSenderScope(QObject *receiver, QObject *sender, int signal,
                       QObjectPrivate::ConnectionData *)
        : S(receiver, sender, signal)
    {}

    // Whether the receiver was destroyed while this scope was current: ~QObject clears the
    // receiver of every scope on its sender stack (QObjectPrivate::Sender::receiverDeleted()).
    bool receiverDestroyed() const noexcept { return !receiver; }
};

// Whether a value of type can be copied into a queued call. Qt >= 6.5 leaves the interface's
// copy constructor null for trivially copyable types and answers with isCopyConstructible();
// Qt 6.4 has no such function and sets copyCtr for every copyable type.
template<typename MT = QMetaType>
auto qfcIsCopyConstructible(MT type, int) -> decltype(type.isCopyConstructible())
{
    return type.isCopyConstructible();
}
template<typename MT = QMetaType>
bool qfcIsCopyConstructible(MT type, long)
{
    const QtPrivate::QMetaTypeInterface *iface = type.iface();
    return iface && iface->copyCtr;
}
inline bool isCopyConstructible(QMetaType type)
{
    return type.isValid() && qfcIsCopyConstructible(type, 0);
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELQTCOMPAT_P_H
