// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef COUNTEDVALUE_H
#define COUNTEDVALUE_H

#include <QtCore/qglobal.h>

#include <atomic>

// An argument type that counts its live instances, copies and moves, from any thread.
struct CountedValue
{
    static inline std::atomic<int> live { 0 };
    static inline std::atomic<int> copies { 0 };
    static inline std::atomic<int> moves { 0 };
    static void resetCounters()
    {
        copies = 0;
        moves = 0;
    }

    quint64 value = 0;

    CountedValue() { ++live; }
    explicit CountedValue(quint64 v) : value(v) { ++live; }
    CountedValue(const CountedValue &o) : value(o.value)
    {
        ++live;
        ++copies;
    }
    CountedValue(CountedValue &&o) noexcept : value(o.value)
    {
        ++live;
        ++moves;
    }
    CountedValue &operator=(const CountedValue &o)
    {
        value = o.value;
        ++copies;
        return *this;
    }
    CountedValue &operator=(CountedValue &&o) noexcept
    {
        value = o.value;
        ++moves;
        return *this;
    }
    ~CountedValue() { --live; }
};

#endif // COUNTEDVALUE_H
