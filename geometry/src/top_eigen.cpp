// Top eigenpairs of a symmetric matrix by tridiagonal inverse iteration (top_eigen.h).
#include "top_eigen.h"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace gwb::geometry::detail {
namespace {

/// (T - sigma I) factored by Gaussian elimination with partial pivoting (T tridiagonal: diagonal a,
/// off-diagonal e), as LAPACK's dgttrf; solve() as dgtts2. Zero pivots become `tiny`.
class TridiagonalLu {
public:
    TridiagonalLu(const Eigen::VectorXd& a, const Eigen::VectorXd& e, double sigma, double tiny)
        : m_n(a.size()), m_d(a.array() - sigma), m_dl(e), m_du(e),
          m_du2(Eigen::VectorXd::Zero(std::max<Eigen::Index>(m_n - 2, 0))),
          m_swap(static_cast<size_t>(std::max<Eigen::Index>(m_n - 1, 0)), false) {
        for (Eigen::Index i = 0; i + 1 < m_n; ++i) {
            if (std::abs(m_d[i]) >= std::abs(m_dl[i])) {
                if (m_d[i] == 0) m_d[i] = tiny;
                const double l = m_dl[i] / m_d[i];
                m_dl[i] = l;
                m_d[i + 1] -= l * m_du[i];
            } else { // rows i and i + 1 swapped
                const double l = m_d[i] / m_dl[i];
                m_d[i] = m_dl[i];
                m_dl[i] = l;
                const double t = m_du[i];
                m_du[i] = m_d[i + 1];
                m_d[i + 1] = t - l * m_d[i + 1];
                if (i + 2 < m_n) {
                    m_du2[i] = m_du[i + 1];
                    m_du[i + 1] = -l * m_du[i + 1];
                }
                m_swap[static_cast<size_t>(i)] = true;
            }
        }
        if (m_n > 0 && m_d[m_n - 1] == 0) m_d[m_n - 1] = tiny;
    }

    void solve(Eigen::VectorXd& y) const {
        for (Eigen::Index i = 0; i + 1 < m_n; ++i) {
            if (m_swap[static_cast<size_t>(i)]) std::swap(y[i], y[i + 1]);
            y[i + 1] -= m_dl[i] * y[i];
        }
        for (Eigen::Index i = m_n - 1; i >= 0; --i) {
            double v = y[i];
            if (i + 1 < m_n) v -= m_du[i] * y[i + 1];
            if (i + 2 < m_n) v -= m_du2[i] * y[i + 2];
            y[i] = v / m_d[i];
        }
    }

private:
    Eigen::Index m_n;
    Eigen::VectorXd m_d, m_dl, m_du, m_du2;
    std::vector<bool> m_swap;
};

TopEigen full(const Eigen::MatrixXd& m, Eigen::Index k) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(m.selfadjointView<Eigen::Lower>());
    TopEigen out;
    out.fullSolver = true;
    const Eigen::Index n = m.rows();
    out.values.resize(k);
    out.vectors.resize(n, k);
    for (Eigen::Index i = 0; i < k; ++i) {
        out.values[i] = eig.eigenvalues()[n - 1 - i];
        out.vectors.col(i) = eig.eigenvectors().col(n - 1 - i);
    }
    out.smallest = n > 0 ? eig.eigenvalues()[0] : 0.0;
    return out;
}

/// Eigenvalues number `index[q]` (0 = the smallest) of the symmetric tridiagonal matrix (diagonal
/// a, off-diagonal e) by bisection on Sturm counts (LAPACK's dstebz scheme), all of them in
/// lockstep so that their recurrences overlap: each to within 4 ulps of the spectrum's scale,
/// about as accurate as the QR sweeps and O(n) an eigenvalue and step instead of O(n^2).
Eigen::VectorXd bisectEigenvalues(const Eigen::VectorXd& a, const Eigen::VectorXd& e,
                                  const std::vector<Eigen::Index>& index) {
    const Eigen::Index n = a.size();
    Eigen::VectorXd e2 = e.array().square();
    // Gershgorin interval of the spectrum.
    double lo = a[0], hi = a[0];
    for (Eigen::Index i = 0; i < n; ++i) {
        const double r = (i > 0 ? std::abs(e[i - 1]) : 0.0) + (i + 1 < n ? std::abs(e[i]) : 0.0);
        lo = std::min(lo, a[i] - r);
        hi = std::max(hi, a[i] + r);
    }
    const double eps = std::numeric_limits<double>::epsilon();
    const double scale = std::max(std::abs(lo), std::abs(hi));
    const double pivmin = std::numeric_limits<double>::min() * std::max(1.0, e2.size() ? e2.maxCoeff() : 0.0);
    const double tol = 4 * eps * scale;
    lo -= tol;
    hi += tol;
    const size_t m = index.size();
    std::vector<double> left(m, lo), right(m, hi), q(m), x(m);
    std::vector<Eigen::Index> below(m);
    for (int step = 0; step < 200; ++step) {
        bool done = true;
        for (size_t j = 0; j < m; ++j) {
            x[j] = 0.5 * (left[j] + right[j]);
            done = done && right[j] - left[j] <= tol;
        }
        if (done) break;
        // Sturm counts: the number of eigenvalues below x is the number of negative pivots of
        // T - x I (a zero pivot taken as -pivmin).
        for (size_t j = 0; j < m; ++j) {
            q[j] = a[0] - x[j];
            if (std::abs(q[j]) < pivmin) q[j] = -pivmin;
            below[j] = q[j] < 0;
        }
        for (Eigen::Index i = 1; i < n; ++i)
            for (size_t j = 0; j < m; ++j) {
                double v = a[i] - x[j] - e2[i - 1] / q[j];
                if (std::abs(v) < pivmin) v = -pivmin;
                q[j] = v;
                below[j] += v < 0;
            }
        for (size_t j = 0; j < m; ++j) {
            if (right[j] - left[j] <= tol) continue;
            if (below[j] > index[j])
                right[j] = x[j];
            else
                left[j] = x[j];
        }
    }
    Eigen::VectorXd out(static_cast<Eigen::Index>(m));
    for (size_t j = 0; j < m; ++j)
        out[static_cast<Eigen::Index>(j)] = 0.5 * (left[j] + right[j]);
    return out;
}

} // namespace

TopEigen topEigen(const Eigen::MatrixXd& m, Eigen::Index k) {
    const Eigen::Index n = m.rows();
    const double scale = n > 0 ? m.triangularView<Eigen::Lower>().toDenseMatrix().cwiseAbs().maxCoeff() : 0.0;
    if (n < 3 || !(scale > 0) || !std::isfinite(scale)) return full(m, k);
    Eigen::MatrixXd s = m.selfadjointView<Eigen::Lower>();
    s /= scale;
    Eigen::Tridiagonalization<Eigen::MatrixXd> tri(s);
    const Eigen::VectorXd a = tri.diagonal(), e = tri.subDiagonal();
    // Only the k largest eigenvalues and the smallest (for the spectrum's scale) are needed.
    std::vector<Eigen::Index> wanted;
    for (Eigen::Index j = 0; j < k; ++j)
        wanted.push_back(n - 1 - j);
    wanted.push_back(0);
    const Eigen::VectorXd lam = bisectEigenvalues(a, e, wanted); // the k largest (largest first), the smallest
    TopEigen out;
    out.values = lam.head(k) * scale;
    out.smallest = lam[k] * scale;
    const double norm = std::max(std::abs(lam[k]), std::abs(lam[0])); // lam[0]: the largest (k >= 1)
    const double eps = std::numeric_limits<double>::epsilon();
    Eigen::MatrixXd x(n, k); // in the tridiagonal basis
    Eigen::VectorXd y(n);
    for (Eigen::Index j = 0; j < k; ++j) {
        const double mu = lam[j];
        // A shift a few ulps off the eigenvalue: the factorisation is nearly singular along its
        // eigenvector, which is what inverse iteration amplifies.
        const TridiagonalLu lu(a, e, mu + 4 * eps * norm, eps * norm);
        for (Eigen::Index i = 0; i < n; ++i) // a fixed start with no special direction
            y[i] = 1.0 + 0.5 * std::sin(1.0 + 2.0 * static_cast<double>(i) + 0.7 * static_cast<double>(j));
        bool certified = false;
        for (int it = 0; it < 6 && !certified; ++it) {
            for (Eigen::Index p = 0; p < j; ++p) // orthogonal to the vectors before it (clusters)
                y -= x.col(p).dot(y) * x.col(p);
            const double len = y.norm();
            if (!(len > 0) || !std::isfinite(len)) break;
            y /= len;
            Eigen::VectorXd v = y;
            lu.solve(v);
            for (Eigen::Index p = 0; p < j; ++p)
                v -= x.col(p).dot(v) * x.col(p);
            const double vlen = v.norm();
            if (!(vlen > 0) || !std::isfinite(vlen)) break;
            y = v / vlen;
            double r2 = 0; // ||T y - mu y||
            for (Eigen::Index i = 0; i < n; ++i) {
                double t = (a[i] - mu) * y[i];
                if (i > 0) t += e[i - 1] * y[i - 1];
                if (i + 1 < n) t += e[i] * y[i + 1];
                r2 += t * t;
            }
            certified = std::sqrt(r2) <= 1e-12 * norm;
        }
        if (!certified) return full(m, k);
        x.col(j) = y;
    }
    out.vectors = tri.matrixQ() * x;
    for (Eigen::Index j = 0; j < k; ++j)
        out.vectors.col(j).normalize();
    return out;
}

} // namespace gwb::geometry::detail
