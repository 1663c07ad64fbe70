// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "inputblocks.h"

#include <QtCore/qdir.h>
#include <QtCore/qfile.h>
#include <QtCore/qfileinfo.h>
#include <QtCore/qlibraryinfo.h>
#include <QtCore/qset.h>

#include <dlfcn.h>

static QString qtLibraryDirectory()
{
    // The QtCore we run with (LD_LIBRARY_PATH may differ from where Qt was configured to live).
    Dl_info info;
    if (dladdr(reinterpret_cast<const void *>(&qVersion), &info) && info.dli_fname)
        return QFileInfo(QFile::decodeName(info.dli_fname)).canonicalPath();
    return QLibraryInfo::path(QLibraryInfo::LibrariesPath);
}

bool InputBlocks::loadQtLibraries(QString *errorMessage)
{
    const QString directory = qtLibraryDirectory();
    QSet<QString> seen; // libQt6Core.so, .so.6 and .so.6.x.y are one file
    const QFileInfoList entries = QDir(directory).entryInfoList({ QStringLiteral("libQt6*.so*") },
                                                                QDir::Files, QDir::Name);
    for (const QFileInfo &entry : entries) {
        const QString path = entry.canonicalFilePath();
        if (path.isEmpty() || seen.contains(path))
            continue;
        seen.insert(path);
        QFile file(path);
        if (file.open(QIODevice::ReadOnly))
            m_files.append(file.readAll());
    }
    for (const QByteArray &data : std::as_const(m_files)) {
        for (qsizetype offset = 0; offset < data.size(); offset += BlockSize)
            m_blocks.append(
                    QByteArrayView(data).sliced(offset, qMin(BlockSize, data.size() - offset)));
    }
    if (m_blocks.isEmpty()) {
        *errorMessage = QStringLiteral("no readable libQt6*.so* in %1").arg(directory);
        return false;
    }
    return true;
}

qint64 InputBlocks::totalBytes() const
{
    qint64 total = 0;
    for (const QByteArray &data : m_files)
        total += data.size();
    return total;
}
