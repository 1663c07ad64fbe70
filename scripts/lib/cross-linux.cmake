# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# CMake toolchain file: a cross build for Linux on another CPU, against a Debian root of that
# architecture unpacked as the sysroot, with Debian's cross compiler and the host's Qt tools
# (moc, of the same Qt version). Tests run under qemu-user. scripts/lib/run-platform.sh passes:
#   -DQFC_CROSS_TRIPLE=aarch64-linux-gnu | arm-linux-gnueabihf | i686-linux-gnu
#   -DQFC_CROSS_SYSROOT=<the root>
#   -DQFC_QEMU_DIR=<the directory of qemu-aarch64, qemu-arm and qemu-i386> (qemu-user.sh;
#    without it, Debian 12's qemu-aarch64-static, ...)
# (cache variables, so that a re-configure keeps them).
set(CMAKE_SYSTEM_NAME Linux)
# try_compile() projects read this file too: hand them the two settings.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES QFC_CROSS_TRIPLE QFC_CROSS_SYSROOT QFC_QEMU_DIR)
# The compiler's triple; Debian's multiarch directory is the same but for i386's.
set(qfc_multiarch ${QFC_CROSS_TRIPLE})
if(QFC_CROSS_TRIPLE STREQUAL "aarch64-linux-gnu")
    set(CMAKE_SYSTEM_PROCESSOR aarch64)
    set(qfc_qemu qemu-aarch64)
elseif(QFC_CROSS_TRIPLE STREQUAL "arm-linux-gnueabihf")
    set(CMAKE_SYSTEM_PROCESSOR arm)
    set(qfc_qemu qemu-arm)
elseif(QFC_CROSS_TRIPLE STREQUAL "i686-linux-gnu")
    set(CMAKE_SYSTEM_PROCESSOR i686)
    set(qfc_qemu qemu-i386)
    set(qfc_multiarch i386-linux-gnu)
else()
    message(FATAL_ERROR
        "QFC_CROSS_TRIPLE must be aarch64-linux-gnu, arm-linux-gnueabihf or i686-linux-gnu")
endif()
set(CMAKE_SYSROOT "${QFC_CROSS_SYSROOT}")
set(CMAKE_C_COMPILER ${QFC_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${QFC_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${qfc_multiarch})
set(CMAKE_FIND_ROOT_PATH "${QFC_CROSS_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Qt's libraries' own dependencies (ICU, glib, ...) are found in the root's multiarch directory.
foreach(kind EXE SHARED MODULE)
    set(CMAKE_${kind}_LINKER_FLAGS_INIT
        "-Wl,-rpath-link,${QFC_CROSS_SYSROOT}/usr/lib/${qfc_multiarch}")
endforeach()
if(QFC_QEMU_DIR)
    set(qfc_qemu "${QFC_QEMU_DIR}/${qfc_qemu}")
else()
    string(APPEND qfc_qemu "-static")
endif()
# QEMU_LD_PREFIX: for the child processes a test starts, which the kernel's binfmt_misc handler
# runs under its own qemu.
set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/env "QEMU_LD_PREFIX=${QFC_CROSS_SYSROOT}"
    ${qfc_qemu} -L "${QFC_CROSS_SYSROOT}")
