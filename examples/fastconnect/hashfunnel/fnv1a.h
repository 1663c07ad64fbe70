// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef FNV1A_H
#define FNV1A_H

#include <QtCore/qbytearrayview.h>
#include <QtCore/qglobal.h>

// FNV-1a, 64 bits: byte-serial on purpose, so that hashing a block costs real, predictable work
// that grows with the block size.
inline quint64 qFnv1a64(QByteArrayView data) noexcept
{
    quint64 hash = 0xcbf29ce484222325ULL;
    for (const char c : data) {
        hash ^= quint8(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

#endif // FNV1A_H
