// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

#ifndef BUSYPROCESS_H
#define BUSYPROCESS_H

// One process that does nothing but spin, competing for the cores with a measurement (another
// application busy on the same machine). Alive from construction to destruction.

#include <csignal>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

class BusyProcess
{
public:
    BusyProcess()
    {
        m_pid = fork();
        if (m_pid == 0) {
            // The child of a multi-threaded parent may only run async-signal-safe code: a bare
            // loop is that, and it never returns into the parent's code.
            for (volatile unsigned long n = 0;; n = n + 1) {}
        }
    }
    ~BusyProcess()
    {
        if (m_pid > 0) {
            kill(m_pid, SIGKILL);
            waitpid(m_pid, nullptr, 0);
        }
    }
    bool running() const { return m_pid > 0; }

    BusyProcess(const BusyProcess &) = delete;
    BusyProcess &operator=(const BusyProcess &) = delete;

private:
    pid_t m_pid = -1;
};

#endif // BUSYPROCESS_H
