#pragma once
// Orthonormal bases, principal angles and subspaces (workbench-spec.md section 1).
// Rank drops are reported in the result structs (rankDeficient + rank), never hidden.

#include "gwb/geometry/types.h"

namespace gwb::geometry {

/// Default relative rank tolerance: |R_ii| <= tol * max |R_jj| counts as zero.
inline constexpr double kRankTolerance = 1e-10;

struct Basis {
    Eigen::MatrixXd q;          ///< n x rank  orthonormal columns spanning the input's column space
    int64_t rank = 0;           ///< numerical rank found
    int64_t requested = 0;      ///< columns asked for (input columns, or k of a principal subspace)
    bool rankDeficient = false; ///< rank < requested
};

/// Orthonormal basis of the column space of a (n x k) by Householder QR with column pivoting.
/// Throws std::invalid_argument for empty or non-finite input.
Basis orthonormalBasis(const Eigen::Ref<const Eigen::MatrixXd>& a, double relTol = kRankTolerance);

/// Orthonormal basis of span(u, v) (n x 2), pivoting on the longer vector and orthogonalizing twice
/// (fast path for planes). Rank < 2 (zero or parallel vectors) is flagged.
Basis planeBasis(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v,
                 double relTol = kRankTolerance);

/// Principal angles (rad, ascending, min(ka, kb) of them) between span(qa) and span(qb), both with
/// orthonormal columns, by the sine-cosine method of Knyazev & Argentati (2002): cosines from the
/// SVD of Qa^T Qb, sines from the SVD of Qb - Qa (Qa^T Qb); sine branch below pi/4.
Eigen::VectorXd principalAnglesOrthonormal(const Eigen::Ref<const Eigen::MatrixXd>& qa,
                                           const Eigen::Ref<const Eigen::MatrixXd>& qb);

struct PrincipalAngles {
    Eigen::VectorXd angles; ///< min(rankA, rankB)  rad, ascending in [0, pi/2]
    int64_t rankA = 0, rankB = 0;
    bool rankDeficient = false; ///< either input had fewer independent columns than columns
};
/// Principal angles between the column spaces of arbitrary a (n x ka) and b (n x kb), the inputs
/// taken as exact: rank by pivoted QR, then orthonormalization and the sine matrix in double-double
/// so that every angle, 1e-12 to pi/2 and tiny next to large, has ~1e-14 relative accuracy
/// (checked against 40-digit mpmath). Use this one for accuracy; principalAnglesOrthonormal is the
/// plain-double version (absolute accuracy ~1e-16 for rounded bases, fast).
/// Throws std::invalid_argument for empty, non-finite or row-mismatched input, or a zero-rank input.
PrincipalAngles principalAngles(const Eigen::Ref<const Eigen::MatrixXd>& a, const Eigen::Ref<const Eigen::MatrixXd>& b,
                                double relTol = kRankTolerance);

/// Grassmann distances from principal angles: geodesic ||th||_2, chordal ||sin th||_2,
/// projection max sin th (0 for no angles).
double geodesicDistance(const Eigen::Ref<const Eigen::VectorXd>& angles);
double chordalDistance(const Eigen::Ref<const Eigen::VectorXd>& angles);
double projectionDistance(const Eigen::Ref<const Eigen::VectorXd>& angles);

/// Top-k principal subspace (d x k) of row vectors x (T x d), optionally centred: the leading right
/// singular vectors. Rank below k (fewer independent rows) is flagged; q then has rank columns.
Basis principalSubspace(const Eigen::Ref<const RowMatrixXd>& x, int64_t k, bool center, double relTol = kRankTolerance);

/// Orthonormal basis of the row space of m (r x d), returned as d x rank.
Basis rowSpace(const Eigen::Ref<const RowMatrixXd>& m, double relTol = kRankTolerance);

/// Lifts planes of the reduced space R^r to R^d through the pseudo-inverse of W_red (r x d).
class PlaneLifter {
public:
    explicit PlaneLifter(const Eigen::Ref<const RowMatrixXd>& wRed, double relTol = kRankTolerance);
    /// A lifter computed before (e.g. kept in a cache): its pseudo-inverse (d x r), rank and r.
    PlaneLifter(Eigen::MatrixXd pinv, int64_t rank, int64_t wRows);
    /// d x r  pseudo-inverse of W_red (singular values below relTol * s_max treated as zero).
    const Eigen::MatrixXd& pinv() const { return m_pinv; }
    int64_t rank() const { return m_rank; }
    bool rankDeficient() const { return m_rank < m_wRows; }
    /// Rows z (T x r) -> rows pinv(W_red) z (T x d).
    RowMatrixXd liftRows(const Eigen::Ref<const RowMatrixXd>& z) const;
    /// Orthonormal basis of span(pinv z1, pinv z2) in R^d; degenerate planes flagged.
    Basis liftPlane(const Eigen::Ref<const Eigen::VectorXd>& z1, const Eigen::Ref<const Eigen::VectorXd>& z2) const;

private:
    Eigen::MatrixXd m_pinv;
    int64_t m_rank = 0;
    int64_t m_wRows = 0;
};

} // namespace gwb::geometry
