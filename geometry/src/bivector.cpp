#include "gwb/geometry/bivector.h"

#include "gwb/geometry/plucker.h"

#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gwb::geometry {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void checkBivector(const Eigen::Ref<const Eigen::VectorXd>& b, const char* what) {
    if (b.size() == 0) throw std::invalid_argument(std::string(what) + ": empty bivector");
    if (!b.allFinite()) throw std::invalid_argument(std::string(what) + ": bivector contains NaN or Inf");
    dimensionFromPairCount(b.size()); // throws for a length that is not C(n,2)
}
} // namespace

double pluckerResidualOfMatrix(const RowMatrixXd& m, double normSquared) {
    if (normSquared == 0) return kNaN;
    const Eigen::Index n = m.rows();
    // acc[l] collects R_ijkl^2 per l so the inner loop has no cross-lane reduction and vectorizes.
    std::vector<double> acc(static_cast<size_t>(n), 0.0);
    double* a = acc.data();
    for (Eigen::Index i = 0; i < n; ++i) {
        const double* ri = m.row(i).data();
        for (Eigen::Index j = i + 1; j < n; ++j) {
            const double* rj = m.row(j).data();
            const double bij = ri[j];
            for (Eigen::Index k = j + 1; k < n; ++k) {
                const double* rk = m.row(k).data();
                const double bik = ri[k], bjk = rj[k];
                for (Eigen::Index l = k + 1; l < n; ++l) {
                    const double r = bij * rk[l] - bik * rj[l] + ri[l] * bjk;
                    a[l] += r * r;
                }
            }
        }
    }
    double sum = 0;
    for (double v : acc)
        sum += v;
    return std::sqrt(sum) / normSquared;
}

double pluckerResidual(const Eigen::Ref<const Eigen::VectorXd>& b) {
    checkBivector(b, "pluckerResidual");
    return pluckerResidualOfMatrix(bivectorToMatrix(b), b.squaredNorm());
}

namespace {
// Eigen-decomposition of S = M^T M = -M^2: eigenvalues s_k^2, each twice (plus a 0 for odd n).
Planarity planarityImpl(const Eigen::Ref<const Eigen::VectorXd>& b, bool wantPlane) {
    checkBivector(b, "planarity");
    Planarity out;
    const double norm2 = b.squaredNorm();
    const RowMatrixXd m = bivectorToMatrix(b);
    const Eigen::Index n = m.rows();
    if (norm2 == 0) {
        out.zero = true;
        out.value = kNaN;
        out.s1 = 0;
        out.basis = Eigen::MatrixXd::Constant(n, 2, kNaN);
        out.nearestPlane = Eigen::VectorXd::Constant(b.size(), kNaN);
        return out;
    }
    const Eigen::MatrixXd s = m.transpose() * m;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(s,
                                                       wantPlane ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
    const Eigen::VectorXd& lam = eig.eigenvalues(); // ascending
    const double s1sq = std::max(lam[n - 1], 0.0);
    out.s1 = std::sqrt(s1sq);
    // sum over distinct pairs of s_k^2 = ||B||^2 exactly (||M||_F^2 = 2 ||B||^2).
    out.value = std::min(s1sq / norm2, 1.0);
    if (n >= 4) out.ambiguous = lam[n - 3] >= (1.0 - 1e-8) * s1sq;
    if (!wantPlane) return out;
    // u: top eigenvector; v = M^T u / s1 completes the invariant plane with B.(u^v) = s1 > 0.
    const Eigen::VectorXd u = eig.eigenvectors().col(n - 1);
    Eigen::VectorXd v = m.transpose() * u;
    v -= u.dot(v) * u; // exact theory gives u.v = 0; remove rounding
    v.normalize();
    out.basis.resize(n, 2);
    out.basis.col(0) = u;
    out.basis.col(1) = v;
    out.nearestPlane = wedge(u, v);
    out.nearestPlane.normalize();
    return out;
}
} // namespace

Planarity planarity(const Eigen::Ref<const Eigen::VectorXd>& b) {
    return planarityImpl(b, true);
}

double planarityValue(const Eigen::Ref<const Eigen::VectorXd>& b) {
    return planarityImpl(b, false).value;
}

} // namespace gwb::geometry
