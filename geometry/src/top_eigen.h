#pragma once
// The largest eigenpairs of a symmetric matrix without accumulating every rotation of the QR sweeps
// (geometry-internal). Householder tridiagonalisation, the wanted eigenvalues by bisection on Sturm
// counts; then each wanted eigenvector by inverse iteration on the
// tridiagonal matrix (LU with partial pivoting, LAPACK's dgttrf/dstein scheme), orthogonalised
// against the ones before it, and taken back through the Householder reflections: O(n^2) a vector
// instead of O(n^3). A vector whose residual ||T x - lambda x|| exceeds 1e-12 of the spectrum's
// scale is not trusted: then the full solver decides for all of them.

#include <Eigen/Dense>

namespace gwb::geometry::detail {

struct TopEigen {
    Eigen::VectorXd values;  ///< the k largest eigenvalues, largest first
    double smallest = 0;     ///< the smallest eigenvalue
    Eigen::MatrixXd vectors; ///< n x k  unit eigenvectors of the k largest, largest first
    bool fullSolver = false; ///< the inverse iteration was not certified; the full solver gave them
};

/// `m` symmetric n x n (its lower triangle is read); 0 <= k <= n.
TopEigen topEigen(const Eigen::MatrixXd& m, Eigen::Index k);

} // namespace gwb::geometry::detail
