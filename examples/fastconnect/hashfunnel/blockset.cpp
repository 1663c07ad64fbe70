// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#include "blockset.h"

#include <QtCore/qdir.h>
#include <QtCore/qfile.h>
#include <QtCore/qfileinfo.h>
#include <QtCore/qlibraryinfo.h>
#include <QtCore/qset.h>

#if __has_include(<dlfcn.h>)
#include <dlfcn.h>
#define HASHFUNNEL_HAVE_DLADDR
#endif

QString QBlockSet::qtLibraryDirectory()
{
#ifdef HASHFUNNEL_HAVE_DLADDR
    // Ask the dynamic loader which file qVersion() came from: QLibraryInfo reports where Qt was
    // configured to live, which is not necessarily the QtCore we run with (LD_LIBRARY_PATH).
    Dl_info info;
    if (dladdr(reinterpret_cast<const void *>(&qVersion), &info) && info.dli_fname) {
        const QFileInfo core(QFile::decodeName(info.dli_fname));
        if (core.exists())
            return core.canonicalPath();
    }
#endif
    return QLibraryInfo::path(QLibraryInfo::LibrariesPath);
}

QStringList QBlockSet::qtLibraryFiles(const QString &directory)
{
    const QFileInfoList entries = QDir(directory).entryInfoList({ QStringLiteral("libQt6*.so*") },
                                                                QDir::Files, QDir::Name);
    QStringList files;
    QSet<QString> seen;
    for (const QFileInfo &entry : entries) {
        // Resolve links, so that libQt6Core.so, .so.6 and .so.6.4.2 are read once.
        const QString target = entry.canonicalFilePath();
        if (target.isEmpty() || seen.contains(target))
            continue;
        seen.insert(target);
        files.append(target);
    }
    return files;
}

void QBlockSet::clear()
{
    m_files.clear();
    m_blocks.clear();
    m_blockSize = 0;
    m_totalBytes = 0;
}

bool QBlockSet::load(const QStringList &paths, qsizetype blockSize, QString *errorMessage)
{
    Q_ASSERT(blockSize > 0);
    clear();
    for (const QString &path : paths) {
        const QFileInfo info(path);
        QString problem;
        QFile file(path);
        if (!info.exists())
            problem = QStringLiteral("no such file");
        else if (info.isDir())
            problem = QStringLiteral("is a directory");
        else if (!file.open(QIODevice::ReadOnly))
            problem = file.errorString();
        if (problem.isEmpty()) {
            QByteArray data = file.readAll();
            if (file.error() == QFileDevice::NoError)
                m_files.append(std::move(data));
            else
                problem = file.errorString();
        }
        if (!problem.isEmpty()) {
            *errorMessage = QStringLiteral("cannot read %1: %2").arg(path, problem);
            clear();
            return false;
        }
    }

    m_blockSize = blockSize;
    qsizetype count = 0;
    for (const QByteArray &data : std::as_const(m_files))
        count += (data.size() + blockSize - 1) / blockSize;
    m_blocks.reserve(count);
    for (const QByteArray &data : std::as_const(m_files)) {
        m_totalBytes += data.size();
        for (qsizetype offset = 0; offset < data.size(); offset += blockSize)
            m_blocks.append(
                    QByteArrayView(data).sliced(offset, qMin(blockSize, data.size() - offset)));
    }
    return true;
}
