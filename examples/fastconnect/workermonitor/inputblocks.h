// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef INPUTBLOCKS_H
#define INPUTBLOCKS_H

#include <QtCore/qbytearray.h>
#include <QtCore/qbytearrayview.h>
#include <QtCore/qlist.h>
#include <QtCore/qstring.h>

// The demo's input: the Qt libraries this process runs with, read into memory once and cut into
// fixed-size blocks. Immutable after load(), so the workers share it without a lock.
class InputBlocks
{
public:
    static constexpr qsizetype BlockSize = 4096;

    // Reads every libQt6*.so* of the directory QtCore was loaded from (each file once).
    // Returns false with *errorMessage set if there is nothing to read.
    bool loadQtLibraries(QString *errorMessage);

    qsizetype count() const { return m_blocks.size(); }
    QByteArrayView block(qsizetype index) const { return m_blocks.at(index); }
    qsizetype fileCount() const { return m_files.size(); }
    qint64 totalBytes() const;

private:
    QList<QByteArray> m_files;
    QList<QByteArrayView> m_blocks; // views into m_files
};

#endif // INPUTBLOCKS_H
