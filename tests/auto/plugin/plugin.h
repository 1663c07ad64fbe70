// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef TST_PLUGIN_PLUGIN_H
#define TST_PLUGIN_PLUGIN_H

// The C interface of the test's plugin (plugin.cpp), looked up with dlsym(): the test
// executable need not know any class of the plugin, nor link QtFastConnect.

#include <cstdint>

class QObject;

struct PluginResults
{
    std::int64_t received; // slot calls that arrived, all paths
    std::int64_t emitted; // through QtFastConnect::connect()
    std::int64_t invoked; // through QtFastConnect::invoke(receiver, &Receiver::slot, ...)
    std::int64_t pooled; // through invoke() of a functor carrying a QPoolAllocator chunk
    std::int64_t errors; // out of order, wrong thread, corrupt payload, failed invoke
    std::int64_t poolArenas; // the plugin's QPoolAllocator<24> after trim(): arenas left
    std::int64_t poolPages; // ... and pages in use
};

extern "C" {
// Creates the receiver in the calling thread (the test's main thread).
using PluginCreateReceiver = QObject *(*)();
// Starts `producers` threads, each sending callsEach calls to receiver, a third through each path.
using PluginStartProducers = bool (*)(QObject *receiver, int producers, int callsEach);
// The counts so far (received is read while producers run; the rest once they finished).
using PluginResultsFn = PluginResults (*)(QObject *receiver);
// Waits for the producer threads to finish, then trims the plugin's pool. Deletes nothing.
using PluginFinish = bool (*)(QObject *receiver);
using PluginDestroyReceiver = void (*)(QObject *receiver);
}

#endif // TST_PLUGIN_PLUGIN_H
