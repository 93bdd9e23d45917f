#pragma once
// Batched entry points over whole arrays (all tokens x all offsets) so callers never loop over
// tokens. Inputs are row-major double arrays; use toDouble() for float trace arrays.
// "Offsets" D pair token t with the past token t - D (model-spec step 2); (t, D) with t - D < 0 is
// invalid and gives NaN.

#include "gwb/geometry/types.h"

#include <vector>

namespace gwb::geometry {

/// Normalized Plücker vectors p^(t, D) of span(z_t, z_{t-D}) (p_ij = z_{t,i} z_{t-D,j} - z_{t,j} z_{t-D,i}).
/// Tokens tBegin..tEnd-1 only (tEnd = -1: to the end), so long prompts can be processed in chunks;
/// n = tEnd - tBegin below.
struct PairPlanes {
    RowMatrixXd planes;     ///< (n*O) x C(r,2)  row (t-tBegin)*O + o is p^ for offset o; zero row where t-D < 0
    RowMatrixXd norms;      ///< n x O  ||z_t ^ z_{t-D}|| before normalization; NaN where t-D < 0
    int64_t degenerate = 0; ///< valid pairs with ||p|| <= eps (parallel or zero vectors)
};
PairPlanes pairPlanes(const Eigen::Ref<const RowMatrixXd>& z, const std::vector<int>& offsets, double eps = 1e-8,
                      int64_t tBegin = 0, int64_t tEnd = -1);

/// B_t = mean over valid offsets of p^(t, D), without materializing the per-offset planes; with
/// meanThenNormalize (Arledge's fused kernel) B_t = q / sqrt(||q||^2 + eps), q = mean of the raw p.
struct AggregatedBivectors {
    RowMatrixXd b; ///< T x C(r,2)  B_t; zero row where no offset is valid
    /// T x r  y_t with B_t = z_t ^ y_t (the weighted mean of the parts of the token's z_{t-D}
    /// orthogonal to z_t; zero row where no offset is valid): B_t's plane is span(z_t, y_t).
    RowMatrixXd y;
    std::vector<int> validCount; ///< T  |W_t|, number of valid offsets
    RowMatrixXd norms;           ///< T x O  ||z_t ^ z_{t-D}||; NaN where t-D < 0
    int64_t degenerate = 0;      ///< valid pairs with ||p|| <= eps
};
AggregatedBivectors aggregateBivectors(const Eigen::Ref<const RowMatrixXd>& z, const std::vector<int>& offsets,
                                       double eps = 1e-8, bool meanThenNormalize = false);
/// How the planes are averaged: the paper's normalise-then-mean, mean-then-normalise, or the raw
/// planes times `scale` averaged with no normalisation (GrassmannGPTv3: scale 1/sqrt(C(r,2))).
/// With tBegin/tEnd: tokens [tBegin, tEnd) only (row i of every field is token tBegin + i; the
/// pairs still reach back into the earlier tokens), so that a long prompt's T x C(r,2) B need not
/// exist at once; the rows equal those of the whole call to the bit.
enum class PlaneMean { NormalizeThenMean, MeanThenNormalize, Raw };
AggregatedBivectors aggregateBivectors(const Eigen::Ref<const RowMatrixXd>& z, const std::vector<int>& offsets,
                                       double eps, PlaneMean mode, double scale = 1.0, int64_t tBegin = 0,
                                       int64_t tEnd = -1);

/// rho(B) of every row of b (rows x C(n,2)); NaN for zero rows.
Eigen::VectorXd residualBatch(const Eigen::Ref<const RowMatrixXd>& b);
/// Planarity s1^2 / sum s_k^2 of every row of b; NaN for zero rows. Rows within 1e-14 of a plane
/// (planarity >= 1 - 1e-14) are certified by a Rayleigh quotient without the eigen-decomposition,
/// to 1e-14 absolute; the others agree with planarity() to rounding.
Eigen::VectorXd planarityBatch(const Eigen::Ref<const RowMatrixXd>& b);
/// Both of the above from one matrix a row (what a trace's analysis computes for its B_t).
struct ResidualsAndPlanarities {
    Eigen::VectorXd residual;
    Eigen::VectorXd planarity;
};
ResidualsAndPlanarities residualAndPlanarityBatch(const Eigen::Ref<const RowMatrixXd>& b);

/// Principal angles (ascending) between planes span(a_t, a_{t-D}) and span(b_t, b_{t-D}) for every
/// (t, D): e.g. one token's lifted pair planes in two layers. a, b: T x d (same shape). Most pairs
/// take their cosines from the 2 x 2 Gram and cross products (four dot products a pair); pairs
/// with nearly parallel vectors or an angle below 0.05 rad take explicit bases and the sine part.
struct PlaneAnglesBatch {
    RowMatrixXd angles;     ///< T x (2*O)  columns (o, 0) = th_1, (o, 1) = th_2 in rad; NaN where invalid
    int64_t degenerate = 0; ///< valid (t, D) where either plane had rank < 2 (NaN there)
};
PlaneAnglesBatch pairPlaneAnglesBatch(const Eigen::Ref<const RowMatrixXd>& a, const Eigen::Ref<const RowMatrixXd>& b,
                                      const std::vector<int>& offsets, double relTol = 1e-10);

/// Principal angles of two 2-planes given by orthonormal bases (n x 2): fixed-size fast path of
/// principalAnglesOrthonormal (same method).
Eigen::Vector2d planeAngles(const Eigen::Ref<const Eigen::Matrix<double, Eigen::Dynamic, 2>>& qa,
                            const Eigen::Ref<const Eigen::Matrix<double, Eigen::Dynamic, 2>>& qb);

} // namespace gwb::geometry
