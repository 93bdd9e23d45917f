#pragma once
// Shared helpers for the geometry tests: seeded random matrices and exact test subspaces.

#include <Eigen/Dense>
#include <Eigen/QR>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace gwb::geometry::test {

inline Eigen::MatrixXd randomMatrix(Eigen::Index rows, Eigen::Index cols, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> nd(0.0, 1.0);
    Eigen::MatrixXd m(rows, cols);
    for (Eigen::Index j = 0; j < cols; ++j)
        for (Eigen::Index i = 0; i < rows; ++i)
            m(i, j) = nd(rng);
    return m;
}

inline Eigen::VectorXd randomVector(Eigen::Index n, uint64_t seed) {
    return randomMatrix(n, 1, seed).col(0);
}

/// Random orthogonal n x n matrix (Q of a Gaussian matrix's QR).
inline Eigen::MatrixXd randomOrthogonal(Eigen::Index n, uint64_t seed) {
    Eigen::HouseholderQR<Eigen::MatrixXd> qr(randomMatrix(n, n, seed));
    return qr.householderQ() * Eigen::MatrixXd::Identity(n, n);
}

/// Random signed permutation matrix: orthogonal and exactly representable, so subspaces built from
/// it carry no rounding and their principal angles are known to the last bit.
inline Eigen::MatrixXd randomSignedPermutation(Eigen::Index n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Eigen::Index> perm(static_cast<size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Eigen::MatrixXd p = Eigen::MatrixXd::Zero(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
        p(perm[static_cast<size_t>(i)], i) = (rng() & 1) ? 1.0 : -1.0;
    return p;
}

/// Qa = first k columns of u, Qb = u * (cos th_i e_i + sin th_i e_{k+i}) (needs n >= 2k):
/// principal angles exactly th (sorted).
struct AnglePair {
    Eigen::MatrixXd qa, qb;
};
inline AnglePair subspacesWithAngles(const Eigen::MatrixXd& u, const std::vector<double>& th) {
    const auto k = static_cast<Eigen::Index>(th.size());
    AnglePair out;
    out.qa = u.leftCols(k);
    out.qb.resize(u.rows(), k);
    for (Eigen::Index i = 0; i < k; ++i)
        out.qb.col(i) =
            std::cos(th[static_cast<size_t>(i)]) * u.col(i) + std::sin(th[static_cast<size_t>(i)]) * u.col(k + i);
    return out;
}

} // namespace gwb::geometry::test
