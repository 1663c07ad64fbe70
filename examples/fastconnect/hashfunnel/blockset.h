// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef BLOCKSET_H
#define BLOCKSET_H

#include <QtCore/qbytearray.h>
#include <QtCore/qbytearrayview.h>
#include <QtCore/qlist.h>
#include <QtCore/qstring.h>
#include <QtCore/qstringlist.h>

// The input, read once into memory and cut into fixed-size blocks (each file's trailing partial
// block is a block too). Immutable after load(), so worker threads share it without locking.
class QBlockSet
{
public:
    // The directory of the QtCore library this process actually runs with.
    static QString qtLibraryDirectory();
    // Every libQt6*.so* file in directory, each once: symlinks to a file already listed (the
    // .so and .so.6 links of a library) are skipped.
    static QStringList qtLibraryFiles(const QString &directory);

    // Reads every file and splits it. On failure returns false and sets *errorMessage; the set
    // is then empty.
    bool load(const QStringList &paths, qsizetype blockSize, QString *errorMessage);

    qsizetype blockSize() const { return m_blockSize; }
    qsizetype blockCount() const { return m_blocks.size(); }
    QByteArrayView block(qsizetype index) const { return m_blocks.at(index); }
    qsizetype fileCount() const { return m_files.size(); }
    qint64 totalBytes() const { return m_totalBytes; }

private:
    void clear();

    QList<QByteArray> m_files;
    QList<QByteArrayView> m_blocks; // views into m_files
    qsizetype m_blockSize = 0;
    qint64 m_totalBytes = 0;
};

#endif // BLOCKSET_H
