#pragma once
// Plücker coordinates of planes (workbench-spec.md section 1, model-spec step 3).
// Pairs (i, j), i < j, are ordered lexicographically: (0,1), (0,2), ..., (0,n-1), (1,2), ...
// Column k of W_plu belongs to the k-th pair in this order.

#include "gwb/geometry/types.h"

#include <utility>
#include <vector>

namespace gwb::geometry {

/// C(n, 2) = n (n - 1) / 2, the number of Plücker coordinates of a 2-plane in R^n.
int64_t pairCount(int64_t n);
/// Column index of pair (i, j), 0 <= i < j < n. Throws std::out_of_range otherwise.
int64_t pairIndex(int64_t i, int64_t j, int64_t n);
/// Pair (i, j) of column index k < C(n, 2). Throws std::out_of_range otherwise.
std::pair<int64_t, int64_t> pairFromIndex(int64_t k, int64_t n);
/// n such that C(n, 2) == m; throws std::invalid_argument when m is not of that form.
int64_t dimensionFromPairCount(int64_t m);

/// Lookup tables of all pairs in lexicographic order (first[k], second[k]) for one n.
struct PairTable {
    int64_t n = 0;
    std::vector<int> first;  ///< C(n,2)  i of pair k
    std::vector<int> second; ///< C(n,2)  j of pair k
    explicit PairTable(int64_t n);
};

/// p = u ^ v, p_ij = u_i v_j - u_j v_i (i < j, lexicographic). Throws on size mismatch,
/// empty or non-finite input.
Eigen::VectorXd wedge(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v);

/// p^ = p / max(||p||, eps) for p = u ^ v. A degenerate plane (u, v parallel or zero, ||p|| <= eps)
/// is flagged; its p^ is then the small vector p / eps, exactly as the model computes it.
struct NormalizedPlane {
    Eigen::VectorXd p;       ///< C(n,2)  normalized Plücker vector
    double norm = 0;         ///< ||u ^ v|| before normalization
    bool degenerate = false; ///< ||u ^ v|| <= eps: the vectors do not span a plane
};
NormalizedPlane normalizedWedge(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v,
                                double eps = 1e-8);

/// Plücker coordinates of the k-plane spanned by the columns of `basis` (n x k): the k x k minors
/// det(basis[I, :]) over row subsets I = {i_1 < ... < i_k} in lexicographic order. C(n, k) values.
/// For k = 2 this equals wedge(basis.col(0), basis.col(1)).
Eigen::VectorXd pluckerCoordinates(const Eigen::Ref<const Eigen::MatrixXd>& basis);

/// Antisymmetric n x n matrix M of a bivector (M_ij = B_ij, M_ji = -B_ij), n from C(n,2) = B.size().
RowMatrixXd bivectorToMatrix(const Eigen::Ref<const Eigen::VectorXd>& b);
/// Upper-triangle coordinates of an n x n matrix in pair order (the inverse of bivectorToMatrix
/// for antisymmetric input).
Eigen::VectorXd matrixToBivector(const Eigen::Ref<const RowMatrixXd>& m);

} // namespace gwb::geometry
