#include "kernels/packed_gemm.h"

#include "trace/parallel_for.h"
#include "kernels/x86_kernels.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <utility>

namespace gwb::engine::detail {

namespace {
constexpr int64_t kPanel = PackedMatrix::kPanel;
}

void PackedMatrix::Free::operator()(float* p) const {
    std::free(p);
}

PackedMatrix::PackedMatrix(const float* w, int64_t n, int64_t k, int64_t ld) : m_n(n), m_k(k) {
    if (n < 0 || k < 0 || ld < k) throw std::invalid_argument("PackedMatrix: bad shape");
    const int64_t floats = std::max<int64_t>(panels() * k * kPanel, 16);
    void* p = std::aligned_alloc(64, static_cast<size_t>((floats * 4 + 63) / 64 * 64));
    if (!p) throw std::bad_alloc();
    m_data.reset(static_cast<float*>(p));
    float* out = m_data.get();
    for (int64_t panel = 0; panel < panels(); ++panel) {
        float* dst = out + panel * k * kPanel;
        const int64_t rows = std::min(kPanel, n - panel * kPanel);
        for (int64_t c = 0; c < k; ++c) {
            const float* src = w + panel * kPanel * ld + c;
            for (int64_t j = 0; j < rows; ++j)
                dst[c * kPanel + j] = src[j * ld];
            for (int64_t j = rows; j < kPanel; ++j)
                dst[c * kPanel + j] = 0.0f;
        }
    }
}

#ifdef GWB_X86_KERNELS

namespace {

/// Rows of x per register block: 12 x 32 outputs are 24 accumulators, plus the two vectors of the
/// panel row and one broadcast: 27 of the 32 vector registers.
constexpr int kRows = 12;

/// y[0..MR) x [0..cols) of one panel: MR rows of x against the panel's 32 rows of W.
template <int MR>
__attribute__((target("avx512f"))) void tile(const float* x, int64_t ldx, const float* panel, int64_t k,
                                             const float* bias, float* y, int64_t ldy, int64_t cols) {
    const __mmask16 m0 = cols >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1u);
    const __mmask16 m1 = cols >= 32   ? __mmask16(0xFFFF)
                         : cols <= 16 ? __mmask16(0)
                                      : __mmask16((1u << (cols - 16)) - 1u);
    const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    __m512 c0[MR], c1[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        c0[i] = b0;
        c1[i] = b1;
    }
    for (int64_t c = 0; c < k; ++c) {
        const __m512 w0 = _mm512_load_ps(panel + c * kPanel), w1 = _mm512_load_ps(panel + c * kPanel + 16);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
            const __m512 a = _mm512_set1_ps(x[i * ldx + c]);
            c0[i] = _mm512_fmadd_ps(a, w0, c0[i]);
            c1[i] = _mm512_fmadd_ps(a, w1, c1[i]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
        _mm512_mask_storeu_ps(y + i * ldy, m0, c0[i]);
        _mm512_mask_storeu_ps(y + i * ldy + 16, m1, c1[i]);
    }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t);

/// The AVX2 form (16 vector registers): MR rows against one half of a panel (16 of its rows;
/// `half` points at its first column, rows of the panel still kPanel apart), cols <= 16.
template <int MR>
__attribute__((target("avx2,fma"))) void tileAvx2(const float* x, int64_t ldx, const float* half, int64_t k,
                                                  const float* bias, float* y, int64_t ldy, int64_t cols) {
    alignas(32) static constexpr int32_t kLanes[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    const __m256i lanes0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes));
    const __m256i lanes1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLanes + 8));
    const __m256i n = _mm256_set1_epi32(static_cast<int32_t>(cols));
    const __m256i m0 = _mm256_cmpgt_epi32(n, lanes0), m1 = _mm256_cmpgt_epi32(n, lanes1);
    const __m256 b0 = bias ? _mm256_maskload_ps(bias, m0) : _mm256_setzero_ps();
    const __m256 b1 = bias ? _mm256_maskload_ps(bias + 8, m1) : _mm256_setzero_ps();
    __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
        c0[i] = b0;
        c1[i] = b1;
    }
    for (int64_t c = 0; c < k; ++c) {
        const __m256 w0 = _mm256_load_ps(half + c * kPanel), w1 = _mm256_load_ps(half + c * kPanel + 8);
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) {
            const __m256 a = _mm256_broadcast_ss(x + i * ldx + c);
            c0[i] = _mm256_fmadd_ps(a, w0, c0[i]);
            c1[i] = _mm256_fmadd_ps(a, w1, c1[i]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
        _mm256_maskstore_ps(y + i * ldy, m0, c0[i]);
        _mm256_maskstore_ps(y + i * ldy + 8, m1, c1[i]);
    }
}

/// Rows of x per register block of the AVX2 form: 6 x 16 outputs are 12 accumulators, plus two
/// panel vectors and one broadcast: 15 of the 16 vector registers.
constexpr int kRowsAvx2 = 6;

template <int... I> constexpr std::array<TileFn, sizeof...(I)> tileTable(std::integer_sequence<int, I...>) {
    return {&tile<I + 1>...};
}
template <int... I> constexpr std::array<TileFn, sizeof...(I)> tileTableAvx2(std::integer_sequence<int, I...>) {
    return {&tileAvx2<I + 1>...};
}
constexpr auto kTiles = tileTable(std::make_integer_sequence<int, kRows>{});
constexpr auto kTilesAvx2 = tileTableAvx2(std::make_integer_sequence<int, kRowsAvx2>{});

/// One kernel form: rows per register block, and how it covers rows x one whole panel.
struct Kernel {
    int rows;
    void (*panel)(int rows, const float* x, int64_t ldx, const float* panel, int64_t k, const float* bias, float* y,
                  int64_t ldy, int64_t cols);
};

void panelAvx512(int rows, const float* x, int64_t ldx, const float* panel, int64_t k, const float* bias, float* y,
                 int64_t ldy, int64_t cols) {
    kTiles[static_cast<size_t>(rows - 1)](x, ldx, panel, k, bias, y, ldy, cols);
}

void panelAvx2(int rows, const float* x, int64_t ldx, const float* panel, int64_t k, const float* bias, float* y,
               int64_t ldy, int64_t cols) {
    const TileFn tile = kTilesAvx2[static_cast<size_t>(rows - 1)];
    tile(x, ldx, panel, k, bias, y, ldy, std::min<int64_t>(16, cols));
    if (cols > 16) tile(x, ldx, panel + 16, k, bias ? bias + 16 : nullptr, y + 16, ldy, cols - 16);
}

Kernel pickKernel(GemmKernel which) {
    if (which == GemmKernel::Auto && cpuHasAvx512()) return {kRows, panelAvx512};
    if (cpuHasAvx2()) return {kRowsAvx2, panelAvx2};
    throw std::logic_error("packedGemm needs an x86-64 CPU with AVX2 and FMA");
}

/// Rows [r0, r1) x panels [p0, p1): panels in groups that stay in the core's L2 cache (256 KiB)
/// while every row block passes over them.
void block(const Kernel& kernel, const float* x, int64_t ldx, const PackedMatrix& w, const float* bias, float* y,
           int64_t ldy, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
    const int64_t k = w.cols(), n = w.rows();
    const int64_t group = std::max<int64_t>(1, (int64_t{256} << 10) / std::max<int64_t>(1, k * kPanel * 4));
    for (int64_t g = p0; g < p1; g += group) {
        const int64_t gEnd = std::min(p1, g + group);
        for (int64_t r = r0; r < r1; r += kernel.rows) {
            const int rows = static_cast<int>(std::min<int64_t>(kernel.rows, r1 - r));
            for (int64_t p = g; p < gEnd; ++p)
                kernel.panel(rows, x + r * ldx, ldx, w.panel(p), k, bias ? bias + p * kPanel : nullptr,
                             y + r * ldy + p * kPanel, ldy, std::min(kPanel, n - p * kPanel));
        }
    }
}

} // namespace

bool packedGemmAvailable() {
    return cpuHasAvx2();
}

bool packedGemmUsesAvx512() {
    return cpuHasAvx512();
}

void packedGemm(const float* x, int64_t m, int64_t ldx, const PackedMatrix& w, const float* bias, float* y, int64_t ldy,
                int workers, GemmKernel which) {
    const Kernel kernel = pickKernel(which);
    const int64_t step = kernel.rows;
    const int64_t P = w.panels(), rowBlocks = (m + step - 1) / step;
    if (m <= 0 || P == 0) return;
    // Below about 4 MFLOP waking a second thread costs more than it saves.
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(w.rows()) * static_cast<double>(w.cols());
    if (workers <= 1 || flops < 4e6) {
        block(kernel, x, ldx, w, bias, y, ldy, 0, m, 0, P);
        return;
    }
    // A grid of about 4 items per worker (taken in turn, so a slow core takes fewer): panels
    // first, then row blocks when there are fewer panels than that.
    const int64_t want = 4 * static_cast<int64_t>(workers);
    const int64_t panelChunks = std::min(P, want);
    const int64_t rowChunks = std::min(rowBlocks, (want + panelChunks - 1) / panelChunks);
    parallelFor(static_cast<size_t>(panelChunks * rowChunks), workers, [&](size_t item) {
        const int64_t pc = static_cast<int64_t>(item) % panelChunks, rc = static_cast<int64_t>(item) / panelChunks;
        const int64_t r0 = rowBlocks * rc / rowChunks * step, r1 = std::min(m, rowBlocks * (rc + 1) / rowChunks * step);
        block(kernel, x, ldx, w, bias, y, ldy, r0, r1, P * pc / panelChunks, P * (pc + 1) / panelChunks);
    });
}

#else

bool packedGemmAvailable() {
    return false;
}

bool packedGemmUsesAvx512() {
    return false;
}

void packedGemm(const float*, int64_t, int64_t, const PackedMatrix&, const float*, float*, int64_t, int, GemmKernel) {
    throw std::logic_error("packedGemm needs an x86-64 CPU with AVX2 and FMA");
}

#endif

} // namespace gwb::engine::detail
