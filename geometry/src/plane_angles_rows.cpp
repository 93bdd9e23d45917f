// Principal angles of many plane pairs from their cosine matrices (plane_angles_core.h,
// readoutAnglesRow): the read-out angles of one token against every channel. The AVX-512 kernel
// does exactly what planeAnglesFromCosines does, lane by lane: the same operations in the same
// order, no fused multiply-adds, so both give the same bits.
#include "plane_angles_core.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GWB_ANGLES_X86 1
// GCC 12's _mm512_sqrt_pd starts from _mm512_undefined_pd (__Y = __Y), which -Wmaybe-uninitialized
// reports wherever it is inlined.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace gwb::geometry::detail {

namespace {

constexpr double kSineMarker = -1.0;

void anglesRowFrom(const double* row0, const double* row1, Eigen::Index begin, Eigen::Index d, double* out) {
    for (Eigen::Index c = begin; c < d; ++c) {
        Eigen::Matrix2d m;
        m << row0[2 * c], row0[2 * c + 1], row1[2 * c], row1[2 * c + 1];
        Eigen::Vector2d th;
        if (planeAnglesFromCosines(m, th)) {
            out[2 * c] = th[0];
            out[2 * c + 1] = th[1];
        } else {
            out[2 * c] = kSineMarker;
        }
    }
}

#if GWB_ANGLES_X86
#define GWB_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

/// coef + z acc (a Horner step, as acosUnit's ratio writes it).
GWB_AVX512_INLINE __m512d hornerStep(__m512d z, __m512d acc, double coef) {
    return _mm512_add_pd(_mm512_set1_pd(coef), _mm512_mul_pd(z, acc));
}

/// acosUnit's R(z) = z P(z) / Q(z) on eight lanes.
GWB_AVX512_INLINE __m512d ratio8(__m512d z) {
    __m512d p = _mm512_set1_pd(3.47933107596021167570e-05);
    p = hornerStep(z, p, 7.91534994289814532176e-04);
    p = hornerStep(z, p, -4.00555345006794114027e-02);
    p = hornerStep(z, p, 2.01212532134862925881e-01);
    p = hornerStep(z, p, -3.25565818622400915405e-01);
    p = hornerStep(z, p, 1.66666666666666657415e-01);
    p = _mm512_mul_pd(z, p);
    __m512d q = _mm512_set1_pd(7.70381505559019352791e-02);
    q = hornerStep(z, q, -6.88283971605453293030e-01);
    q = hornerStep(z, q, 2.02094576023350569471e+00);
    q = hornerStep(z, q, -2.40339491173441421878e+00);
    q = hornerStep(z, q, 1.0);
    return _mm512_div_pd(p, q);
}

/// acosUnit on eight lanes: both branches, blended (no lane is 1 or above here: the caller takes
/// cosines at most kMaxCosineOnly; other lanes are replaced by the sine marker anyway).
GWB_AVX512_INLINE __m512d acosUnit8(__m512d x) {
    const __m512d half = _mm512_set1_pd(0.5), one = _mm512_set1_pd(1.0);
    // x < 0.5: pio2Hi - (x - (pio2Lo - x R(x^2))).
    const __m512d low = _mm512_sub_pd(_mm512_set1_pd(1.57079632679489655800e+00),
                                      _mm512_sub_pd(x, _mm512_sub_pd(_mm512_set1_pd(6.12323399573676603587e-17),
                                                                     _mm512_mul_pd(x, ratio8(_mm512_mul_pd(x, x))))));
    // x >= 0.5: 2 (df + (R(z) s + c)), z = (1 - x) / 2, s = sqrt(z) = df + c.
    const __m512d z = _mm512_mul_pd(_mm512_sub_pd(one, x), half);
    const __m512d s = _mm512_sqrt_pd(z);
    const __m512d df = _mm512_castsi512_pd(
        _mm512_and_si512(_mm512_castpd_si512(s), _mm512_set1_epi64(static_cast<long long>(0xffffffff00000000ull))));
    const __m512d c = _mm512_div_pd(_mm512_sub_pd(z, _mm512_mul_pd(df, df)), _mm512_add_pd(s, df));
    const __m512d high =
        _mm512_mul_pd(_mm512_set1_pd(2.0), _mm512_add_pd(df, _mm512_add_pd(_mm512_mul_pd(ratio8(z), s), c)));
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(x, half, _CMP_LT_OQ), high, low);
}

__attribute__((target("avx512f"))) void anglesRow512(const double* row0, const double* row1, Eigen::Index d,
                                                     double* out) {
    // Even / odd lanes of two registers (c(., 0) and c(., 1) of eight pairs) and back.
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14),
                  odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m512i lowHalf = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11),
                  highHalf = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
    const __m512d half = _mm512_set1_pd(0.5);
    const __m512i absMask = _mm512_set1_epi64(0x7fffffffffffffffll);
    Eigen::Index c = 0;
    for (; c + 8 <= d; c += 8) {
        const __m512d a0 = _mm512_loadu_pd(row0 + 2 * c), a1 = _mm512_loadu_pd(row0 + 2 * c + 8);
        const __m512d b0 = _mm512_loadu_pd(row1 + 2 * c), b1 = _mm512_loadu_pd(row1 + 2 * c + 8);
        const __m512d c00 = _mm512_permutex2var_pd(a0, even, a1), c01 = _mm512_permutex2var_pd(a0, odd, a1);
        const __m512d c10 = _mm512_permutex2var_pd(b0, even, b1), c11 = _mm512_permutex2var_pd(b0, odd, b1);
        const __m512d e = _mm512_mul_pd(half, _mm512_add_pd(c00, c11)),
                      f = _mm512_mul_pd(half, _mm512_sub_pd(c00, c11));
        const __m512d g = _mm512_mul_pd(half, _mm512_add_pd(c10, c01)),
                      h = _mm512_mul_pd(half, _mm512_sub_pd(c10, c01));
        const __m512d q = _mm512_sqrt_pd(_mm512_add_pd(_mm512_mul_pd(e, e), _mm512_mul_pd(h, h)));
        const __m512d r = _mm512_sqrt_pd(_mm512_add_pd(_mm512_mul_pd(f, f), _mm512_mul_pd(g, g)));
        const __m512d s1 = _mm512_add_pd(q, r),
                      s2 = _mm512_castsi512_pd(_mm512_and_si512(_mm512_castpd_si512(_mm512_sub_pd(q, r)), absMask));
        // Lanes whose larger cosine is above cos(0.05), or NaN, take the sine part.
        const __mmask8 cosineOnly = _mm512_cmp_pd_mask(s1, _mm512_set1_pd(kMaxCosineOnly), _CMP_LE_OQ);
        const __m512d th0 = _mm512_mask_blend_pd(cosineOnly, _mm512_set1_pd(kSineMarker), acosUnit8(s1));
        const __m512d th1 = acosUnit8(s2);
        _mm512_storeu_pd(out + 2 * c, _mm512_permutex2var_pd(th0, lowHalf, th1));
        _mm512_storeu_pd(out + 2 * c + 8, _mm512_permutex2var_pd(th0, highHalf, th1));
    }
    anglesRowFrom(row0, row1, c, d, out);
}

bool hasAvx512() {
    static const bool has = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") != 0;
    }();
    return has;
}
#endif

} // namespace

void readoutAnglesRow(const double* row0, const double* row1, Eigen::Index d, double* out) {
#if GWB_ANGLES_X86
    if (hasAvx512()) return anglesRow512(row0, row1, d, out);
#endif
    anglesRowFrom(row0, row1, 0, d, out);
}

void readoutAnglesRowPortable(const double* row0, const double* row1, Eigen::Index d, double* out) {
    anglesRowFrom(row0, row1, 0, d, out);
}

} // namespace gwb::geometry::detail
