// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef SANITIZERS_H
#define SANITIZERS_H

// QFC_SANITIZED: built with AddressSanitizer or ThreadSanitizer (g++ or clang), where stress
// tests run fewer rounds: the same interleavings, at a fraction of the speed.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define QFC_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define QFC_SANITIZED 1
#endif
#endif

// QFC_THREAD_SANITIZED: built with ThreadSanitizer, which cannot see how Qt's own queued calls
// hand data over (Qt is not instrumented): rows that rely on them skip there.
#if defined(__SANITIZE_THREAD__)
#define QFC_THREAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QFC_THREAD_SANITIZED 1
#endif
#endif

// The annotations (__tsan_acquire(), __tsan_release()) tests use to show ThreadSanitizer what
// Qt orders: declared here, not left to whatever a Qt header happens to include.
#ifdef QFC_THREAD_SANITIZED
#include <sanitizer/tsan_interface.h>
#endif

namespace QfcTest {
#ifdef QFC_SANITIZED
inline constexpr bool Sanitized = true;
#else
inline constexpr bool Sanitized = false;
#endif
#ifdef QFC_THREAD_SANITIZED
inline constexpr bool ThreadSanitized = true;
#else
inline constexpr bool ThreadSanitized = false;
#endif
} // namespace QfcTest

#endif // SANITIZERS_H
