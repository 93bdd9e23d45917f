#include "gwb/geometry/bivector.h"

#include "gwb/geometry/plucker.h"
#include "gwb/geometry/product.h"

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

// The residual from the spectrum of M (antisymmetric, singular pairs s_k). R_ijkl is the Pfaffian of
// M's principal 4 x 4 submatrix on i<j<k<l, and Pf^2 = det, so sum R_ijkl^2 is the sum of M's 4 x 4
// principal minors: e_4 of M's eigenvalues +-i s_k, which is e_2(s_1^2, s_2^2, ...). With
// ||B||^2 = sum s_k^2, rho = sqrt(e_2(s^2)) / ||B||^2: O(n^3) (or O(n^2) for a near-plane) instead
// of the C(n,4) quadruples (1.58 million at n = 80). The small pairs are what matters near a plane,
// and an eigen-decomposition of M^T M knows them only to ~eps s_1^2; so the top pair is deflated
// (power iteration on M^T M for its plane span(u, v), a = u.Mv) and what is left,
// sum_{k>1} s_k^2 = ||M - a (u v^T - v u^T)||_F^2 / 2, is summed from the matrix itself: e_2 =
// a^2 (sum_{k>1} s_k^2) + e_2(s_2^2, ...). Against the long-double sum over quadruples
// (tests/geometry/bivector_test.cpp) the absolute error stays below 1e-15 at n <= 80, for planes,
// near-planes, repeated pairs and generic bivectors alike.
namespace {
struct Deflation {
    double a2 = 0;       ///< (u^T M v)^2: the top pair's value squared
    double rest = 0;     ///< ||M - a (u v^T - v u^T)||_F^2 / 2: the other pairs' sum of squares
    double coupling = 0; ///< ||(I - PP^T) M P||_F^2: zero when span(u, v) is invariant
};

/// One deflation of the top pair after `iterations` steps of power iteration on M^T M = -M^2
/// from u (O(n^2) each).
Deflation deflate(const RowMatrixXd& m, Eigen::VectorXd u, int iterations, Eigen::VectorXd& w) {
    for (int it = 0; it < iterations; ++it) {
        w.noalias() = m * u;
        u.noalias() = m * w;
        u /= u.norm();
    }
    const Eigen::VectorXd mu = m * u;
    Eigen::VectorXd v = mu;
    v -= u.dot(v) * u;
    v /= v.norm();
    const Eigen::VectorXd mv = m * v;
    Deflation d;
    const double a = u.dot(mv);
    d.a2 = a * a;
    // coupling: the parts of Mu, Mv outside span(u, v)
    const Eigen::VectorXd cu = mu - u.dot(mu) * u - v.dot(mu) * v, cv = mv - u.dot(mv) * u - v.dot(mv) * v;
    d.coupling = cu.squaredNorm() + cv.squaredNorm();
    const Eigen::Index n = m.rows();
    double s = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
        const double* mi = m.row(i).data();
        const double ui = a * u[i], vi = a * v[i];
        for (Eigen::Index j = i + 1; j < n; ++j) {
            const double e = mi[j] - (ui * v[j] - vi * u[j]);
            s += e * e;
        }
    }
    d.rest = s;
    return d;
}

} // namespace

namespace {
/// Eigenvalues (ascending) of the symmetric S = M^T M, and when asked a unit eigenvector of the
/// largest. The eigenvalues are Eigen's (scaled, Householder tridiagonalisation, implicit QR), as
/// SelfAdjointEigenSolver gives them; the vector comes from inverse iteration on the tridiagonal
/// matrix T, shifted just above its largest eigenvalue (so T - sigma I is negative definite and
/// LDL^T needs no pivoting), taken back through the Householder reflections: O(n^2) instead of
/// accumulating every rotation of the QR sweeps, O(n^3). Any vector of the top eigenspace will
/// do (it is two-dimensional for an antisymmetric M: the plane itself). If the iteration does not
/// certify its vector (residual above 1e-12 of the spectrum's scale), the full solver decides.
struct MtMSpectrum {
    Eigen::VectorXd lam;
    Eigen::VectorXd top;
};

MtMSpectrum spectrumOfMtM(const RowMatrixXd& m, bool wantTop) {
    const Eigen::Index n = m.rows();
    MtMSpectrum out;
    Eigen::MatrixXd s = multiplyTransposed(m, m); // M^T M = M M^T = -M^2 for antisymmetric M
    const double scale = s.cwiseAbs().maxCoeff();
    if (!(scale > 0) || !wantTop || n < 3) {
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(s, wantTop ? Eigen::ComputeEigenvectors
                                                                      : Eigen::EigenvaluesOnly);
        out.lam = eig.eigenvalues();
        if (wantTop) out.top = eig.eigenvectors().col(n - 1);
        return out;
    }
    s /= scale;
    Eigen::Tridiagonalization<Eigen::MatrixXd> tri(s);
    const Eigen::VectorXd a = tri.diagonal(), e = tri.subDiagonal();
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> values;
    values.computeFromTridiagonal(a, e, Eigen::EigenvaluesOnly);
    out.lam = values.eigenvalues() * scale;
    const double top = values.eigenvalues()[n - 1];
    const double sigma = top + 1e-10 * std::max(std::abs(top), 1e-300);
    // LDL^T of T - sigma I: d_i < 0 throughout.
    Eigen::VectorXd d(n), l(n), x(n), y(n);
    d[0] = a[0] - sigma;
    bool ok = d[0] < 0;
    for (Eigen::Index i = 0; ok && i + 1 < n; ++i) {
        l[i] = e[i] / d[i];
        d[i + 1] = a[i + 1] - sigma - l[i] * e[i];
        ok = d[i + 1] < 0 && std::isfinite(d[i + 1]);
    }
    if (ok) {
        for (Eigen::Index i = 0; i < n; ++i) // a fixed start with no special direction
            x[i] = 1.0 + 0.5 * std::sin(1.0 + 2.0 * static_cast<double>(i));
        x.normalize();
        bool certified = false;
        for (int it = 0; it < 8 && !certified; ++it) {
            y = x; // solve (T - sigma I) x = y
            for (Eigen::Index i = 0; i + 1 < n; ++i)
                y[i + 1] -= l[i] * y[i];
            for (Eigen::Index i = 0; i < n; ++i)
                y[i] /= d[i];
            for (Eigen::Index i = n - 2; i >= 0; --i)
                y[i] -= l[i] * y[i + 1];
            x = y / y.norm();
            // ||T x - top x|| (T tridiagonal, scaled to max |s_ij| = 1)
            double r2 = 0;
            for (Eigen::Index i = 0; i < n; ++i) {
                double v = (a[i] - top) * x[i];
                if (i > 0) v += e[i - 1] * x[i - 1];
                if (i + 1 < n) v += e[i] * x[i + 1];
                r2 += v * v;
            }
            certified = it >= 1 && std::sqrt(r2) <= 1e-12;
        }
        if (certified && x.allFinite()) {
            out.top = tri.matrixQ() * x;
            out.top.normalize();
            return out;
        }
    }
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(s);
    out.lam = eig.eigenvalues() * scale;
    out.top = eig.eigenvectors().col(n - 1);
    return out;
}

double residualFromMatrix(const RowMatrixXd& m, double normSquared, const Eigen::VectorXd* eigenvalues);
} // namespace

double pluckerResidualOfMatrix(const RowMatrixXd& m, double normSquared) {
    return residualFromMatrix(m, normSquared, nullptr);
}

namespace {
/// pluckerResidualOfMatrix, with the eigenvalues of M^T M when the caller has them already.
double residualFromMatrix(const RowMatrixXd& m, double normSquared, const Eigen::VectorXd* eigenvalues) {
    if (normSquared == 0) return kNaN;
    const Eigen::Index n = m.rows();
    if (n < 4) return 0; // no quadruple: every bivector in 2 or 3 dimensions is a plane
    // Near-planes (B_t of a trace, read-out channels of a trained layer): the top pair's plane
    // by power iteration from the longest column, then deflated. Certified when the plane is
    // invariant to 1e-12 of what is left and what is left is below 1e-12 of the top pair (then
    // e2 of the rest, at most rest^2 / 2, is below 1e-12 of a^2 rest and is neglected).
    // (Row k of the antisymmetric M is minus its column k: the same norms, contiguous in memory.)
    Eigen::Index longest = 0;
    m.rowwise().squaredNorm().maxCoeff(&longest);
    Eigen::VectorXd u = -m.row(longest).transpose(), w(n);
    u /= u.norm();
    auto certified = [](const Deflation& x) {
        return x.rest <= 1e-12 * x.a2 && (x.coupling <= 1e-12 * x.rest || x.rest <= 1e-30 * x.a2);
    };
    // One step of the power iteration puts u in the plane of an exact plane (every M x lies in it):
    // then it certifies at once. Otherwise three steps from the same start, as for any near-plane.
    Deflation d = deflate(m, u, 1, w);
    if (!certified(d)) d = deflate(m, u, 3, w);
    if (certified(d)) return std::sqrt(d.a2 * d.rest) / normSquared;
    // Otherwise the spectrum: eigenvalues of M^T M, s_k^2 each twice.
    const Eigen::VectorXd lam = eigenvalues ? *eigenvalues : spectrumOfMtM(m, false).lam; // ascending
    const Eigen::Index pairs = n / 2;
    std::vector<double> l2(static_cast<size_t>(pairs));
    for (Eigen::Index k = 0; k < pairs; ++k)
        l2[static_cast<size_t>(k)] = std::max(0.5 * (lam[n - 1 - 2 * k] + lam[n - 2 - 2 * k]), 0.0);
    // e2 over pairs k >= from: sum_k l2[k] * (sum of those after it), smallest first.
    auto e2From = [&](Eigen::Index from) {
        double tail = 0, e2 = 0;
        for (Eigen::Index k = pairs - 1; k >= from; --k) {
            e2 += l2[static_cast<size_t>(k)] * tail;
            tail += l2[static_cast<size_t>(k)];
        }
        return e2;
    };
    if (pairs >= 2 && l2[1] <= 0.25 * l2[0]) {
        // A separated top pair: its weight times the rest, the rest measured directly (the
        // eigenvalues of M^T M know the small pairs only to ~eps s1^2).
        int iterations = 3;
        for (; iterations < 200 && !(d.coupling <= 1e-28 * d.a2); iterations += 3) {
            u = m * (m * u);
            u /= u.norm();
            d = deflate(m, u, 3, w);
        }
        return std::sqrt(std::max(d.a2 * d.rest + e2From(1), 0.0)) / normSquared;
    }
    return std::sqrt(e2From(0)) / normSquared;
}
} // namespace

double pluckerResidual(const Eigen::Ref<const Eigen::VectorXd>& b) {
    checkBivector(b, "pluckerResidual");
    return pluckerResidualOfMatrix(bivectorToMatrix(b), b.squaredNorm());
}

namespace {
// Eigen-decomposition of S = M^T M = -M^2: eigenvalues s_k^2, each twice (plus a 0 for odd n).
/// The planarity of B (matrix m); `residual`, when given, receives rho(B) from the same eigenvalues.
Planarity planarityImpl(const Eigen::Ref<const Eigen::VectorXd>& b, bool wantPlane, double* residual = nullptr) {
    checkBivector(b, "planarity");
    Planarity out;
    const double norm2 = b.squaredNorm();
    const RowMatrixXd m = bivectorToMatrix(b);
    const Eigen::Index n = m.rows();
    if (residual) *residual = norm2 == 0 ? kNaN : 0.0;
    if (norm2 == 0) {
        out.zero = true;
        out.value = kNaN;
        out.s1 = 0;
        out.basis = Eigen::MatrixXd::Constant(n, 2, kNaN);
        out.nearestPlane = Eigen::VectorXd::Constant(b.size(), kNaN);
        out.pairs = Eigen::VectorXd::Zero(n / 2);
        return out;
    }
    const MtMSpectrum spectrum = spectrumOfMtM(m, wantPlane);
    const Eigen::VectorXd& lam = spectrum.lam; // ascending
    if (residual) *residual = residualFromMatrix(m, norm2, &lam);
    const double s1sq = std::max(lam[n - 1], 0.0);
    out.s1 = std::sqrt(s1sq);
    // sum over distinct pairs of s_k^2 = ||B||^2 exactly (||M||_F^2 = 2 ||B||^2).
    out.value = std::min(s1sq / norm2, 1.0);
    if (n >= 4) out.ambiguous = lam[n - 3] >= (1.0 - 1e-8) * s1sq;
    // The singular pairs, descending: M^T M has each s_k^2 twice (and a 0 for odd n).
    out.pairs.resize(n / 2);
    for (Eigen::Index k = 0; k < n / 2; ++k)
        out.pairs[k] = std::sqrt(std::max(0.5 * (lam[n - 1 - 2 * k] + lam[n - 2 - 2 * k]), 0.0));
    if (!wantPlane) return out;
    // u: top eigenvector; v = M^T u / s1 completes the invariant plane with B.(u^v) = s1 > 0.
    const Eigen::VectorXd& u = spectrum.top;
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

ResidualAndPlanarity residualAndPlanarity(const Eigen::Ref<const Eigen::VectorXd>& b) {
    ResidualAndPlanarity out;
    out.planarity = planarityImpl(b, true, &out.residual);
    return out;
}

} // namespace gwb::geometry
