// Whether this test binary was built with AddressSanitizer (scripts/check_hardening.sh): tests of
// memory footprints and of signals a child raises measure ASan itself there (its shadow memory and
// quarantine; its own SIGSEGV handler), and say so by skipping those expectations.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TRAINLAB_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRAINLAB_UNDER_ASAN 1
#endif
#endif
#ifndef TRAINLAB_UNDER_ASAN
#define TRAINLAB_UNDER_ASAN 0
#endif
