// Copyright (C) 2026 The QtFastConnect Authors.
// SPDX-License-Identifier: BSD-3-Clause

// A shared object with an initial-exec TLS block of TLS_BYTES bytes (or, with TLS_POINTER, one
// pointer: what QT_FASTCONNECT_TLS_INITIAL_EXEC made of QPoolAllocator's arena pointer). The
// linker marks it DF_STATIC_TLS, so dlopen() must find static TLS space for it, or fail.

#ifdef TLS_POINTER
__attribute__((tls_model("initial-exec"))) __thread void *qfcTlsBlock;
#else
__attribute__((tls_model("initial-exec"))) __thread char qfcTlsBlock[TLS_BYTES];
#endif

void *qfcTlsBlockAddress(void)
{
    return (void *)&qfcTlsBlock;
}
