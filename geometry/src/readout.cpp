#include "gwb/geometry/readout.h"

#include "gwb/geometry/batch.h"
#include "gwb/geometry/bivector.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/product.h"
#include "gwb/geometry/subspace.h"

#include "plane_angles_core.h"

#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace gwb::geometry {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
} // namespace

Eigen::VectorXd antisymmetricSpectrum(const Eigen::Ref<const Eigen::VectorXd>& b) {
    if (b.size() == 0) throw std::invalid_argument("antisymmetricSpectrum: empty bivector");
    if (!b.allFinite()) throw std::invalid_argument("antisymmetricSpectrum: bivector contains NaN or Inf");
    const int64_t n = dimensionFromPairCount(b.size());
    const RowMatrixXd m = bivectorToMatrix(b);
    // M^T M = -M^2 has eigenvalues s_k^2, each twice (and a 0 for odd n): take every other from the top.
    const Eigen::MatrixXd s = m.transpose() * m;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(s, Eigen::EigenvaluesOnly);
    const Eigen::VectorXd& lam = eig.eigenvalues(); // ascending
    const int64_t pairs = n / 2;
    Eigen::VectorXd out(pairs);
    for (int64_t k = 0; k < pairs; ++k) {
        // Mean of the two (equal in exact arithmetic) eigenvalues of the pair.
        const double v = 0.5 * (lam[n - 1 - 2 * k] + lam[n - 2 - 2 * k]);
        out[k] = std::sqrt(std::max(v, 0.0));
    }
    return out;
}

ReadoutPlanes readoutPlanes(const Eigen::Ref<const RowMatrixXd>& wPlu) {
    requireFiniteRows(wPlu, "readoutPlanes");
    const int64_t d = wPlu.rows();
    const int64_t n = dimensionFromPairCount(wPlu.cols());
    ReadoutPlanes out;
    out.residual.resize(d);
    out.planarity.resize(d);
    out.spectrum = RowMatrixXd::Zero(d, n / 2);
    out.topPlane.resize(static_cast<size_t>(d));
    out.ambiguous.assign(static_cast<size_t>(d), false);
    for (int64_t c = 0; c < d; ++c) {
        const Eigen::VectorXd row = wPlu.row(c).transpose();
        if (row.squaredNorm() == 0) {
            ++out.zeroRows;
            out.residual[c] = kNaN;
            out.planarity[c] = kNaN;
            out.topPlane[static_cast<size_t>(c)] = Eigen::MatrixXd::Constant(n, 2, kNaN);
            continue;
        }
        const ResidualAndPlanarity both = residualAndPlanarity(row);
        out.residual[c] = both.residual;
        const Planarity& p = both.planarity;
        out.planarity[c] = p.value;
        out.topPlane[static_cast<size_t>(c)] = p.basis;
        out.ambiguous[static_cast<size_t>(c)] = p.ambiguous;
        out.spectrum.row(c) = p.pairs.transpose(); // the same decomposition as the planarity
    }
    return out;
}

RowMatrixXd readoutPlaneAnglesBatch(const Eigen::Ref<const RowMatrixXd>& z, const Eigen::Ref<const RowMatrixXd>& y,
                                    const ReadoutPlanes& planes) {
    if (z.rows() != y.rows() || z.cols() != y.cols())
        throw std::invalid_argument("readoutPlaneAnglesBatch: z and y have different shapes");
    const Eigen::Index T = z.rows(), r = z.cols();
    const auto d = static_cast<Eigen::Index>(planes.topPlane.size());
    RowMatrixXd out = RowMatrixXd::Constant(T, 2 * d, kNaN);
    // Every channel's top plane as two rows (2c, 2c + 1) and every token's plane basis likewise, so
    // that the cosine matrices C = Q_t^T Q_c of all (token, channel) pairs are the entries of one
    // (2T x r) x (r x 2d) product: C(a, b) = cos(2t + a, 2c + b).
    RowMatrixXd channels = RowMatrixXd::Zero(2 * d, r);
    std::vector<char> valid(static_cast<size_t>(d), 0);
    for (Eigen::Index c = 0; c < d; ++c) {
        const Eigen::MatrixXd& q = planes.topPlane[static_cast<size_t>(c)];
        if (q.rows() != r || q.cols() != 2 || !q.allFinite()) continue;
        channels.middleRows(2 * c, 2) = q.transpose();
        valid[static_cast<size_t>(c)] = 1;
    }
    RowMatrixXd tokens = RowMatrixXd::Zero(2 * T, r);
    std::vector<char> planar(static_cast<size_t>(T), 0);
    for (Eigen::Index t = 0; t < T; ++t) {
        if (!z.row(t).allFinite() || !y.row(t).allFinite()) continue;
        const Basis token = planeBasis(z.row(t).transpose(), y.row(t).transpose());
        if (token.rank < 2) continue;
        tokens.middleRows(2 * t, 2) = token.q.transpose();
        planar[static_cast<size_t>(t)] = 1;
    }
    if (T == 0 || d == 0) return out;
    const RowMatrixXd cos = multiplyTransposed(tokens, channels); // 2T x 2d
    Eigen::Matrix<double, Eigen::Dynamic, 2> sine(r, 2);
    for (Eigen::Index t = 0; t < T; ++t) {
        if (!planar[static_cast<size_t>(t)]) continue;
        double* row = out.row(t).data();
        detail::readoutAnglesRow(cos.row(2 * t).data(), cos.row(2 * t + 1).data(), d, row);
        for (Eigen::Index c = 0; c < d; ++c) {
            if (!valid[static_cast<size_t>(c)]) {
                row[2 * c] = row[2 * c + 1] = kNaN;
            } else if (row[2 * c] < 0) { // an angle below 0.05 rad: the sine part too
                const Eigen::Matrix2d cc = cos.block<2, 2>(2 * t, 2 * c);
                // (I - Q_t Q_t^T) Q_c, column b = Q_c[:, b] - sum_a C(a, b) Q_t[:, a].
                for (int k = 0; k < 2; ++k)
                    sine.col(k) = channels.row(2 * c + k).transpose() - cc(0, k) * tokens.row(2 * t).transpose() -
                                  cc(1, k) * tokens.row(2 * t + 1).transpose();
                const Eigen::Vector2d th = detail::planeAnglesFromParts(cc, sine.col(0).data(), sine.col(1).data(), r);
                row[2 * c] = th[0];
                row[2 * c + 1] = th[1];
            }
        }
    }
    return out;
}

RowMatrixXd readoutPlaneAngles(const Eigen::Ref<const Eigen::VectorXd>& z, const Eigen::Ref<const Eigen::VectorXd>& y,
                               const ReadoutPlanes& planes) {
    if (z.size() != y.size()) throw std::invalid_argument("readoutPlaneAngles: z and y have different lengths");
    const RowMatrixXd row = readoutPlaneAnglesBatch(z.transpose(), y.transpose(), planes); // 1 x 2d
    return Eigen::Map<const RowMatrixXd>(row.data(), static_cast<Eigen::Index>(planes.topPlane.size()), 2);
}

} // namespace gwb::geometry
