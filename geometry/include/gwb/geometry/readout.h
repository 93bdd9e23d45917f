#pragma once
// Read-out planes of a Grassmann layer (workbench-spec.md section 1, "Read-out planes").
// Row c of W_plu (d x C(r,2)) is a functional on bivectors, i.e. the antisymmetric r x r matrix
// A_c (A_c[i][j] = W_plu[c][k(i,j)], A_c[j][i] = -A_c[i][j]), and g_{t,c} - b_c = z_t^T A_c y_t.
// rho(A_c) and planarity(A_c) say whether channel c reads one 2-plane of R^r or a mixture; its
// top plane is the invariant 2-plane of its largest singular pair.

#include "gwb/geometry/types.h"

#include <vector>

namespace gwb::geometry {

/// Distinct singular values of the antisymmetric matrix of bivector b (they come in equal pairs),
/// descending: floor(n/2) values s_1 >= s_2 >= ... >= 0 with sum_k s_k^2 = ||b||^2.
/// Throws on empty / non-finite / non-triangular length.
Eigen::VectorXd antisymmetricSpectrum(const Eigen::Ref<const Eigen::VectorXd>& b);

/// Residual, planarity, spectrum and top plane of every row of W_plu (d x C(r,2)).
struct ReadoutPlanes {
    Eigen::VectorXd residual;              ///< d  rho(A_c); NaN for a zero row
    Eigen::VectorXd planarity;             ///< d  s_1^2 / sum_k s_k^2; NaN for a zero row
    RowMatrixXd spectrum;                  ///< d x floor(r/2)  distinct singular values, descending
    std::vector<Eigen::MatrixXd> topPlane; ///< d entries, r x 2 orthonormal basis (NaN for a zero row)
    std::vector<bool> ambiguous;           ///< d  s_1 = s_2: the top plane is not unique (one of them is given)
    int64_t zeroRows = 0;                  ///< rows of W_plu that are exactly zero
};
ReadoutPlanes readoutPlanes(const Eigen::Ref<const RowMatrixXd>& wPlu);

/// Principal angles (rad, ascending) between the token plane span(z, y) (y as in
/// AggregatedBivectors::y, so that B = z ^ y) and each channel's top plane: d x 2; NaN rows for a
/// zero channel, NaN everywhere when z, y do not span a plane.
RowMatrixXd readoutPlaneAngles(const Eigen::Ref<const Eigen::VectorXd>& z, const Eigen::Ref<const Eigen::VectorXd>& y,
                               const ReadoutPlanes& planes);
/// readoutPlaneAngles for every token at once: row t of the T x 2d result holds channel c's two
/// angles in columns 2c, 2c+1 (NaN as above). The same method, with the token and channel planes
/// stacked so that the cosines of every (token, channel) pair are one matrix product; the sine
/// part is formed only for the pairs with an angle below 0.05 rad.
RowMatrixXd readoutPlaneAnglesBatch(const Eigen::Ref<const RowMatrixXd>& z, const Eigen::Ref<const RowMatrixXd>& y,
                                    const ReadoutPlanes& planes);

} // namespace gwb::geometry
