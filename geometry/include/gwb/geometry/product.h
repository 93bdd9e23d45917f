#pragma once
// Double-precision products A B^T for the analyses' large GEMMs (the read-out contributions and
// the per-offset projections W_plu p: T x C(r,2) times C(r,2) x d). Eigen, built for any x86-64,
// multiplies with SSE2 only; these use AVX-512 or AVX2 with FMA when the CPU has them (checked at
// run time) and Eigen otherwise. Only the order of the additions differs, so results agree with
// Eigen's to rounding (tests/geometry/product_test.cpp).

#include "gwb/geometry/types.h"

#include <vector>

namespace gwb::geometry {

/// B (n x k) packed once for many products A B^T (e.g. one layer's W_plu for every chunk of tokens).
class TransposedRhs {
public:
    /// kernel: "avx512", "avx2", "eigen" or nullptr for the best this CPU runs; a kernel the CPU
    /// cannot run throws std::invalid_argument.
    explicit TransposedRhs(const Eigen::Ref<const RowMatrixXd>& b, const char* kernel = nullptr);
    Eigen::Index rows() const { return m_n; } ///< n
    Eigen::Index cols() const { return m_k; } ///< k
    /// A B^T for A (m x k): m x n.
    RowMatrixXd multiply(const Eigen::Ref<const RowMatrixXd>& a) const;

private:
    Eigen::Index m_n = 0, m_k = 0;
    int m_width = 0;            ///< columns per packed panel (0: Eigen's product, m_plain)
    std::vector<double> m_pack; ///< panels of m_width columns of B^T, k rows each, zero-padded
    RowMatrixXd m_plain;        ///< B itself when no vector kernel runs here
};

/// A B^T (A: m x k, B: n x k).
RowMatrixXd multiplyTransposed(const Eigen::Ref<const RowMatrixXd>& a, const Eigen::Ref<const RowMatrixXd>& b);

/// y = x b for raw row-major x (m x k), b (k x n) and y (m x n, overwritten): small products whose
/// right factor changes every time (one per token), so that packing it would cost as much as the
/// product. Each y(i, j) is sum_p x(i, p) b(p, j) added in the order p = 0..k-1, vectorized over j
/// with AVX-512 or AVX2 FMA when the CPU has them (kernel as for TransposedRhs).
void multiplyRowMajor(const double* x, Eigen::Index m, Eigen::Index k, const double* b, Eigen::Index n, double* y,
                      const char* kernel = nullptr);

/// Which kernel TransposedRhs uses on this CPU by default: "avx512", "avx2" or "eigen".
const char* productKernelName();
/// Whether this CPU runs the kernel of that name.
bool productKernelAvailable(const char* kernel);

} // namespace gwb::geometry
