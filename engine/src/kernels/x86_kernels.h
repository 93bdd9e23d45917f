#pragma once
// What the engine's hand-written CPU kernels (row_scan.cpp, packed_gemm.cpp) build on. On x86-64
// with GCC or Clang: <immintrin.h>, GWB_X86_KERNELS, and the CPU's vector features, asked once.
// Include it only from those kernel files: it also silences, for the rest of the file, a false
// warning that GCC 12 gives inside its own AVX-512 intrinsics (GCC bug 105593: the undefined
// pass-through vector of _mm512_max_ps, _mm512_maskz_loadu_ps, ... reported as uninitialized).

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GWB_X86_KERNELS 1
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace gwb::engine::detail {

/// AVX2 and FMA (the 256-bit kernels).
inline bool cpuHasAvx2() {
    static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return has;
}

/// AVX-512F (the 512-bit kernels).
inline bool cpuHasAvx512() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

} // namespace gwb::engine::detail
#endif
