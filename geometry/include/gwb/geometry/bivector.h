#pragma once
// How far a bivector is from a plane (workbench-spec.md section 1): Grassmann-Plücker residual,
// planarity and the nearest plane. A zero bivector has no defined value: NaN plus a flag.

#include "gwb/geometry/types.h"

namespace gwb::geometry {

/// rho(B) = sqrt(sum_{i<j<k<l} R_ijkl(B)^2) / ||B||^2 with R_ijkl = B_ij B_kl - B_ik B_jl + B_il B_jk.
/// 0 for a plane (up to rounding), scale-free. NaN for B = 0. Throws on empty / non-finite /
/// non-triangular length. Summed directly (no cancelling invariants) so planes give ~1e-16.
double pluckerResidual(const Eigen::Ref<const Eigen::VectorXd>& b);

/// Same, for the antisymmetric matrix M of B (n x n, row-major); no checks (batched inner loop).
double pluckerResidualOfMatrix(const RowMatrixXd& m, double normSquared);

struct Planarity {
    double value = 0;  ///< s1^2 / sum_k s_k^2 over distinct singular-value pairs; NaN for B = 0
    double s1 = 0;     ///< largest singular value of M (= its pair's value)
    bool zero = false; ///< B = 0: value NaN, no plane
    /// s1 is a repeated pair (s2 = s1 up to 1e-8 relative): the invariant plane is not unique;
    /// basis/nearestPlane hold one of them.
    bool ambiguous = false;
    Eigen::MatrixXd basis;        ///< n x 2  orthonormal basis (u, v) of the invariant plane of s1, B.(u^v) > 0
    Eigen::VectorXd nearestPlane; ///< C(n,2)  normalized Plücker vector u ^ v of that plane
    /// floor(n/2)  the singular pairs s_k of M, descending (from the same decomposition, to ~eps s1;
    /// antisymmetricSpectrum gives the same values)
    Eigen::VectorXd pairs;
};

/// Planarity and nearest plane of B (any n >= 2).
Planarity planarity(const Eigen::Ref<const Eigen::VectorXd>& b);

/// Planarity value only (cheaper: no plane). NaN for B = 0.
double planarityValue(const Eigen::Ref<const Eigen::VectorXd>& b);

/// rho(B) and planarity(B) together, from one decomposition of M^T M (read-out channels need both).
struct ResidualAndPlanarity {
    double residual = 0;
    Planarity planarity;
};
ResidualAndPlanarity residualAndPlanarity(const Eigen::Ref<const Eigen::VectorXd>& b);

} // namespace gwb::geometry
