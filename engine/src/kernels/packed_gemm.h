#pragma once
// The engine's own matrix product for inference on the CPU: y = x W^T (+ bias) with W packed once.
//
// Every forward product of a trace multiplies activations by a fixed weight matrix (a Dense
// layer's out x in weight, or the tied head's V x d token table). OpenBLAS repacks that matrix and
// clears the output on every call, and its worker threads yield between calls: on the 2-core
// development machine that was a fifth of a paper-size forward pass and a tenth of its head
// (perf, 2026-11-24). Here the weight is laid out once in the order the kernel reads it, the
// bias seeds the accumulators, and each 12 x 32 block of the output (6 x 16 with AVX2 alone) is
// finished in registers.

#include <cstdint>
#include <memory>

namespace gwb::engine::detail {

/// A row-major n x k matrix W (a Linear weight: out x in; or the token table: V x d) packed for
/// y = x W^T: panels of kPanel rows of W, each stored k-major (panel p, column c, row j at
/// [(p * k + c) * kPanel + j]), rows past n zero, 64-byte aligned. Immutable once built.
class PackedMatrix {
public:
    static constexpr int64_t kPanel = 32;

    PackedMatrix() = default;
    /// Copies W (n x k, row stride ld >= k) into the packed layout.
    PackedMatrix(const float* w, int64_t n, int64_t k, int64_t ld);

    int64_t rows() const { return m_n; }
    int64_t cols() const { return m_k; }
    int64_t panels() const { return (m_n + kPanel - 1) / kPanel; }
    const float* panel(int64_t p) const { return m_data.get() + p * m_k * kPanel; }

private:
    struct Free {
        void operator()(float* p) const;
    };
    int64_t m_n = 0, m_k = 0;
    std::unique_ptr<float[], Free> m_data;
};

/// True when packedGemm runs here: an x86-64 CPU with AVX2 and FMA (elsewhere the callers keep
/// LibTorch's product).
bool packedGemmAvailable();

/// True when GemmKernel::Auto runs the AVX-512 form (12 x 32 register blocks) here; otherwise it
/// runs the AVX2 form (6 x 16 blocks, 16 vector registers). Both accumulate in the same order.
bool packedGemmUsesAvx512();

/// Which form runs: the widest the CPU has, or the AVX2 one (tests, comparisons).
enum class GemmKernel { Auto, Avx2 };

/// y[i][j] = sum_c x[i][c] W[j][c] (+ bias[j] when bias is not null) for i < m, j < W.rows():
/// x is m x W.cols() with row stride ldx, y is m x W.rows() with row stride ldy (y must not
/// overlap x). Each y entry is one float accumulation in order c = 0, 1, ... (the order of a
/// plain dot product). Runs on up to `workers` threads; small products run on the caller's alone.
/// Requires packedGemmAvailable().
void packedGemm(const float* x, int64_t m, int64_t ldx, const PackedMatrix& w, const float* bias, float* y, int64_t ldy,
                int workers, GemmKernel kernel = GemmKernel::Auto);

} // namespace gwb::engine::detail
