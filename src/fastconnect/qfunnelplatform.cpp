// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "qfunnelplatform_p.h"
#include <QtFastConnect/qpoolallocator.h>

#include <new>
#include <thread>

#if defined(Q_OS_WIN)
#include <qt_windows.h>
#ifndef CREATE_WAITABLE_TIMER_HIGH_RESOLUTION // older SDK headers (Windows 10 1803's flag)
#define CREATE_WAITABLE_TIMER_HIGH_RESOLUTION 0x00000002
#endif
#else
#include <pthread.h>
#endif
#if defined(Q_OS_LINUX)
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif
#if defined(Q_OS_UNIX)
#include <sys/mman.h>
#include <unistd.h>
#endif

QT_BEGIN_NAMESPACE

namespace QtFastConnectPrivate {

namespace {
constexpr char RelayThreadName[] = "QFunnel relay";
#if defined(Q_OS_WIN)
DWORD threadExitSlot();
#endif
} // namespace

void setUpRelayThread() noexcept
{
#if defined(Q_OS_LINUX)
    pthread_setname_np(pthread_self(), RelayThreadName);
    // The default timer slack, 50 µs, would double the shortest sleep between relay rounds.
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
#elif defined(Q_OS_DARWIN)
    pthread_setname_np(RelayThreadName);
#elif defined(Q_OS_WIN)
    // SetThreadDescription() exists from Windows 10 1607 on: looked up, not linked.
    using SetDescription = HRESULT(WINAPI *)(HANDLE, PCWSTR);
    if (HMODULE kernel = GetModuleHandleW(L"kernel32.dll")) {
        if (auto set = reinterpret_cast<SetDescription>(
                    reinterpret_cast<void *>(GetProcAddress(kernel, "SetThreadDescription")))) {
            set(GetCurrentThread(), L"QFunnel relay");
        }
    }
    // This thread's fiber-local storage, made before QFunnelRelay::start() returns if thread
    // start did not make it: a thread's first FlsSetValue() takes the lock under which Wine runs
    // other threads' FLS callbacks, one of which may be waiting for this thread. Setting our
    // slot's null value runs no callback at exit.
    const DWORD slot = threadExitSlot();
    if (slot != FLS_OUT_OF_INDEXES)
        FlsSetValue(slot, FlsGetValue(slot));
#endif
}

bool processIsExiting() noexcept
{
#if defined(Q_OS_WIN)
    // RtlDllShutdownInProgress(): exported by ntdll, documented from Windows 10 on (Microsoft,
    // learn.microsoft.com/windows/win32/devnotes/rtldllshutdowninprogress); Wine has it too.
    // Looked up, not linked; without it, the answer is no.
    using ShutdownInProgress = BOOLEAN(NTAPI *)();
    static const auto inProgress = [] {
        HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
        return ntdll ? reinterpret_cast<ShutdownInProgress>(
                       reinterpret_cast<void *>(GetProcAddress(ntdll, "RtlDllShutdownInProgress")))
                     : nullptr;
    }();
    return inProgress && inProgress();
#else
    return false;
#endif
}

#if defined(Q_OS_WIN)
// Sleep() and std::this_thread::sleep_for() wait at least one period of the system timer, 1 to
// 15.6 ms. A timer made with CREATE_WAITABLE_TIMER_HIGH_RESOLUTION (Windows 10 1803 and later)
// is "for time-critical situations when short expiration delays on the order of a few
// milliseconds are unacceptable" (Microsoft, CreateWaitableTimerExW, learn.microsoft.com/
// windows/win32/api/synchapi/nf-synchapi-createwaitabletimerexw); its due time is given in
// 100 ns units (SetWaitableTimer). Older systems get the plain sleep.
QFunnelShortSleep::QFunnelShortSleep() noexcept
{
    m_timer = CreateWaitableTimerExW(nullptr, nullptr, CREATE_WAITABLE_TIMER_HIGH_RESOLUTION,
                                     TIMER_ALL_ACCESS);
    m_woken = CreateEventW(nullptr, FALSE, FALSE, nullptr);
}

QFunnelShortSleep::~QFunnelShortSleep()
{
    if (m_timer)
        CloseHandle(m_timer);
    if (m_woken)
        CloseHandle(m_woken);
}

void QFunnelShortSleep::sleep(std::chrono::microseconds duration) noexcept
{
    if (m_timer && m_woken) {
        LARGE_INTEGER due;
        due.QuadPart = -LONGLONG(duration.count()) * 10; // relative, in 100 ns units
        if (SetWaitableTimer(m_timer, &due, 0, nullptr, nullptr, FALSE)) {
            HANDLE handles[] = { m_timer, m_woken };
            if (WaitForMultipleObjects(2, handles, FALSE, INFINITE) != WAIT_OBJECT_0)
                CancelWaitableTimer(m_timer); // woken: the timer must not end the next sleep
            return;
        }
    }
    std::this_thread::sleep_for(duration); // older systems: not woken early
}

void QFunnelShortSleep::wake() noexcept
{
    if (m_woken)
        SetEvent(m_woken);
}
#elif defined(Q_OS_LINUX)
// A futex wait with a timeout: one system call, as nanosleep() was, and like it late by the
// thread's timer slack (setUpRelayThread()). Relaxed: the word only ends the sleep; what the
// waker queued is published by the queue.
QFunnelShortSleep::QFunnelShortSleep() noexcept = default;
QFunnelShortSleep::~QFunnelShortSleep() = default;

void QFunnelShortSleep::sleep(std::chrono::microseconds duration) noexcept
{
    if (m_woken.exchange(0, std::memory_order_relaxed))
        return; // woken while awake: a round at once
    const auto s = std::chrono::duration_cast<std::chrono::seconds>(duration);
    timespec timeout = {};
    timeout.tv_sec = s.count();
    timeout.tv_nsec = (duration - s).count() * 1000;
    // Returns at once if a wake() came in between (the word is no longer 0). A 32-bit build with
    // a 64-bit time_t (Debian 13's armhf) has a timespec the old system call misreads.
    long call = SYS_futex;
#ifdef SYS_futex_time64
    if constexpr (sizeof(timeout.tv_sec) > sizeof(long))
        call = SYS_futex_time64;
#endif
    syscall(call, &m_woken, FUTEX_WAIT_PRIVATE, 0, &timeout, nullptr, 0);
    m_woken.store(0, std::memory_order_relaxed);
}

void QFunnelShortSleep::wake() noexcept
{
    if (!m_woken.exchange(1, std::memory_order_relaxed))
        syscall(SYS_futex, &m_woken, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}
#else
// A condition variable's timed wait: like nanosleep(), its wake-up is late by the system's
// timer granularity.
QFunnelShortSleep::QFunnelShortSleep() noexcept = default;
QFunnelShortSleep::~QFunnelShortSleep() = default;

void QFunnelShortSleep::sleep(std::chrono::microseconds duration) noexcept
{
    std::unique_lock<std::mutex> locker(m_lock);
    m_wakeUp.wait_for(locker, duration, [this] { return m_woken; });
    m_woken = false;
}

void QFunnelShortSleep::wake() noexcept
{
    {
        std::lock_guard<std::mutex> locker(m_lock);
        m_woken = true;
    }
    m_wakeUp.notify_one();
}
#endif

#if defined(Q_OS_WIN)
namespace {
struct ThreadExitHook
{
    void (*destroy)(void *);
    void *object;
    ThreadExitHook *next; // registered before this one
};

// The FLS callback: Windows calls it with the slot's value when the thread exits, in
// LdrShutdownThread() before the DLL_THREAD_DETACH notifications (and the TLS callbacks that
// run MinGW's pthread key destructors).
void WINAPI runThreadExitHooks(void *hooks)
{
    for (auto *h = static_cast<ThreadExitHook *>(hooks); h;) {
        ThreadExitHook *const next = h->next;
        h->destroy(h->object);
        delete h;
        h = next;
    }
}

DWORD threadExitSlot()
{
    static const DWORD slot = FlsAlloc(&runThreadExitHooks);
    return slot;
}
} // namespace

void atThreadExit(void (*destroy)(void *), void *object)
{
    const DWORD slot = threadExitSlot();
    if (slot == FLS_OUT_OF_INDEXES)
        return;
    auto *h = new ThreadExitHook { destroy, object,
                                   static_cast<ThreadExitHook *>(FlsGetValue(slot)) };
    FlsSetValue(slot, h);
}
#endif

char *mapPages(std::size_t bytes) noexcept
{
#if defined(Q_OS_UNIX)
    // System pages are at least 4 KiB wherever Qt runs, so mmap() returns 4 KiB aligned memory.
    void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<char *>(p);
#else
    return static_cast<char *>(
            ::operator new(bytes, std::align_val_t(QPoolPageSize), std::nothrow));
#endif
}

void unmapPages(char *pages, std::size_t bytes) noexcept
{
#if defined(Q_OS_UNIX)
    munmap(pages, bytes);
#else
    Q_UNUSED(bytes);
    ::operator delete(pages, std::align_val_t(QPoolPageSize));
#endif
}

void discardPage(void *page, std::size_t bytes) noexcept
{
#if defined(Q_OS_UNIX) && defined(MADV_DONTNEED)
    static const long systemPageSize = sysconf(_SC_PAGESIZE);
    if (systemPageSize == long(bytes))
        madvise(page, bytes, MADV_DONTNEED); // its next use faults in a zero page
#else
    Q_UNUSED(page);
    Q_UNUSED(bytes);
#endif
}

} // namespace QtFastConnectPrivate

QT_END_NAMESPACE
