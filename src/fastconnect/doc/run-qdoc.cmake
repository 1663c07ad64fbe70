# Copyright (C) 2026 The QtFastConnect Authors.
# SPDX-License-Identifier: BSD-3-Clause
#
# Runs qdoc once (prepare and generate in one pass) and fails if it printed any warning, so a
# missing \fn, a broken \l or an undocumented parameter cannot slip into the documentation.
# cmake -DQDOC=... -DQDOCCONF=... -DOUTPUT_DIR=... -DQT_INSTALL_DOCS=... -DQT_VERSION=...
#       -DINCLUDES_FILE=... -P run-qdoc.cmake

if(NOT QDOC OR NOT EXISTS "${QDOC}")
    message(FATAL_ERROR "qdoc not found. Install Debian's qt6-documentation-tools "
                        "(scripts/install-deps.sh --docs), then reconfigure.")
endif()
if(NOT EXISTS "${QT_INSTALL_DOCS}/global/qt-module-defaults.qdocconf")
    message(FATAL_ERROR "Qt's global qdoc configuration is missing in ${QT_INSTALL_DOCS}/global")
endif()

file(STRINGS "${INCLUDES_FILE}" include_dirs)
set(include_args "")
foreach(dir IN LISTS include_dirs)
    if(dir)
        list(APPEND include_args "-I${dir}")
    endif()
endforeach()

string(REPLACE "." ";" version_parts "${QT_VERSION}")
list(GET version_parts 0 major)
list(GET version_parts 1 minor)
list(GET version_parts 2 patch)
set(ENV{QT_INSTALL_DOCS} "${QT_INSTALL_DOCS}")
set(ENV{QT_VERSION} "${QT_VERSION}")
set(ENV{QT_VER} "${major}.${minor}")
set(ENV{QT_VERSION_TAG} "${major}${minor}${patch}")

file(REMOVE_RECURSE "${OUTPUT_DIR}")
execute_process(
    COMMAND "${QDOC}" "${QDOCCONF}" -outputdir "${OUTPUT_DIR}" -indexdir "${QT_INSTALL_DOCS}"
            ${include_args}
    OUTPUT_VARIABLE out ERROR_VARIABLE out RESULT_VARIABLE result)
if(out)
    message("${out}")
endif()

string(REGEX MATCHALL "(warning|error):[^\n]*" warnings "${out}")
list(LENGTH warnings warning_count)
if(NOT result EQUAL 0 OR warning_count GREATER 0)
    message(FATAL_ERROR "qdoc: exit code ${result}, ${warning_count} warning(s); "
                        "the documentation must build without warnings.")
endif()
message(STATUS "Documentation: ${OUTPUT_DIR}/qtfastconnect-index.html")
