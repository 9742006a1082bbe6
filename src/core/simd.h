/* SPDX-License-Identifier: MIT */
/* What the vector paths of the parser share: whether this compiler and
 * target can build AVX2 functions (chosen at run time with
 * __builtin_cpu_supports("avx2"); the byte loops stay as the fallback and
 * as the definition the tests compare against), and the one way a 16-byte
 * look-up table is written for both 128-bit lanes of a 256-bit register
 * (vpshufb looks up within each lane). */
#ifndef INGEST_CORE_SIMD_H
#define INGEST_CORE_SIMD_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SIMD_AVX2 1
#include <immintrin.h>

/* A 16-entry table in both lanes: SIMD_LANES16(t0, ..., t15). */
#define SIMD_LANES16(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)
#endif

#endif
