// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// dlopen()s a plugin (plugin.cpp, a MODULE library) that uses QtFastConnect::connect(),
// QtFastConnect::invoke() and QPoolAllocator, and counts the calls its producer threads deliver
// to a receiver in this thread. Built twice:
//   tst_plugin         does not link QtFastConnect: the library arrives with the plugin, through
//                      dlopen() (an application that does not use the module, loading a plugin
//                      that does)
//   tst_plugin_linked  links QtFastConnect
// Both fill the static TLS space that glibc keeps for dlopen()ed objects before they load the
// plugin (staticTlsExhausted()).
//
// Why: a shared object whose code accesses a thread_local with the initial-exec TLS model needs
// static TLS space (ELF flag DF_STATIC_TLS); loaded with dlopen() it gets it from a small surplus
// (about 1.5 KiB with glibc, shared by every such object), and fails to load when that is used
// up: "cannot allocate memory in static TLS block". QPoolAllocator's per-thread arena pointer is
// a thread_local of a template instantiated in the plugin's own code, so the plugin must not get
// that flag from the module's headers.

#include "plugin.h"

#include <QtCore/qcoreapplication.h>
#include <QtCore/qdir.h>
#include <QtCore/qfileinfo.h>
#include <QtTest/qtest.h>

#ifdef PLUGIN_TEST_LINKED
#include <QtFastConnect/qpoolallocator.h>
#endif

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

namespace {

struct LoadedObject
{
    bool staticTls = false; // DF_STATIC_TLS: it needs static TLS space
    quint64 tlsBytes = 0; // size of its TLS block (PT_TLS)
};

LoadedObject inspect(void *handle)
{
    LoadedObject o;
    link_map *map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map)
        return o;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; ++d) {
        if (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_STATIC_TLS))
            o.staticTls = true;
    }
    struct Search
    {
        const char *name;
        quint64 tlsBytes;
    } search { map->l_name, 0 };
    dl_iterate_phdr(
            [](dl_phdr_info *info, size_t, void *data) {
                auto *s = static_cast<Search *>(data);
                if (qstrcmp(info->dlpi_name, s->name) != 0)
                    return 0;
                for (int i = 0; i < info->dlpi_phnum; ++i) {
                    if (info->dlpi_phdr[i].p_type == PT_TLS)
                        s->tlsBytes = info->dlpi_phdr[i].p_memsz;
                }
                return 1;
            },
            &search);
    o.tlsBytes = search.tlsBytes;
    return o;
}

QString moduleDir()
{
    return QFileInfo(QString::fromLocal8Bit(PLUGIN_PATH)).absolutePath();
}

} // namespace

class tst_Plugin : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void staticTlsExhausted();
    void loadAndDeliver();
    void pluginNeedsNoStaticTls();

private:
    void *m_plugin = nullptr;
};

void tst_Plugin::initTestCase()
{
    // The library must arrive with the plugin in tst_plugin: check that this binary did not
    // bring it.
    void *early = dlopen(FASTCONNECT_SONAME, RTLD_LAZY | RTLD_NOLOAD);
#ifdef PLUGIN_TEST_LINKED
    QCOMPARE(QPoolAllocator<40>::stats().arenas, 0); // a use of the library, so it is linked
    QVERIFY2(early, "tst_plugin_linked should have loaded " FASTCONNECT_SONAME " at start-up");
#else
    QVERIFY2(!early, FASTCONNECT_SONAME " is loaded before the plugin: the test links it");
#endif
    if (early)
        dlclose(early);
}

// Fills the surplus of static TLS that glibc keeps for dlopen()ed objects, by loading objects
// with initial-exec TLS blocks of 2 KiB, 1 KiB, ... 1 byte (each one that still fits), then
// checks that an object with a single 8-byte initial-exec thread_local no longer loads (the
// positive control). loadAndDeliver() then loads the plugin in that state: other libraries of
// a real application (graphics drivers, other plugins) use that surplus too. In tst_plugin the
// library itself arrives with the plugin then, so it must not need static TLS either; in
// tst_plugin_linked it is in the static TLS block set up at start-up, and the plugin's own
// code (the module's inline templates) must not need any.
void tst_Plugin::staticTlsExhausted()
{
    int loaded = 0;
    for (int bytes = 2048; bytes >= 1; bytes /= 2) {
        const QString path = moduleDir() + QStringLiteral("/tst_plugin_tls_%1.so").arg(bytes);
        if (dlopen(QFile::encodeName(path).constData(), RTLD_NOW | RTLD_LOCAL))
            ++loaded; // kept loaded: its TLS block stays taken
    }
    QVERIFY2(loaded > 0, "no static TLS surplus at all?");
    const QByteArray control =
            QFile::encodeName(moduleDir() + QStringLiteral("/tst_plugin_tls_ie8.so"));
    void *ie = dlopen(control.constData(), RTLD_NOW | RTLD_LOCAL);
    if (ie)
        QSKIP("could not use up the static TLS surplus (an 8-byte initial-exec block still loads)");
    const QByteArray error = dlerror();
    qInfo("positive control: an object with an 8-byte initial-exec thread_local does not load: %s",
          error.constData());
    QVERIFY2(error.contains("static TLS"), error.constData());
}

void tst_Plugin::loadAndDeliver()
{
    m_plugin = dlopen(PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    QVERIFY2(m_plugin, dlerror()); // "cannot allocate memory in static TLS block": see above

    auto createReceiver =
            reinterpret_cast<PluginCreateReceiver>(dlsym(m_plugin, "qfcPluginCreateReceiver"));
    auto startProducers =
            reinterpret_cast<PluginStartProducers>(dlsym(m_plugin, "qfcPluginStartProducers"));
    auto results = reinterpret_cast<PluginResultsFn>(dlsym(m_plugin, "qfcPluginResults"));
    auto finish = reinterpret_cast<PluginFinish>(dlsym(m_plugin, "qfcPluginFinish"));
    auto destroyReceiver =
            reinterpret_cast<PluginDestroyReceiver>(dlsym(m_plugin, "qfcPluginDestroyReceiver"));
    QVERIFY(createReceiver && startProducers && results && finish && destroyReceiver);

    // More calls than the funnel's default capacity (65,536): producers wait for this thread.
    constexpr int Producers = 4;
    constexpr int CallsEach = 30000; // a multiple of the plugin's three paths
    constexpr qint64 Total = qint64(Producers) * CallsEach;
    QObject *receiver = createReceiver();
    QVERIFY(receiver);
    QVERIFY(startProducers(receiver, Producers, CallsEach));
    QTRY_COMPARE_WITH_TIMEOUT(results(receiver).received, Total, 120000);
    QVERIFY(finish(receiver));
    QCoreApplication::processEvents(); // nothing more may arrive

    const PluginResults r = results(receiver);
    QCOMPARE(r.received, Total);
    QCOMPARE(r.emitted, Total / 3);
    QCOMPARE(r.invoked, Total / 3);
    QCOMPARE(r.pooled, Total / 3);
    QCOMPARE(r.errors, 0);
    // Every payload chunk came back, so trim() destroyed the exited producers' arenas.
    QCOMPARE(r.poolArenas, 0);
    QCOMPARE(r.poolPages, 0);
    destroyReceiver(receiver);

    // The library came with the plugin (or was there already, in tst_plugin_linked).
    void *library = dlopen(FASTCONNECT_SONAME, RTLD_LAZY | RTLD_NOLOAD);
    QVERIFY(library);
    const LoadedObject lib = inspect(library);
    qInfo("%s: %llu bytes of TLS%s", FASTCONNECT_SONAME, lib.tlsBytes,
          lib.staticTls ? ", initial-exec (DF_STATIC_TLS)" : "");
    dlclose(library);
    QVERIFY2(!lib.staticTls,
             "the library has DF_STATIC_TLS: a plugin that brings it in with "
             "dlopen() fails once other libraries used up the static TLS surplus");
    // The plugin stays loaded: its code is referenced by thread-exit handlers and pending
    // calls of the module, as with any plugin that uses it.
}

// What makes a dlopen() fail with "cannot allocate memory in static TLS block": the flag the
// linker sets for initial-exec accesses. The plugin's own code (the module's inline templates)
// must not need it, whatever the surplus left.
void tst_Plugin::pluginNeedsNoStaticTls()
{
    QVERIFY(m_plugin);
    const LoadedObject plugin = inspect(m_plugin);
    qInfo("plugin: %llu bytes of TLS", plugin.tlsBytes);
    QVERIFY2(!plugin.staticTls,
             "the plugin has DF_STATIC_TLS: some header of the module uses initial-exec TLS");
    QVERIFY2(plugin.tlsBytes > 0, "the plugin has no thread_local: does it use QPoolAllocator?");
}

QTEST_GUILESS_MAIN(tst_Plugin)
#include "tst_plugin.moc"
