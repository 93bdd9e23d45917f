#include "kernels/row_scan.h"

#include "gwb/engine/device.h"
#include "trace/parallel_for.h"
#include "kernels/x86_kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gwb::engine::detail {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// What one row gives; `target` null when the row has no next token.
struct RowOut {
    float* topValue;
    int32_t* topId;
    const float* target;
    int32_t* above;
    float max;
    float lse;
};

/// Puts x (> val[K-1]) into the descending top-K list; equal values keep the earlier index first.
inline void insertTop(float x, int32_t v, float* val, int32_t* id, int64_t K) {
    int64_t k = K - 1;
    for (; k > 0 && x > val[k - 1]; --k) {
        val[k] = val[k - 1];
        id[k] = id[k - 1];
    }
    val[k] = x;
    id[k] = v;
}

/// The scalar part of the first pass over row[begin, end): max, NaN, count above the target, top-K.
inline void firstPassScalar(const float* row, int64_t begin, int64_t end, int64_t K, RowOut& o, float& mx, bool& nan,
                            int32_t& count) {
    for (int64_t v = begin; v < end; ++v) {
        const float x = row[v];
        if (x != x) nan = true;
        mx = x > mx ? x : mx;
        if (o.target && x > *o.target) ++count;
        if (K > 0 && x > o.topValue[K - 1]) insertTop(x, static_cast<int32_t>(v), o.topValue, o.topId, K);
    }
}

/// max + log sum exp(x - max) from the sum, with the special rows: NaN anywhere gives NaN, a row
/// of -inf gives -inf, a +inf entry gives +inf.
inline bool specialRow(RowOut& o, float mx, bool nan) {
    if (nan) {
        o.max = kNaN;
        o.lse = kNaN;
        return true;
    }
    o.max = mx;
    if (std::isinf(mx)) {
        o.lse = mx;
        return true;
    }
    return false;
}

void scanRowPortable(const float* row, int64_t V, int64_t K, RowOut& o) {
    float mx = -kInf;
    bool nan = false;
    int32_t count = 0;
    firstPassScalar(row, 0, V, K, o, mx, nan, count);
    if (o.target) *o.above = count;
    if (specialRow(o, mx, nan)) return;
    double s = 0;
    for (int64_t v = 0; v < V; ++v)
        s += std::exp(row[v] - mx);
    o.lse = mx + static_cast<float>(std::log(s));
}

/// The special rows of softmaxMinusOneHotRows: true (and the row set to NaN) when the maximum is
/// not finite or the row has a NaN.
inline bool specialSoftmaxRow(float* row, int64_t V, float mx, bool nan, float& lse) {
    if (!nan && !std::isinf(mx)) return false;
    lse = nan ? kNaN : mx;
    std::fill(row, row + V, kNaN);
    return true;
}

void softmaxRowPortable(float* row, int64_t V, int64_t target, float& lse) {
    float mx = -kInf;
    bool nan = false;
    for (int64_t v = 0; v < V; ++v) {
        nan = nan || row[v] != row[v];
        mx = row[v] > mx ? row[v] : mx;
    }
    if (specialSoftmaxRow(row, V, mx, nan, lse)) return;
    double s = 0;
    for (int64_t v = 0; v < V; ++v) {
        row[v] = std::exp(row[v] - mx);
        s += row[v];
    }
    lse = mx + static_cast<float>(std::log(s));
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t v = 0; v < V; ++v)
        row[v] *= inv;
    row[target] -= 1.0f;
}

void causalRowPortable(const float* in, float* out, int64_t valid, int64_t keys, float scale) {
    float mx = -kInf;
    for (int64_t j = 0; j < valid; ++j)
        mx = std::max(mx, scale * in[j]);
    double s = 0;
    for (int64_t j = 0; j < valid; ++j) {
        out[j] = std::exp(scale * in[j] - mx);
        s += out[j];
    }
    const float inv = static_cast<float>(1.0 / s);
    for (int64_t j = 0; j < valid; ++j)
        out[j] *= inv;
    std::fill(out + valid, out + keys, 0.0f);
}

void causalRowBackwardPortable(const float* p, const float* g, float* out, int64_t valid, int64_t keys, float scale) {
    double dot = 0;
    for (int64_t j = 0; j < valid; ++j)
        dot += static_cast<double>(g[j]) * p[j];
    const auto d = static_cast<float>(dot);
    for (int64_t j = 0; j < valid; ++j)
        out[j] = scale * p[j] * (g[j] - d);
    std::fill(out + valid, out + keys, 0.0f);
}

#ifdef GWB_X86_KERNELS

/// Cephes' expf, shared by exp8 and exp16: inputs clamped to [kExpLow, kExpHigh], n = round(x log2 e),
/// x - n ln 2 in two parts, then a degree-5 polynomial (kExpPoly, highest power first) and 2^n;
/// about 1e-7 relative error. Inputs below -87.3 give exp(-87.3) = 1.2e-38, which is nothing
/// next to a row's largest term exp(0) = 1.
constexpr float kExpLow = -87.3365478515625f, kExpHigh = 88.3762626647949f, kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f, kLn2Low = -2.12194440e-4f;
constexpr float kExpPoly[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                              4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/// exp(x) for 8 floats (AVX2).
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLow)), _mm256_set1_ps(kExpHigh));
    __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
    x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High), x);
    x = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), x);
    __m256 y = _mm256_setzero_ps();
    for (float c : kExpPoly)
        y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(c));
    y = _mm256_add_ps(_mm256_fmadd_ps(y, _mm256_mul_ps(x, x), x), _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2,fma"))) inline float horizontalMax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

__attribute__((target("avx2,fma"))) inline int32_t horizontalSum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

__attribute__((target("avx2,fma"))) inline double horizontalSum(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

/// The sum of 8 floats, added in double.
__attribute__((target("avx2,fma"))) inline double horizontalSumAsDouble(__m256 v) {
    return horizontalSum(
        _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
}

/// row[0, n) *= factor.
__attribute__((target("avx2,fma"))) inline void scaleRow(float* row, int64_t n, float factor) {
    const int64_t n8 = n & ~int64_t{7};
    const __m256 f = _mm256_set1_ps(factor);
    for (int64_t v = 0; v < n8; v += 8)
        _mm256_storeu_ps(row + v, _mm256_mul_ps(_mm256_loadu_ps(row + v), f));
    for (int64_t v = n8; v < n; ++v)
        row[v] *= factor;
}

__attribute__((target("avx2,fma"))) void scanRowAvx2(const float* row, int64_t V, int64_t K, RowOut& o) {
    const int64_t V8 = V & ~int64_t{7};
    // Pass 1: maximum, NaN, count above the target and the top-K (a block of 8 goes to the scalar
    // insertion only when one of its entries beats the current K-th largest: rare after the start).
    __m256 vmax = _mm256_set1_ps(-kInf);
    __m256 vnan = _mm256_setzero_ps();
    __m256i vcount = _mm256_setzero_si256();
    const __m256 vtarget = _mm256_set1_ps(o.target ? *o.target : kInf);
    __m256 vthr = _mm256_set1_ps(K > 0 ? o.topValue[K - 1] : kInf);
    for (int64_t v = 0; v < V8; v += 8) {
        const __m256 x = _mm256_loadu_ps(row + v);
        vmax = _mm256_max_ps(x, vmax); // a NaN x leaves vmax as it was; vnan records it
        vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
        vcount = _mm256_sub_epi32(vcount, _mm256_castps_si256(_mm256_cmp_ps(x, vtarget, _CMP_GT_OQ)));
        if (K > 0) {
            int mask = _mm256_movemask_ps(_mm256_cmp_ps(x, vthr, _CMP_GT_OQ));
            if (mask != 0) {
                for (int j = 0; j < 8; ++j)
                    if (((mask >> j) & 1) != 0 && row[v + j] > o.topValue[K - 1])
                        insertTop(row[v + j], static_cast<int32_t>(v + j), o.topValue, o.topId, K);
                vthr = _mm256_set1_ps(o.topValue[K - 1]);
            }
        }
    }
    float mx = horizontalMax(vmax);
    bool nan = _mm256_movemask_ps(vnan) != 0;
    int32_t count = o.target ? horizontalSum(vcount) : 0;
    firstPassScalar(row, V8, V, K, o, mx, nan, count);
    if (o.target) *o.above = count;
    if (specialRow(o, mx, nan)) return;
    // Pass 2 (the row is in cache now): sum of exp(x - max), accumulated in double.
    const __m256 vm = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int64_t v = 0; v < V8; v += 8) {
        const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + v), vm));
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double s = horizontalSum(_mm256_add_pd(s0, s1));
    for (int64_t v = V8; v < V; ++v)
        s += std::exp(row[v] - mx);
    o.lse = mx + static_cast<float>(std::log(s));
}

__attribute__((target("avx2,fma"))) void softmaxRowAvx2(float* row, int64_t V, int64_t target, float& lse) {
    const int64_t V8 = V & ~int64_t{7};
    __m256 vmax = _mm256_set1_ps(-kInf);
    __m256 vnan = _mm256_setzero_ps();
    for (int64_t v = 0; v < V8; v += 8) {
        const __m256 x = _mm256_loadu_ps(row + v);
        vmax = _mm256_max_ps(x, vmax);
        vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
    float mx = horizontalMax(vmax);
    bool nan = _mm256_movemask_ps(vnan) != 0;
    for (int64_t v = V8; v < V; ++v) {
        nan = nan || row[v] != row[v];
        mx = row[v] > mx ? row[v] : mx;
    }
    if (specialSoftmaxRow(row, V, mx, nan, lse)) return;
    // exp(x - max) written back and summed in double, then scaled by 1 / sum: one exponential per
    // entry.
    const __m256 vm = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int64_t v = 0; v < V8; v += 8) {
        const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(row + v), vm);
        // exp8 clamps its input at -87.3; below that the probability is 0 (an -inf logit's is exactly 0).
        const __m256 e = _mm256_and_ps(exp8(x), _mm256_cmp_ps(x, _mm256_set1_ps(kExpLow), _CMP_GE_OQ));
        _mm256_storeu_ps(row + v, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double s = horizontalSum(_mm256_add_pd(s0, s1));
    for (int64_t v = V8; v < V; ++v) {
        row[v] = std::exp(row[v] - mx);
        s += row[v];
    }
    lse = mx + static_cast<float>(std::log(s));
    scaleRow(row, V, static_cast<float>(1.0 / s));
    row[target] -= 1.0f;
}

__attribute__((target("avx2,fma"))) void causalRowAvx2(const float* in, float* out, int64_t valid, int64_t keys,
                                                       float scale) {
    const int64_t v8 = valid & ~int64_t{7};
    const __m256 vs = _mm256_set1_ps(scale);
    __m256 vmax = _mm256_set1_ps(-kInf);
    for (int64_t j = 0; j < v8; j += 8)
        vmax = _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(in + j), vs), vmax);
    float mx = horizontalMax(vmax);
    for (int64_t j = v8; j < valid; ++j)
        mx = std::max(mx, scale * in[j]);
    const __m256 vm = _mm256_set1_ps(mx);
    __m256 acc = _mm256_setzero_ps(); // a row has at most a few thousand terms <= 1: float suffices
    for (int64_t j = 0; j < v8; j += 8) {
        const __m256 e = exp8(_mm256_fmsub_ps(_mm256_loadu_ps(in + j), vs, vm));
        _mm256_storeu_ps(out + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    double s = horizontalSumAsDouble(acc);
    for (int64_t j = v8; j < valid; ++j) {
        out[j] = std::exp(scale * in[j] - mx);
        s += out[j];
    }
    scaleRow(out, valid, static_cast<float>(1.0 / s));
    std::fill(out + valid, out + keys, 0.0f);
}

__attribute__((target("avx2,fma"))) void causalRowBackwardAvx2(const float* p, const float* g, float* out,
                                                               int64_t valid, int64_t keys, float scale) {
    const int64_t v8 = valid & ~int64_t{7};
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = 0; j < v8; j += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(g + j), _mm256_loadu_ps(p + j), acc);
    double dot = horizontalSumAsDouble(acc);
    for (int64_t j = v8; j < valid; ++j)
        dot += static_cast<double>(g[j]) * p[j];
    const __m256 vd = _mm256_set1_ps(static_cast<float>(dot)), vs = _mm256_set1_ps(scale);
    for (int64_t j = 0; j < v8; j += 8) {
        const __m256 pj = _mm256_mul_ps(_mm256_loadu_ps(p + j), vs);
        _mm256_storeu_ps(out + j, _mm256_mul_ps(pj, _mm256_sub_ps(_mm256_loadu_ps(g + j), vd)));
    }
    const auto d = static_cast<float>(dot);
    for (int64_t j = v8; j < valid; ++j)
        out[j] = scale * p[j] * (g[j] - d);
    std::fill(out + valid, out + keys, 0.0f);
}

/// exp(x) for 16 floats (AVX-512): exp8 with 16 lanes.
__attribute__((target("avx512f,avx2,fma"))) inline __m512 exp16(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpLow)), _mm512_set1_ps(kExpHigh));
    const __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)),
                                          _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2High), x);
    x = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Low), x);
    __m512 y = _mm512_setzero_ps();
    for (float c : kExpPoly)
        y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(c));
    y = _mm512_add_ps(_mm512_fmadd_ps(y, _mm512_mul_ps(x, x), x), _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

/// The upper 8 of 16 floats (without _mm512_extractf32x8_ps / _mm512_reduce_*: GCC 12 warns
/// falsely about their undefined-vector argument).
__attribute__((target("avx512f,avx2,fma"))) inline __m256 upperHalf(__m512 v) {
    return _mm512_castps512_ps256(_mm512_shuffle_f32x4(v, v, 0xEE));
}

__attribute__((target("avx512f,avx2,fma"))) void scanRowAvx512(const float* row, int64_t V, int64_t K, RowOut& o) {
    const int64_t V16 = V & ~int64_t{15};
    __m512 vmax = _mm512_set1_ps(-kInf);
    __mmask16 nanMask = 0;
    int32_t count = 0;
    const __m512 vtarget = _mm512_set1_ps(o.target ? *o.target : kInf);
    __m512 vthr = _mm512_set1_ps(K > 0 ? o.topValue[K - 1] : kInf);
    for (int64_t v = 0; v < V16; v += 16) {
        const __m512 x = _mm512_loadu_ps(row + v);
        vmax = _mm512_max_ps(x, vmax); // a NaN x leaves vmax as it was; nanMask records it
        nanMask = static_cast<__mmask16>(nanMask | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q));
        count += __builtin_popcount(_mm512_cmp_ps_mask(x, vtarget, _CMP_GT_OQ));
        if (K > 0) {
            const unsigned mask = _mm512_cmp_ps_mask(x, vthr, _CMP_GT_OQ);
            if (mask != 0) {
                for (int j = 0; j < 16; ++j)
                    if (((mask >> j) & 1U) != 0 && row[v + j] > o.topValue[K - 1])
                        insertTop(row[v + j], static_cast<int32_t>(v + j), o.topValue, o.topId, K);
                vthr = _mm512_set1_ps(o.topValue[K - 1]);
            }
        }
    }
    float mx = horizontalMax(_mm256_max_ps(_mm512_castps512_ps256(vmax), upperHalf(vmax)));
    bool nan = nanMask != 0;
    firstPassScalar(row, V16, V, K, o, mx, nan, count);
    if (o.target) *o.above = count;
    if (specialRow(o, mx, nan)) return;
    const __m512 vm = _mm512_set1_ps(mx);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t v = 0; v < V16; v += 16) {
        const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + v), vm));
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(upperHalf(e)));
    }
    const __m512d sum = _mm512_add_pd(s0, s1);
    double s = horizontalSum(
        _mm256_add_pd(_mm512_castpd512_pd256(sum), _mm512_castpd512_pd256(_mm512_shuffle_f64x2(sum, sum, 0xEE))));
    for (int64_t v = V16; v < V; ++v)
        s += std::exp(row[v] - mx);
    o.lse = mx + static_cast<float>(std::log(s));
}

#else

// No x86 kernels in this build: their names stand for the portable ones, and rowScanUsesAvx2() /
// rowScanUsesAvx512() say false, so the dispatch below never picks them.
constexpr auto scanRowAvx512 = scanRowPortable;
constexpr auto scanRowAvx2 = scanRowPortable;
constexpr auto softmaxRowAvx2 = softmaxRowPortable;
constexpr auto causalRowAvx2 = causalRowPortable;
constexpr auto causalRowBackwardAvx2 = causalRowBackwardPortable;

#endif

/// The AVX2 kernels unless `kernel` asks for the portable ones or the CPU lacks AVX2.
bool useAvx2(RowKernel kernel) {
    return kernel != RowKernel::Portable && rowScanUsesAvx2();
}

/// fn(r) for r in [0, rows), in blocks of 64 rows per work item (attention rows are short).
template <class Fn> void forRowBlocks(int64_t rows, const Fn& fn) {
    constexpr int64_t kBlock = 64;
    parallelFor(static_cast<size_t>((rows + kBlock - 1) / kBlock), threads(), [&](size_t block) {
        const int64_t begin = static_cast<int64_t>(block) * kBlock;
        for (int64_t r = begin; r < std::min(rows, begin + kBlock); ++r)
            fn(r);
    });
}

} // namespace

bool rowScanUsesAvx512() {
#ifdef GWB_X86_KERNELS
    return cpuHasAvx512();
#else
    return false;
#endif
}

bool rowScanUsesAvx2() {
#ifdef GWB_X86_KERNELS
    return cpuHasAvx2();
#else
    return false;
#endif
}

RowScan scanRows(const float* logits, int64_t n, int64_t V, int64_t K, const int64_t* next, int64_t m,
                 RowKernel kernel) {
    RowScan r;
    r.max.assign(static_cast<size_t>(n), kNaN);
    r.lse.assign(static_cast<size_t>(n), kNaN);
    r.topValue.assign(static_cast<size_t>(n * K), -kInf);
    r.topId.assign(static_cast<size_t>(n * K), -1);
    r.target.assign(static_cast<size_t>(m), 0.0f);
    r.above.assign(static_cast<size_t>(m), 0);
    const auto scanRow = kernel == RowKernel::Auto && rowScanUsesAvx512() ? scanRowAvx512
                         : useAvx2(kernel)                                ? scanRowAvx2
                                                                          : scanRowPortable;
    parallelFor(static_cast<size_t>(n), threads(), [&](size_t index) {
        const auto i = static_cast<int64_t>(index);
        const float* row = logits + i * V;
        RowOut o{r.topValue.data() + i * K, r.topId.data() + i * K, nullptr, nullptr, 0.0f, 0.0f};
        if (i < m) {
            r.target[static_cast<size_t>(i)] = row[next[i]];
            o.target = &r.target[static_cast<size_t>(i)];
            o.above = &r.above[static_cast<size_t>(i)];
        }
        scanRow(row, V, K, o);
        r.max[static_cast<size_t>(i)] = o.max;
        r.lse[static_cast<size_t>(i)] = o.lse;
    });
    return r;
}

void softmaxMinusOneHotRows(float* logits, int64_t n, int64_t V, const int64_t* target, float* lse, float* picked,
                            RowKernel kernel) {
    const auto softmaxRow = useAvx2(kernel) ? softmaxRowAvx2 : softmaxRowPortable;
    parallelFor(static_cast<size_t>(n), threads(), [&](size_t index) {
        const auto i = static_cast<int64_t>(index);
        float* row = logits + i * V;
        picked[i] = row[target[i]];
        softmaxRow(row, V, target[i], lse[i]);
    });
}

void causalSoftmaxRows(const float* in, float* out, int64_t rows, int64_t n, int64_t keys, int64_t offset, float scale,
                       RowKernel kernel) {
    const auto causalRow = useAvx2(kernel) ? causalRowAvx2 : causalRowPortable;
    forRowBlocks(rows, [&](int64_t r) {
        causalRow(in + r * keys, out + r * keys, std::min(keys, offset + r % n + 1), keys, scale);
    });
}

void causalSoftmaxBackwardRows(const float* p, const float* g, float* out, int64_t rows, int64_t n, int64_t keys,
                               int64_t offset, float scale, RowKernel kernel) {
    const auto causalRowBackward = useAvx2(kernel) ? causalRowBackwardAvx2 : causalRowBackwardPortable;
    forRowBlocks(rows, [&](int64_t r) {
        causalRowBackward(p + r * keys, g + r * keys, out + r * keys, std::min(keys, offset + r % n + 1), keys, scale);
    });
}

} // namespace gwb::engine::detail
