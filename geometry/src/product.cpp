// A B^T with AVX-512 / AVX2 FMA kernels chosen at run time (product.h).
#include "gwb/geometry/product.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GWB_PRODUCT_X86 1
#endif

namespace gwb::geometry {
namespace {

enum class Kernel { Eigen, Avx2, Avx512 };

constexpr Eigen::Index kDepth = 256; ///< k per block: a panel's slice (kDepth x width) stays in L1/L2

#if GWB_PRODUCT_X86
bool cpuHas(Kernel k) {
    __builtin_cpu_init();
    if (k == Kernel::Avx512) return __builtin_cpu_supports("avx512f");
    if (k == Kernel::Avx2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return true;
}

/// ROWS rows of A (stride lda) times one 16-column panel, depth kc: C (ROWS x 16, row stride ldc)
/// = A_rows P, or += when `add`.
template <int ROWS>
__attribute__((target("avx512f"))) void tile512(const double* a, Eigen::Index lda, const double* p, Eigen::Index kc,
                                                double* c, Eigen::Index ldc, bool add) {
    __m512d c0[ROWS], c1[ROWS];
    for (int r = 0; r < ROWS; ++r)
        c0[r] = c1[r] = _mm512_setzero_pd();
    for (Eigen::Index k = 0; k < kc; ++k) {
        const __m512d b0 = _mm512_loadu_pd(p + k * 16), b1 = _mm512_loadu_pd(p + k * 16 + 8);
        for (int r = 0; r < ROWS; ++r) {
            const __m512d x = _mm512_set1_pd(a[r * lda + k]);
            c0[r] = _mm512_fmadd_pd(x, b0, c0[r]);
            c1[r] = _mm512_fmadd_pd(x, b1, c1[r]);
        }
    }
    for (int r = 0; r < ROWS; ++r) {
        double* row = c + r * ldc;
        if (add) {
            c0[r] = _mm512_add_pd(_mm512_loadu_pd(row), c0[r]);
            c1[r] = _mm512_add_pd(_mm512_loadu_pd(row + 8), c1[r]);
        }
        _mm512_storeu_pd(row, c0[r]);
        _mm512_storeu_pd(row + 8, c1[r]);
    }
}

/// The same with 8-column panels and AVX2 FMA.
template <int ROWS>
__attribute__((target("avx2,fma"))) void tile256(const double* a, Eigen::Index lda, const double* p, Eigen::Index kc,
                                                 double* c, Eigen::Index ldc, bool add) {
    __m256d c0[ROWS], c1[ROWS];
    for (int r = 0; r < ROWS; ++r)
        c0[r] = c1[r] = _mm256_setzero_pd();
    for (Eigen::Index k = 0; k < kc; ++k) {
        const __m256d b0 = _mm256_loadu_pd(p + k * 8), b1 = _mm256_loadu_pd(p + k * 8 + 4);
        for (int r = 0; r < ROWS; ++r) {
            const __m256d x = _mm256_set1_pd(a[r * lda + k]);
            c0[r] = _mm256_fmadd_pd(x, b0, c0[r]);
            c1[r] = _mm256_fmadd_pd(x, b1, c1[r]);
        }
    }
    for (int r = 0; r < ROWS; ++r) {
        double* row = c + r * ldc;
        if (add) {
            c0[r] = _mm256_add_pd(_mm256_loadu_pd(row), c0[r]);
            c1[r] = _mm256_add_pd(_mm256_loadu_pd(row + 4), c1[r]);
        }
        _mm256_storeu_pd(row, c0[r]);
        _mm256_storeu_pd(row + 4, c1[r]);
    }
}

using TileFn = void (*)(const double*, Eigen::Index, const double*, Eigen::Index, double*, Eigen::Index, bool);

/// tiles[rows - 1]: the kernel for a block of `rows` rows (1..MR).
template <int MR, int... R> constexpr auto tileTable512(std::integer_sequence<int, R...>) {
    return std::array<TileFn, MR>{&tile512<R + 1>...};
}
template <int MR, int... R> constexpr auto tileTable256(std::integer_sequence<int, R...>) {
    return std::array<TileFn, MR>{&tile256<R + 1>...};
}
#endif

/// y = x b, row by row: y_i = sum_p x(i, p) b_p over b's rows, each an axpy over n contiguous
/// values (the loop the compiler vectorizes in each target below).
__attribute__((always_inline)) inline void rowMajorProduct(const double* x, Eigen::Index m, Eigen::Index k,
                                                           const double* b, Eigen::Index n, double* y) {
    for (Eigen::Index i = 0; i < m; ++i) {
        double* __restrict yi = y + i * n;
        std::fill(yi, yi + n, 0.0);
        for (Eigen::Index p = 0; p < k; ++p) {
            const double xv = x[i * k + p];
            const double* __restrict bp = b + p * n;
            for (Eigen::Index j = 0; j < n; ++j)
                yi[j] += xv * bp[j];
        }
    }
}

#if GWB_PRODUCT_X86
/// rowMajorProduct with AVX-512: blocks of up to 8 rows of y times 8 columns stay in registers
/// while p runs over k, so b is read once per block of rows (columns past n are masked).
__attribute__((target("avx512f"))) void rowMajorProduct512(const double* x, Eigen::Index m, Eigen::Index k,
                                                           const double* b, Eigen::Index n, double* y) {
    constexpr int kRows = 8;
    for (Eigen::Index j0 = 0; j0 < n; j0 += 8) {
        const auto mask = static_cast<__mmask8>(n - j0 >= 8 ? 0xff : (1u << (n - j0)) - 1);
        for (Eigen::Index i0 = 0; i0 < m; i0 += kRows) {
            const int rows = static_cast<int>(std::min<Eigen::Index>(kRows, m - i0));
            __m512d acc[kRows];
            for (int r = 0; r < kRows; ++r)
                acc[r] = _mm512_setzero_pd();
            for (Eigen::Index p = 0; p < k; ++p) {
                const __m512d bv = _mm512_maskz_loadu_pd(mask, b + p * n + j0);
                for (int r = 0; r < rows; ++r)
                    acc[r] = _mm512_fmadd_pd(_mm512_set1_pd(x[(i0 + r) * k + p]), bv, acc[r]);
            }
            for (int r = 0; r < rows; ++r)
                _mm512_mask_storeu_pd(y + (i0 + r) * n + j0, mask, acc[r]);
        }
    }
}
__attribute__((target("avx2,fma"))) void rowMajorProduct256(const double* x, Eigen::Index m, Eigen::Index k,
                                                            const double* b, Eigen::Index n, double* y) {
    rowMajorProduct(x, m, k, b, n, y);
}
#else
bool cpuHas(Kernel k) {
    return k == Kernel::Eigen;
}
#endif

Kernel best() {
    static const Kernel k = cpuHas(Kernel::Avx512) ? Kernel::Avx512
                            : cpuHas(Kernel::Avx2) ? Kernel::Avx2
                                                   : Kernel::Eigen;
    return k;
}

Kernel parse(const char* name) {
    if (!name) return best();
    const std::string s = name;
    Kernel k = Kernel::Eigen;
    if (s == "avx512")
        k = Kernel::Avx512;
    else if (s == "avx2")
        k = Kernel::Avx2;
    else if (s != "eigen")
        throw std::invalid_argument("unknown product kernel '" + s + "'");
    if (!cpuHas(k)) throw std::invalid_argument("this CPU cannot run the " + s + " product kernel");
    return k;
}

} // namespace

bool productKernelAvailable(const char* kernel) {
    try {
        parse(kernel);
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    }
}

const char* productKernelName() {
    switch (best()) {
    case Kernel::Avx512:
        return "avx512";
    case Kernel::Avx2:
        return "avx2";
    case Kernel::Eigen:
        break;
    }
    return "eigen";
}

TransposedRhs::TransposedRhs(const Eigen::Ref<const RowMatrixXd>& b, const char* kernel)
    : m_n(b.rows()), m_k(b.cols()) {
    const Kernel k = parse(kernel);
    if (k == Kernel::Eigen) {
        m_plain = b;
        return;
    }
    m_width = k == Kernel::Avx512 ? 16 : 8;
    const Eigen::Index panels = (m_n + m_width - 1) / m_width;
    m_pack.assign(static_cast<size_t>(panels * m_k * m_width), 0.0);
    for (Eigen::Index p = 0; p < panels; ++p) {
        double* dst = m_pack.data() + p * m_k * m_width;
        const Eigen::Index cols = std::min<Eigen::Index>(m_width, m_n - p * m_width);
        for (Eigen::Index j = 0; j < cols; ++j) {
            const double* src = b.row(p * m_width + j).data(); // Ref's rows are contiguous
            for (Eigen::Index i = 0; i < m_k; ++i)
                dst[i * m_width + j] = src[i];
        }
    }
}

RowMatrixXd TransposedRhs::multiply(const Eigen::Ref<const RowMatrixXd>& a) const {
    if (a.cols() != m_k)
        throw std::invalid_argument("TransposedRhs::multiply: A has " + std::to_string(a.cols()) + " columns, B has " +
                                    std::to_string(m_k));
    if (m_width == 0) return a * m_plain.transpose();
    const Eigen::Index m = a.rows();
    if (m == 0 || m_n == 0 || m_k == 0) return RowMatrixXd::Zero(m, m_n);
    RowMatrixXd out(m, m_n); // the first depth block stores, later ones add
#if GWB_PRODUCT_X86
    // Each row of A is contiguous (Ref's inner stride is 1); rows are lda apart.
    const Eigen::Index lda = a.outerStride();
    const bool wide = m_width == 16;
    constexpr int kRows512 = 8, kRows256 = 6;
    static constexpr auto t512 = tileTable512<kRows512>(std::make_integer_sequence<int, kRows512>{});
    static constexpr auto t256 = tileTable256<kRows256>(std::make_integer_sequence<int, kRows256>{});
    const int mr = wide ? kRows512 : kRows256;
    const Eigen::Index panels = (m_n + m_width - 1) / m_width;
    double acc[kRows512 * 16];
    for (Eigen::Index k0 = 0; k0 < m_k; k0 += kDepth) {
        const Eigen::Index kc = std::min(kDepth, m_k - k0);
        for (Eigen::Index p = 0; p < panels; ++p) {
            const double* panel = m_pack.data() + (p * m_k + k0) * m_width;
            const Eigen::Index cols = std::min<Eigen::Index>(m_width, m_n - p * m_width);
            for (Eigen::Index i0 = 0; i0 < m; i0 += mr) {
                const int rows = static_cast<int>(std::min<Eigen::Index>(mr, m - i0));
                const TileFn tile = wide ? t512[static_cast<size_t>(rows - 1)] : t256[static_cast<size_t>(rows - 1)];
                if (cols == m_width) { // a whole panel: straight into the result's rows
                    tile(a.data() + i0 * lda + k0, lda, panel, kc, out.row(i0).data() + p * m_width, m_n, k0 > 0);
                    continue;
                }
                tile(a.data() + i0 * lda + k0, lda, panel, kc, acc, m_width, false);
                for (int r = 0; r < rows; ++r) {
                    double* dst = out.row(i0 + r).data() + p * m_width;
                    if (k0 == 0)
                        std::copy(acc + r * m_width, acc + r * m_width + cols, dst);
                    else
                        for (Eigen::Index j = 0; j < cols; ++j)
                            dst[j] += acc[r * m_width + j];
                }
            }
        }
    }
#endif
    return out;
}

void multiplyRowMajor(const double* x, Eigen::Index m, Eigen::Index k, const double* b, Eigen::Index n, double* y,
                      const char* kernel) {
    const Kernel chosen = parse(kernel);
#if GWB_PRODUCT_X86
    switch (chosen) {
    case Kernel::Avx512:
        return rowMajorProduct512(x, m, k, b, n, y);
    case Kernel::Avx2:
        return rowMajorProduct256(x, m, k, b, n, y);
    case Kernel::Eigen:
        break;
    }
#else
    (void)chosen;
#endif
    rowMajorProduct(x, m, k, b, n, y);
}

RowMatrixXd multiplyTransposed(const Eigen::Ref<const RowMatrixXd>& a, const Eigen::Ref<const RowMatrixXd>& b) {
    return TransposedRhs(b).multiply(a);
}

} // namespace gwb::geometry
