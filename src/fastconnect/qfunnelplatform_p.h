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

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstddef>

QT_BEGIN_NAMESPACE

// What differs per operating system, in one place (as what differs per Qt version is in
// qfunnelqtcompat_p.h): the relay thread's set-up and its short sleeps, the pool's page
// memory, and per-thread objects destroyed at thread exit. (The TLS model is every platform's
// default: see qfastconnectglobal_p.h.)
namespace QtFastConnectPrivate {

// Names the calling thread "QFunnel relay" where the system keeps thread names (debuggers,
// top -H, Windows' thread descriptions), and lets it sleep for tens of microseconds where that
// takes a setting (Linux's timer slack). The relay thread calls it once.
void setUpRelayThread() noexcept;

// The relay's sleep between rounds, 50 to 400 µs (QFunnelRelay::RoundIntervalUs): far below
// the period of Windows' default timer (1 to 15.6 ms), so there it waits on a high-resolution
// waitable timer. One per relay thread: only that thread sleeps; any thread may end a sleep
// early with wake() (a flush waiting for the next round), which also ends the next sleep if
// none is under way.
class QFunnelShortSleep
{
    Q_DISABLE_COPY_MOVE(QFunnelShortSleep)
public:
    QFunnelShortSleep() noexcept;
    ~QFunnelShortSleep();
    void sleep(std::chrono::microseconds duration) noexcept;
    void wake() noexcept;

private:
#if defined(Q_OS_WIN)
    void *m_timer = nullptr; // the waitable timer's handle, if the system has one
    void *m_woken = nullptr; // an auto-reset event
#elif defined(Q_OS_LINUX)
    std::atomic<int> m_woken { 0 }; // the futex word: 1 once woken
#else
    std::mutex m_lock;
    std::condition_variable m_wakeUp;
    bool m_woken = false; // guarded by m_lock
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

// Whether the process is exiting (Windows: ExitProcess() has ended the other threads, and the
// thread-exit callbacks run for the exiting one): nothing may wait for another thread then.
// False elsewhere, where exit() runs the calling thread's thread_local destructors first.
bool processIsExiting() noexcept;

#if defined(Q_OS_WIN)
// Runs destroy(object) when the calling thread exits, the hook registered last first, before
// the thread-detach notifications of the process's DLLs (a fiber-local storage callback,
// FlsAlloc()). When the main thread runs ExitProcess(), the other threads (relays among them)
// have already been ended: nothing destroy() does may wait for one. If the system has no FLS
// slot left, object is never destroyed.
void atThreadExit(void (*destroy)(void *), void *object);
#endif

// This thread's object of type T (default-constructed at the thread's first local()), destroyed
// when the thread exits, objects made later first. Where it is safe, a thread_local object.
// Not on Windows: MinGW-w64's GCC keeps thread_local variables in emulated TLS, whose storage
// libgcc frees at thread exit before libstdc++ runs the destructors of the thread_local objects
// in it (both are pthread key destructors, run in the order the keys were made): they ran on
// freed memory and corrupted the heap (tst_qfastconnect crashed under Wine). There the object
// lives on the heap, destroyed by atThreadExit(); only a trivially destructible pointer is
// thread_local. By then a std::thread's emulated TLS may be gone already (winpthreads runs the
// key destructors when the thread function returns): a thread_local the destructor writes gets
// fresh storage, and no address of a thread_local may be kept across a thread's life (the pool
// asks for its arena pointer's again: qPoolAllocateSlow()). T's destructor must keep a later
// local() in that thread (a thread_local destructor that runs after it) from making another.
template<typename T>
class QFunnelThreadObject
{
public:
#if defined(Q_OS_WIN)
    static T &local()
    {
        if (T *t = tlObject)
            return *t;
        T *t = new T;
        tlObject = t;
        atThreadExit(&destroy, t);
        return *t;
    }

private:
    static void destroy(void *object)
    {
        tlObject = nullptr;
        delete static_cast<T *>(object);
    }
    static inline thread_local T *tlObject = nullptr;
#else
    static T &local()
    {
        return tlObject;
    }

private:
    static inline thread_local T tlObject;
#endif
};

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE

#endif // QFUNNELPLATFORM_P_H
