#include "gwb/geometry/subspace.h"

#include "gwb/geometry/product.h"

#include "double_double.h"
#include "top_eigen.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>
#include <utility>

namespace gwb::geometry {

Basis orthonormalBasis(const Eigen::Ref<const Eigen::MatrixXd>& a, double relTol) {
    requireFinite(a, "orthonormalBasis");
    if (!(relTol >= 0)) throw std::invalid_argument("orthonormalBasis: rank tolerance must be >= 0");
    Basis out;
    out.requested = a.cols();
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    qr.setThreshold(relTol);
    // A zero matrix has no pivot to be relative to: rank 0.
    out.rank = qr.maxPivot() == 0 ? 0 : qr.rank();
    out.rankDeficient = out.rank < out.requested;
    out.q = qr.householderQ() * Eigen::MatrixXd::Identity(a.rows(), out.rank);
    return out;
}

Basis planeBasis(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v,
                 double relTol) {
    if (u.size() != v.size())
        throw std::invalid_argument("planeBasis: vectors have different lengths (" + std::to_string(u.size()) + " vs " +
                                    std::to_string(v.size()) + ")");
    if (u.size() < 2) throw std::invalid_argument("planeBasis: vectors need length >= 2");
    if (!u.allFinite() || !v.allFinite()) throw std::invalid_argument("planeBasis: input contains NaN or Inf");
    Basis out;
    out.requested = 2;
    const double nu = u.norm(), nv = v.norm();
    const bool uFirst = nu >= nv;
    const auto& a = uFirst ? u : v;
    const auto& b = uFirst ? v : u;
    const double na = std::max(nu, nv);
    if (na == 0) {
        out.q.resize(u.size(), 0);
        out.rankDeficient = true;
        return out;
    }
    Eigen::VectorXd q1 = a / na;
    // Classical Gram-Schmidt twice ("twice is enough") keeps q2 orthogonal to machine precision.
    Eigen::VectorXd w = b - q1.dot(b) * q1;
    w -= q1.dot(w) * q1;
    const double nw = w.norm();
    if (nw <= relTol * na) {
        out.rank = 1;
        out.rankDeficient = true;
        out.q = q1;
        return out;
    }
    out.rank = 2;
    out.q.resize(u.size(), 2);
    out.q.col(0) = q1;
    out.q.col(1) = w / nw;
    return out;
}

namespace {
// Singular values of a (n x k, k small) by one-sided Jacobi (Hestenes), ascending. Relatively
// accurate for column-graded matrices, which is what the sine matrix becomes after rotating Qb
// onto the principal vectors: a tiny sine is not swamped by a large one in the same pair.
Eigen::VectorXd oneSidedJacobiValues(Eigen::MatrixXd a) {
    const Eigen::Index k = a.cols();
    constexpr double tol = 1e-15;
    for (int sweep = 0; sweep < 60; ++sweep) {
        bool rotated = false;
        for (Eigen::Index p = 0; p < k; ++p)
            for (Eigen::Index q = p + 1; q < k; ++q) {
                const double alpha = a.col(p).squaredNorm(), beta = a.col(q).squaredNorm();
                const double gamma = a.col(p).dot(a.col(q));
                if (gamma == 0 || std::abs(gamma) <= tol * std::sqrt(alpha * beta)) continue;
                rotated = true;
                const double zeta = (beta - alpha) / (2 * gamma);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
                const double c = 1 / std::sqrt(1 + t * t), s = c * t;
                const Eigen::VectorXd ap = a.col(p);
                a.col(p) = c * ap - s * a.col(q);
                a.col(q) = s * ap + c * a.col(q);
            }
        if (!rotated) break;
    }
    Eigen::VectorXd sv = a.colwise().norm().transpose();
    std::sort(sv.data(), sv.data() + sv.size());
    return sv;
}
} // namespace

Eigen::VectorXd principalAnglesOrthonormal(const Eigen::Ref<const Eigen::MatrixXd>& qaIn,
                                           const Eigen::Ref<const Eigen::MatrixXd>& qbIn) {
    requireFinite(qaIn, "principalAngles (first basis)");
    requireFinite(qbIn, "principalAngles (second basis)");
    if (qaIn.rows() != qbIn.rows())
        throw std::invalid_argument("principalAngles: bases live in different dimensions (" +
                                    std::to_string(qaIn.rows()) + " vs " + std::to_string(qbIn.rows()) + ")");
    // Angles are symmetric; let qa be the larger subspace so the sine matrix has min(ka, kb) columns.
    const bool swap = qaIn.cols() < qbIn.cols();
    const auto& qa = swap ? qbIn : qaIn;
    const auto& qb = swap ? qaIn : qbIn;
    const Eigen::Index k = qb.cols();
    const Eigen::MatrixXd c = qa.transpose() * qb;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(c, Eigen::ComputeThinV);
    const Eigen::VectorXd cosines = svd.singularValues(); // descending, k values
    // Rotate Qb onto its principal vectors so that column i of the sine matrix has norm sin th_i.
    const Eigen::MatrixXd qbr = qb * svd.matrixV();
    const Eigen::MatrixXd sineMatrix = qbr - qa * (qa.transpose() * qbr);
    const Eigen::VectorXd sines = oneSidedJacobiValues(sineMatrix); // ascending
    Eigen::VectorXd th(k);
    for (Eigen::Index i = 0; i < k; ++i) {
        const double s = std::min(sines[i], 1.0), co = std::min(cosines[i], 1.0);
        th[i] = s * s <= 0.5 ? std::asin(s) : std::acos(co);
    }
    std::sort(th.data(), th.data() + k);
    return th;
}

namespace {
using detail::DD;
using DDColumns = std::vector<std::vector<DD>>; // column-major: cols[j][i]

DD dot(const std::vector<DD>& a, const std::vector<DD>& b) {
    DD s;
    for (size_t i = 0; i < a.size(); ++i)
        s = s + a[i] * b[i];
    return s;
}

// Orthonormal basis of the given columns (already known to be independent) in double-double:
// modified Gram-Schmidt, twice.
DDColumns orthonormalizeDD(const Eigen::MatrixXd& a) {
    DDColumns q;
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
        std::vector<DD> v(static_cast<size_t>(a.rows()));
        for (Eigen::Index i = 0; i < a.rows(); ++i)
            v[static_cast<size_t>(i)] = DD{a(i, j), 0};
        for (int pass = 0; pass < 2; ++pass)
            for (const auto& qi : q) {
                const DD h = dot(qi, v);
                for (size_t i = 0; i < v.size(); ++i)
                    v[i] = v[i] - h * qi[i];
            }
        const DD norm = detail::sqrt(dot(v, v));
        for (auto& x : v)
            x = x / norm;
        q.push_back(std::move(v));
    }
    return q;
}

// The independent columns chosen by pivoted QR (its first `rank` pivots).
Eigen::MatrixXd pivotColumns(const Eigen::Ref<const Eigen::MatrixXd>& a, double relTol, Basis& info) {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    qr.setThreshold(relTol);
    info.requested = a.cols();
    info.rank = qr.maxPivot() == 0 ? 0 : qr.rank();
    info.rankDeficient = info.rank < info.requested;
    Eigen::MatrixXd cols(a.rows(), info.rank);
    for (Eigen::Index j = 0; j < info.rank; ++j)
        cols.col(j) = a.col(qr.colsPermutation().indices()[j]);
    return cols;
}
} // namespace

PrincipalAngles principalAngles(const Eigen::Ref<const Eigen::MatrixXd>& a, const Eigen::Ref<const Eigen::MatrixXd>& b,
                                double relTol) {
    requireFinite(a, "principalAngles (first input)");
    requireFinite(b, "principalAngles (second input)");
    if (a.rows() != b.rows())
        throw std::invalid_argument("principalAngles: inputs live in different dimensions (" +
                                    std::to_string(a.rows()) + " vs " + std::to_string(b.rows()) + ")");
    Basis ia, ib;
    const Eigen::MatrixXd ca = pivotColumns(a, relTol, ia), cb = pivotColumns(b, relTol, ib);
    if (ia.rank == 0 || ib.rank == 0)
        throw std::invalid_argument("principalAngles: an input has rank 0 (all columns zero)");
    PrincipalAngles out;
    out.rankA = ia.rank;
    out.rankB = ib.rank;
    out.rankDeficient = ia.rankDeficient || ib.rankDeficient;
    // The inputs are taken as exact. Orthonormal bases and the sine matrix are formed in
    // double-double, so rounding there (~1e-16 absolute) does not swamp angles near 1e-12;
    // the SVDs then run in double on well-scaled matrices (see principalAnglesOrthonormal).
    const bool swap = ca.cols() < cb.cols();
    const DDColumns qa = orthonormalizeDD(swap ? cb : ca), qb = orthonormalizeDD(swap ? ca : cb);
    const auto ka = static_cast<Eigen::Index>(qa.size()), k = static_cast<Eigen::Index>(qb.size());
    const auto n = static_cast<size_t>(a.rows());
    Eigen::MatrixXd c(ka, k);
    for (Eigen::Index i = 0; i < ka; ++i)
        for (Eigen::Index j = 0; j < k; ++j)
            c(i, j) = dot(qa[static_cast<size_t>(i)], qb[static_cast<size_t>(j)]).hi;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(c, Eigen::ComputeThinV);
    const Eigen::VectorXd cosines = svd.singularValues();
    const Eigen::MatrixXd& v = svd.matrixV();
    // Qb rotated onto its principal vectors, then its residual against span(Qa), all in double-double.
    Eigen::MatrixXd sineMatrix(static_cast<Eigen::Index>(n), k);
    for (Eigen::Index j = 0; j < k; ++j) {
        std::vector<DD> col(n);
        for (Eigen::Index m = 0; m < k; ++m) {
            const DD w{v(m, j), 0};
            for (size_t i = 0; i < n; ++i)
                col[i] = col[i] + qb[static_cast<size_t>(m)][i] * w;
        }
        for (int pass = 0; pass < 2; ++pass) // second pass removes what rounding of the first left
            for (const auto& qi : qa) {
                const DD h = dot(qi, col);
                for (size_t i = 0; i < n; ++i)
                    col[i] = col[i] - h * qi[i];
            }
        for (size_t i = 0; i < n; ++i)
            sineMatrix(static_cast<Eigen::Index>(i), j) = col[i].hi + col[i].lo;
    }
    const Eigen::VectorXd sines = oneSidedJacobiValues(sineMatrix);
    out.angles.resize(k);
    for (Eigen::Index i = 0; i < k; ++i) {
        const double s = std::min(sines[i], 1.0), co = std::min(cosines[i], 1.0);
        out.angles[i] = s * s <= 0.5 ? std::asin(s) : std::acos(co);
    }
    std::sort(out.angles.data(), out.angles.data() + k);
    return out;
}

double geodesicDistance(const Eigen::Ref<const Eigen::VectorXd>& angles) {
    return angles.norm();
}

double chordalDistance(const Eigen::Ref<const Eigen::VectorXd>& angles) {
    return angles.array().sin().matrix().norm();
}

double projectionDistance(const Eigen::Ref<const Eigen::VectorXd>& angles) {
    return angles.size() == 0 ? 0.0 : angles.array().sin().maxCoeff();
}

namespace {
/// How many of the k largest eigenvalues (`top`, largest first) are above tol^2 of the largest.
int64_t topRank(const Eigen::VectorXd& top, int64_t k, double relTol) {
    // Squared singular values carry ~1e-16 relative noise, so ranks are resolved only to ~1e-7.
    const double tol = std::max(relTol, 1e-7);
    const double lamMax = top.size() > 0 ? std::max(top[0], 0.0) : 0.0;
    int64_t rank = 0;
    for (Eigen::Index i = 0; i < top.size() && i < k; ++i)
        if (lamMax > 0 && top[i] > tol * tol * lamMax) ++rank;
    return rank;
}
} // namespace

Basis principalSubspace(const Eigen::Ref<const RowMatrixXd>& x, int64_t k, bool center, double relTol) {
    requireFiniteRows(x, "principalSubspace");
    if (k < 1) throw std::invalid_argument("principalSubspace: k must be >= 1, got " + std::to_string(k));
    const Eigen::Index d = x.cols();
    if (k > d)
        throw std::invalid_argument("principalSubspace: k = " + std::to_string(k) + " exceeds the dimension " +
                                    std::to_string(d));
    RowMatrixXd xc = x;
    if (center) xc.rowwise() -= x.colwise().mean();
    const Eigen::Index T = xc.rows();
    // Gram route when there are fewer points than dimensions (a 256-token prompt of a d = 640
    // model): the eigenvectors u_i of X X^T (T x T) give the right singular vectors
    // v_i = X^T u_i / s_i, with the same eigenvalues s_i^2, at (T/d)^3 of the cost. Otherwise the
    // covariance route: the eigenvectors of X^T X are the right singular vectors.
    const bool gram = T < d;
    const Eigen::Index n = gram ? T : d;
    // X X^T or X^T X through the vector kernels of product.h (A B^T with B = A: both triangles,
    // symmetric to the bit since each entry adds the same products in the same order).
    const RowMatrixXd rows = gram ? xc : RowMatrixXd(xc.transpose()); // n x (the other side)
    const Eigen::MatrixXd m = multiplyTransposed(rows, rows);
    // Only the top k eigenvectors are needed: inverse iteration on the tridiagonal form (top_eigen.h).
    const detail::TopEigen eig = detail::topEigen(m, std::min<Eigen::Index>(k, n));
    Basis out;
    out.requested = k;
    out.rank = topRank(eig.values, k, relTol);
    out.rankDeficient = out.rank < k;
    out.q.resize(d, out.rank);
    for (int64_t i = 0; i < out.rank; ++i) {
        if (!gram) {
            out.q.col(i) = eig.vectors.col(i);
            continue;
        }
        Eigen::VectorXd v = xc.transpose() * eig.vectors.col(i);
        // Orthogonal to the earlier ones to rounding (twice: modified Gram-Schmidt), then unit length.
        for (int pass = 0; pass < 2; ++pass)
            for (int64_t j = 0; j < i; ++j)
                v -= out.q.col(j).dot(v) * out.q.col(j);
        out.q.col(i) = v.normalized();
    }
    return out;
}

Basis rowSpace(const Eigen::Ref<const RowMatrixXd>& m, double relTol) {
    requireFiniteRows(m, "rowSpace");
    return orthonormalBasis(m.transpose(), relTol);
}

PlaneLifter::PlaneLifter(const Eigen::Ref<const RowMatrixXd>& wRed, double relTol) {
    requireFiniteRows(wRed, "PlaneLifter (W_red)");
    m_wRows = wRed.rows();
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(Eigen::MatrixXd(wRed), Eigen::ComputeThinU | Eigen::ComputeThinV);
    const Eigen::VectorXd& s = svd.singularValues();
    const double cut = relTol * (s.size() ? s[0] : 0.0);
    Eigen::VectorXd inv = Eigen::VectorXd::Zero(s.size());
    for (Eigen::Index i = 0; i < s.size(); ++i)
        if (s[i] > cut && s[i] > 0) {
            inv[i] = 1 / s[i];
            ++m_rank;
        }
    m_pinv = svd.matrixV() * inv.asDiagonal() * svd.matrixU().transpose();
}

PlaneLifter::PlaneLifter(Eigen::MatrixXd pinv, int64_t rank, int64_t wRows)
    : m_pinv(std::move(pinv)), m_rank(rank), m_wRows(wRows) {
    if (m_pinv.cols() != wRows || rank < 0 || rank > wRows)
        throw std::invalid_argument("PlaneLifter: a pseudo-inverse of " + std::to_string(m_pinv.rows()) + " x " +
                                    std::to_string(m_pinv.cols()) + " does not fit r = " + std::to_string(wRows) +
                                    " and rank " + std::to_string(rank));
}

RowMatrixXd PlaneLifter::liftRows(const Eigen::Ref<const RowMatrixXd>& z) const {
    if (z.cols() != m_pinv.cols())
        throw std::invalid_argument("PlaneLifter::liftRows: rows have length " + std::to_string(z.cols()) +
                                    ", W_red has " + std::to_string(m_pinv.cols()) + " rows");
    return z * m_pinv.transpose();
}

Basis PlaneLifter::liftPlane(const Eigen::Ref<const Eigen::VectorXd>& z1,
                             const Eigen::Ref<const Eigen::VectorXd>& z2) const {
    if (z1.size() != m_pinv.cols() || z2.size() != m_pinv.cols())
        throw std::invalid_argument("PlaneLifter::liftPlane: vectors must have length r = " +
                                    std::to_string(m_pinv.cols()));
    return planeBasis(m_pinv * z1, m_pinv * z2);
}

} // namespace gwb::geometry
