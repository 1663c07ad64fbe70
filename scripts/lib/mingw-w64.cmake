# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# CMake toolchain file: a cross build for 64-bit Windows with Debian's MinGW-w64 GCC (the posix
# thread model, which std::thread needs), against Qt and oneTBB built for MinGW-w64 by
# scripts/lib/mingw-deps.sh into -DQFC_MINGW_PREFIX=<prefix>. Tests run under Wine
# (scripts/lib/wine-run.sh, the emulator ctest runs them with).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES QFC_MINGW_PREFIX)
set(qfc_triple x86_64-w64-mingw32)
set(CMAKE_C_COMPILER ${qfc_triple}-gcc-posix)
set(CMAKE_CXX_COMPILER ${qfc_triple}-g++-posix)
set(CMAKE_RC_COMPILER ${qfc_triple}-windres)
set(CMAKE_FIND_ROOT_PATH /usr/${qfc_triple} ${QFC_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# ctest runs each test program under Wine, with the DLL search path set up. The host's PATH
# comes back first: Qt gives tests a Windows-style one (';'-separated).
set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/env "PATH=/usr/local/bin:/usr/bin:/bin"
    "QFC_WINE_BUILD=${CMAKE_BINARY_DIR}" "QFC_MINGW_PREFIX=${QFC_MINGW_PREFIX}"
    "${CMAKE_CURRENT_LIST_DIR}/wine-run.sh")
# Qt's test wrappers are scripts for the target's shell (cmd /c): run the tests directly.
set(QT_NO_TEST_WRAPPERS ON CACHE BOOL "")
