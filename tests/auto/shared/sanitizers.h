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

#endif // SANITIZERS_H
