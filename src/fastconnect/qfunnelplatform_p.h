// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef QFUNNELPLATFORM_P_H
#define QFUNNELPLATFORM_P_H

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

#include <QtFastConnect/qfastconnectglobal.h>

#include <chrono>
#include <cstddef>

QT_BEGIN_NAMESPACE

// What differs per operating system, in one place (as what differs per Qt version is in
// qfunnelqtcompat_p.h): the relay thread's set-up and its short sleeps, and the pool's page
// memory. (The TLS model is every platform's default: see qfastconnectglobal_p.h.)
namespace QtFastConnectPrivate {

// Names the calling thread "QFunnel relay" where the system keeps thread names (debuggers,
// top -H, Windows' thread descriptions), and lets it sleep for tens of microseconds where that
// takes a setting (Linux's timer slack). The relay thread calls it once.
void setUpRelayThread() noexcept;

// The relay's sleep between rounds, 50 to 400 µs (QFunnelRelay::RoundIntervalUs): far below
// the period of Windows' default timer (1 to 15.6 ms), so there it waits on a high-resolution
// waitable timer. One per relay thread; only that thread uses it.
class QFunnelShortSleep
{
    Q_DISABLE_COPY_MOVE(QFunnelShortSleep)
public:
    QFunnelShortSleep() noexcept;
    ~QFunnelShortSleep();
    void sleep(std::chrono::microseconds duration) noexcept;

private:
#ifdef Q_OS_WIN
    void *m_timer = nullptr; // the waitable timer's handle, if the system has one
#endif
};

// Page memory for QPoolAllocator: bytes (a multiple of QPoolPageSize, 4 KiB) aligned to
// QPoolPageSize, or nullptr when out of memory. unmapPages() takes what one mapPages() returned,
// whole.
char *mapPages(std::size_t bytes) noexcept;
void unmapPages(char *pages, std::size_t bytes) noexcept;
// Gives the memory of a free pool page (bytes at page, aligned to QPoolPageSize) back to the
// system, keeping the address usable: its next use reads zeros. Only where the system's pages
// are that size: a larger system page holds other pool pages, still in use.
void discardPage(void *page, std::size_t bytes) noexcept;

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPLATFORM_P_H
