#include "gwb/geometry/batch.h"

#include "gwb/geometry/bivector.h"
#include "gwb/geometry/plucker.h"

#include "plane_angles_core.h"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gwb::geometry {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void checkOffsets(const std::vector<int>& offsets, const char* what) {
    if (offsets.empty()) throw std::invalid_argument(std::string(what) + ": empty offset set");
    for (int d : offsets)
        if (d <= 0)
            throw std::invalid_argument(std::string(what) + ": offsets must be positive, got " + std::to_string(d));
}

void checkStates(const Eigen::Ref<const RowMatrixXd>& z, const char* what) {
    requireFiniteRows(z, what);
    if (z.cols() < 2) throw std::invalid_argument(std::string(what) + ": vectors need length >= 2");
}

// out = z_t ^ z_s in pair order; returns ||out||.
double wedgeInto(const double* zt, const double* zs, Eigen::Index r, double* out) {
    double n2 = 0;
    for (Eigen::Index i = 0; i < r; ++i) {
        const double ai = zt[i], bi = zs[i];
        for (Eigen::Index j = i + 1; j < r; ++j) {
            const double v = ai * zs[j] - zt[j] * bi;
            *out++ = v;
            n2 += v * v;
        }
    }
    return std::sqrt(n2);
}
} // namespace

PairPlanes pairPlanes(const Eigen::Ref<const RowMatrixXd>& z, const std::vector<int>& offsets, double eps,
                      int64_t tBegin, int64_t tEnd) {
    checkStates(z, "pairPlanes");
    checkOffsets(offsets, "pairPlanes");
    if (!(eps > 0)) throw std::invalid_argument("pairPlanes: eps must be positive");
    if (tEnd < 0) tEnd = z.rows();
    if (tBegin < 0 || tBegin > tEnd || tEnd > z.rows())
        throw std::invalid_argument("pairPlanes: token range [" + std::to_string(tBegin) + ", " + std::to_string(tEnd) +
                                    ") outside 0.." + std::to_string(z.rows()));
    const Eigen::Index n = tEnd - tBegin, r = z.cols(), O = static_cast<Eigen::Index>(offsets.size());
    const Eigen::Index C = pairCount(r);
    PairPlanes out;
    out.planes = RowMatrixXd::Zero(n * O, C);
    out.norms = RowMatrixXd::Constant(n, O, kNaN);
    for (Eigen::Index t = tBegin; t < tEnd; ++t)
        for (Eigen::Index o = 0; o < O; ++o) {
            const Eigen::Index s = t - offsets[static_cast<size_t>(o)];
            if (s < 0) continue;
            double* row = out.planes.row((t - tBegin) * O + o).data();
            const double norm = wedgeInto(z.row(t).data(), z.row(s).data(), r, row);
            out.norms(t - tBegin, o) = norm;
            if (norm <= eps) ++out.degenerate;
            const double inv = 1.0 / std::max(norm, eps);
            for (Eigen::Index k = 0; k < C; ++k)
                row[k] *= inv;
        }
    return out;
}

AggregatedBivectors aggregateBivectors(const Eigen::Ref<const RowMatrixXd>& z, const std::vector<int>& offsets,
                                       double eps, bool meanThenNormalize) {
    return aggregateBivectors(z, offsets, eps,
                              meanThenNormalize ? PlaneMean::MeanThenNormalize : PlaneMean::NormalizeThenMean);
}

AggregatedBivectors aggregateBivectors(const Eigen::Ref<const RowMatrixXd>& z, const std::vector<int>& offsets,
                                       double eps, PlaneMean mode, double scale, int64_t tBegin, int64_t tEnd) {
    const bool meanThenNormalize = mode == PlaneMean::MeanThenNormalize, raw = mode == PlaneMean::Raw;
    if (!(scale > 0) || !std::isfinite(scale)) throw std::invalid_argument("aggregateBivectors: scale must be > 0");
    checkStates(z, "aggregateBivectors");
    checkOffsets(offsets, "aggregateBivectors");
    if (!(eps > 0)) throw std::invalid_argument("aggregateBivectors: eps must be positive");
    if (tEnd < 0) tEnd = z.rows();
    if (tBegin < 0 || tBegin > tEnd || tEnd > z.rows())
        throw std::invalid_argument("aggregateBivectors: the rows [" + std::to_string(tBegin) + ", " +
                                    std::to_string(tEnd) + ") are not within the " + std::to_string(z.rows()) +
                                    " tokens");
    const Eigen::Index T = tEnd - tBegin, r = z.cols(), O = static_cast<Eigen::Index>(offsets.size());
    const Eigen::Index C = pairCount(r);
    AggregatedBivectors out;
    out.b = RowMatrixXd::Zero(T, C);
    out.y = RowMatrixXd::Zero(T, r);
    out.norms = RowMatrixXd::Constant(T, O, kNaN);
    out.validCount.assign(static_cast<size_t>(T), 0);
    Eigen::VectorXd w(r);
    // Every plane of token t contains z_t, so the mean of the (weighted) planes is one wedge:
    // B_t = mean_D w_D z_t ^ z_{t-D} = z_t ^ y_t with y_t = mean_D w_D z_{t-D}^perp, where z^perp is
    // z's part orthogonal to z_t (z_t ^ z = z_t ^ z^perp). Gram-Schmidt (twice) gives z^perp and
    // the pair's norm ||z_t ^ z_s|| = |z_t| |z_s^perp| in O(r) a pair, to the accuracy of the
    // wedge's own coordinates; and y_t has no part along z_t, so a nearly parallel pair's large
    // weight 1 / eps does not swamp the other pairs' parts of y_t.
    for (Eigen::Index i = 0; i < T; ++i) {
        const Eigen::Index t = tBegin + i; // the token; row i of the output
        const auto zt = z.row(t);
        const double tt = zt.squaredNorm();
        auto yt = out.y.row(i);
        int count = 0;
        for (Eigen::Index o = 0; o < O; ++o) {
            const Eigen::Index s = t - offsets[static_cast<size_t>(o)];
            if (s < 0) continue;
            w = z.row(s).transpose();
            double n = 0;
            if (tt > 0) {
                w -= (zt.dot(w.transpose()) / tt) * zt.transpose();
                w -= (zt.dot(w.transpose()) / tt) * zt.transpose();
                n = std::sqrt(tt) * w.norm();
            }
            out.norms(i, o) = n;
            if (n <= eps) ++out.degenerate;
            const double weight = raw ? scale : meanThenNormalize ? 1.0 : 1.0 / std::max(n, eps);
            yt += weight * w.transpose();
            ++count;
        }
        out.validCount[static_cast<size_t>(i)] = count;
        if (count == 0) continue;
        yt /= count;
        wedgeInto(zt.data(), yt.data(), r, out.b.row(i).data());
        if (meanThenNormalize) {
            const double norm = std::sqrt(out.b.row(i).squaredNorm() + eps);
            out.b.row(i) /= norm;
            yt /= norm;
        }
    }
    return out;
}

namespace {
/// Writes the bivector `src` (C(n,2) coordinates in pair order) into the preallocated n x n
/// antisymmetric matrix m, so batch loops reuse one matrix instead of allocating per row.
template <typename Matrix> void fillAntisymmetric(const double* src, Eigen::Index n, Matrix& m) {
    m.setZero();
    Eigen::Index k = 0;
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = i + 1; j < n; ++j, ++k) {
            m(i, j) = src[k];
            m(j, i) = -src[k];
        }
}
} // namespace

namespace {
/// Planarity of the bivector whose antisymmetric matrix is `m` (filled) and squared norm norm2.
/// Certified shortcut for (near-)planes, such as the aggregated B_t = z_t ^ y_t: with x the
/// longest column of M, ||M x||^2 / ||x||^2 (a Rayleigh quotient of S = M^T M) is a lower bound
/// on s1^2 and ||B||^2 = sum s_k^2 an upper bound. For a plane every column lies in it and the two
/// are equal; when they agree to 1e-14 the planarity is known to 1e-14 without the
/// eigen-decomposition (O(n^2) instead of O(n^3)). `s` and `eig` are scratch space.
double planarityOfMatrix(const RowMatrixXd& m, double norm2, RowMatrixXd& s,
                         Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>& eig) {
    if (norm2 == 0) return kNaN;
    const Eigen::Index n = m.rows();
    // Row k of the antisymmetric M is minus its column k: the same norms, contiguous in memory.
    Eigen::Index longest = 0;
    m.rowwise().squaredNorm().maxCoeff(&longest);
    const double xx = m.row(longest).squaredNorm();
    const double rayleigh = (m * m.row(longest).transpose()).squaredNorm() / xx;
    if (rayleigh >= (1 - 1e-14) * norm2) return std::min(rayleigh / norm2, 1.0);
    s.noalias() = m.transpose() * m;
    eig.compute(s, Eigen::EigenvaluesOnly);
    return std::min(std::max(eig.eigenvalues()[n - 1], 0.0) / norm2, 1.0);
}

/// Each row's residual (when `res`) and planarity (when `pla`), from one antisymmetric matrix a row.
void rowChecks(const Eigen::Ref<const RowMatrixXd>& b, const char* what, Eigen::VectorXd* res, Eigen::VectorXd* pla) {
    requireFiniteRows(b, what);
    const int64_t n = dimensionFromPairCount(b.cols());
    if (res) res->resize(b.rows());
    if (pla) pla->resize(b.rows());
    RowMatrixXd m(n, n), s(n, n);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(n);
    for (Eigen::Index row = 0; row < b.rows(); ++row) {
        const double norm2 = b.row(row).squaredNorm();
        fillAntisymmetric(b.row(row).data(), n, m);
        if (res) (*res)[row] = pluckerResidualOfMatrix(m, norm2);
        if (pla) (*pla)[row] = planarityOfMatrix(m, norm2, s, eig);
    }
}
} // namespace

Eigen::VectorXd residualBatch(const Eigen::Ref<const RowMatrixXd>& b) {
    Eigen::VectorXd out;
    rowChecks(b, "residualBatch", &out, nullptr);
    return out;
}

Eigen::VectorXd planarityBatch(const Eigen::Ref<const RowMatrixXd>& b) {
    Eigen::VectorXd out;
    rowChecks(b, "planarityBatch", nullptr, &out);
    return out;
}

ResidualsAndPlanarities residualAndPlanarityBatch(const Eigen::Ref<const RowMatrixXd>& b) {
    ResidualsAndPlanarities out;
    rowChecks(b, "residualAndPlanarityBatch", &out.residual, &out.planarity);
    return out;
}

namespace detail {

Eigen::Vector2d planeAnglesFromParts(const Eigen::Matrix2d& c, double* s0, double* s1, Eigen::Index n) {
    const Eigen::JacobiSVD<Eigen::Matrix2d> svd(c, Eigen::ComputeFullV);
    const Eigen::Vector2d cosines = svd.singularValues();
    const Eigen::Matrix2d& v = svd.matrixV();
    // Rotate the sine part onto Qb's principal vectors: (I - Qa Qa^T) Qb V.
    for (Eigen::Index i = 0; i < n; ++i) {
        const double a = s0[i], b = s1[i];
        s0[i] = a * v(0, 0) + b * v(1, 0);
        s1[i] = a * v(0, 1) + b * v(1, 1);
    }
    // One-sided Jacobi on the two sine columns.
    auto dot = [n](const double* x, const double* y) {
        double sum = 0;
        for (Eigen::Index i = 0; i < n; ++i)
            sum += x[i] * y[i];
        return sum;
    };
    for (int sweep = 0; sweep < 4; ++sweep) {
        const double alpha = dot(s0, s0), beta = dot(s1, s1), gamma = dot(s0, s1);
        if (gamma == 0 || std::abs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) break;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double cs = 1 / std::sqrt(1 + t * t), sn = cs * t;
        for (Eigen::Index i = 0; i < n; ++i) {
            const double a = s0[i];
            s0[i] = cs * a - sn * s1[i];
            s1[i] = sn * a + cs * s1[i];
        }
    }
    double n0 = std::sqrt(dot(s0, s0)), n1 = std::sqrt(dot(s1, s1));
    if (n0 > n1) std::swap(n0, n1);
    const double sines[2] = {std::min(n0, 1.0), std::min(n1, 1.0)};
    Eigen::Vector2d th;
    for (int i = 0; i < 2; ++i)
        th[i] = sines[i] * sines[i] <= 0.5 ? std::asin(sines[i]) : std::acos(std::min(cosines[i], 1.0));
    if (th[0] > th[1]) std::swap(th[0], th[1]);
    return th;
}

} // namespace detail

Eigen::Vector2d planeAngles(const Eigen::Ref<const Eigen::Matrix<double, Eigen::Dynamic, 2>>& qa,
                            const Eigen::Ref<const Eigen::Matrix<double, Eigen::Dynamic, 2>>& qb) {
    if (qa.rows() != qb.rows()) throw std::invalid_argument("planeAngles: planes live in different dimensions");
    const Eigen::Matrix2d c = qa.transpose() * qb;
    Eigen::Vector2d th;
    if (detail::planeAnglesFromCosines(c, th)) return th;
    Eigen::Matrix<double, Eigen::Dynamic, 2> s = qb;
    s.noalias() -= qa * c;
    return detail::planeAnglesFromParts(c, s.col(0).data(), s.col(1).data(), s.rows());
}

PlaneAnglesBatch pairPlaneAnglesBatch(const Eigen::Ref<const RowMatrixXd>& a, const Eigen::Ref<const RowMatrixXd>& b,
                                      const std::vector<int>& offsets, double relTol) {
    checkStates(a, "pairPlaneAnglesBatch (first)");
    checkStates(b, "pairPlaneAnglesBatch (second)");
    checkOffsets(offsets, "pairPlaneAnglesBatch");
    if (a.rows() != b.rows() || a.cols() != b.cols())
        throw std::invalid_argument("pairPlaneAnglesBatch: arrays have different shapes");
    const Eigen::Index T = a.rows(), d = a.cols(), O = static_cast<Eigen::Index>(offsets.size());
    PlaneAnglesBatch out;
    out.angles = RowMatrixXd::Constant(T, 2 * O, kNaN);
    Eigen::Matrix<double, Eigen::Dynamic, 2> qa(d, 2), qb(d, 2), sine(d, 2);
    // Orthonormal basis of span(x, y) into q (longer vector first, Gram-Schmidt twice); false if rank < 2.
    auto basis = [relTol](const auto& x, const auto& y, Eigen::Matrix<double, Eigen::Dynamic, 2>& q) {
        const double nx = x.norm(), ny = y.norm();
        const bool xFirst = nx >= ny;
        const double n1 = std::max(nx, ny);
        if (n1 == 0) return false;
        q.col(0) = (xFirst ? x : y).transpose() / n1;
        q.col(1) = (xFirst ? y : x).transpose();
        q.col(1) -= q.col(0).dot(q.col(1)) * q.col(0);
        q.col(1) -= q.col(0).dot(q.col(1)) * q.col(0);
        const double n2 = q.col(1).norm();
        if (n2 <= relTol * n1) return false;
        q.col(1) /= n2;
        return true;
    };
    // Per token: |a_t|^2, |b_t|^2 and a_t . b_t, shared by every pair the token is in.
    Eigen::VectorXd aa(T), bb(T), ab(T);
    for (Eigen::Index t = 0; t < T; ++t) {
        aa[t] = a.row(t).squaredNorm();
        bb[t] = b.row(t).squaredNorm();
        ab[t] = a.row(t).dot(b.row(t));
    }
    for (Eigen::Index t = 0; t < T; ++t)
        for (Eigen::Index o = 0; o < O; ++o) {
            const Eigen::Index s = t - offsets[static_cast<size_t>(o)];
            if (s < 0) continue;
            Eigen::Vector2d th;
            // Gram route: both planes' bases from their 2 x 2 Gram matrices (R^T R, R upper
            // triangular), C = R_a^-T X R_b^-1 with X the four cross products: four dot products a
            // pair instead of two Gram-Schmidt bases in R^d. Taken when each plane's two vectors are
            // at least ~5.7 degrees apart (sin^2 >= 0.01: R^-1 magnifies the products' rounding at
            // most 10 times per plane, so C is within about 1e-13 of the explicit bases' C) and both
            // angles are at least 0.05 rad (acos then adds at most a factor 20: 1e-12 absolute);
            // otherwise the explicit bases below, with the sine part for small angles.
            const double ats = a.row(t).dot(a.row(s)), bts = b.row(t).dot(b.row(s));
            if (aa[t] > 0 && aa[s] > 0 && bb[t] > 0 && bb[s] > 0 && ats * ats <= 0.99 * aa[t] * aa[s] &&
                bts * bts <= 0.99 * bb[t] * bb[s]) {
                const double ra11 = std::sqrt(aa[t]), ra12 = ats / ra11, ra22 = std::sqrt(aa[s] - ra12 * ra12);
                const double rb11 = std::sqrt(bb[t]), rb12 = bts / rb11, rb22 = std::sqrt(bb[s] - rb12 * rb12);
                // X: rows a_t, a_s; columns b_t, b_s. Y = R_a^-T X (forward substitution), C = Y R_b^-1.
                const double x00 = ab[t], x01 = a.row(t).dot(b.row(s)), x10 = a.row(s).dot(b.row(t)), x11 = ab[s];
                const double y00 = x00 / ra11, y01 = x01 / ra11;
                const double y10 = (x10 - ra12 * y00) / ra22, y11 = (x11 - ra12 * y01) / ra22;
                Eigen::Matrix2d c;
                c(0, 0) = y00 / rb11;
                c(1, 0) = y10 / rb11;
                c(0, 1) = (y01 - rb12 * c(0, 0)) / rb22;
                c(1, 1) = (y11 - rb12 * c(1, 0)) / rb22;
                if (detail::planeAnglesFromCosines(c, th)) {
                    out.angles(t, 2 * o) = th[0];
                    out.angles(t, 2 * o + 1) = th[1];
                    continue;
                }
            }
            if (!basis(a.row(t), a.row(s), qa) || !basis(b.row(t), b.row(s), qb)) {
                ++out.degenerate;
                continue;
            }
            const Eigen::Matrix2d c = qa.transpose() * qb;
            if (!detail::planeAnglesFromCosines(c, th)) {
                sine = qb;
                sine.noalias() -= qa * c;
                th = detail::planeAnglesFromParts(c, sine.col(0).data(), sine.col(1).data(), d);
            }
            out.angles(t, 2 * o) = th[0];
            out.angles(t, 2 * o + 1) = th[1];
        }
    return out;
}

} // namespace gwb::geometry
