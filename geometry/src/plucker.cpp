#include "gwb/geometry/plucker.h"

#include <cmath>
#include <stdexcept>

namespace gwb::geometry {

int64_t pairCount(int64_t n) {
    if (n < 0) throw std::invalid_argument("pairCount: negative dimension " + std::to_string(n));
    return n * (n - 1) / 2;
}

int64_t pairIndex(int64_t i, int64_t j, int64_t n) {
    if (!(0 <= i && i < j && j < n))
        throw std::out_of_range("pairIndex: need 0 <= i < j < n, got (" + std::to_string(i) + ", " + std::to_string(j) +
                                ") for n = " + std::to_string(n));
    // Pairs starting with 0..i-1 come first: sum_{a<i} (n-1-a) = i (2n - i - 1) / 2.
    return i * (2 * n - i - 1) / 2 + (j - i - 1);
}

std::pair<int64_t, int64_t> pairFromIndex(int64_t k, int64_t n) {
    if (k < 0 || k >= pairCount(n))
        throw std::out_of_range("pairFromIndex: index " + std::to_string(k) +
                                " out of range for n = " + std::to_string(n));
    int64_t i = 0, rowLen = n - 1;
    while (k >= rowLen) {
        k -= rowLen;
        ++i;
        --rowLen;
    }
    return {i, i + 1 + k};
}

int64_t dimensionFromPairCount(int64_t m) {
    if (m < 1) throw std::invalid_argument("bivector: need at least one coordinate, got " + std::to_string(m));
    const auto n = static_cast<int64_t>(std::llround((1.0 + std::sqrt(1.0 + 8.0 * static_cast<double>(m))) / 2.0));
    if (pairCount(n) != m)
        throw std::invalid_argument("bivector: " + std::to_string(m) + " coordinates is not C(n,2) for any n");
    return n;
}

PairTable::PairTable(int64_t dim) : n(dim) {
    if (dim < 2) throw std::invalid_argument("PairTable: dimension must be >= 2, got " + std::to_string(dim));
    first.reserve(static_cast<size_t>(pairCount(dim)));
    second.reserve(static_cast<size_t>(pairCount(dim)));
    for (int i = 0; i < dim; ++i)
        for (int j = i + 1; j < dim; ++j) {
            first.push_back(i);
            second.push_back(j);
        }
}

namespace {
void checkPair(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v,
               const char* what) {
    if (u.size() != v.size())
        throw std::invalid_argument(std::string(what) + ": vectors have different lengths (" +
                                    std::to_string(u.size()) + " vs " + std::to_string(v.size()) + ")");
    if (u.size() < 2) throw std::invalid_argument(std::string(what) + ": vectors need length >= 2");
    if (!u.allFinite() || !v.allFinite())
        throw std::invalid_argument(std::string(what) + ": input contains NaN or Inf");
}
} // namespace

Eigen::VectorXd wedge(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v) {
    checkPair(u, v, "wedge");
    const Eigen::Index n = u.size();
    Eigen::VectorXd p(pairCount(n));
    Eigen::Index k = 0;
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = i + 1; j < n; ++j)
            p[k++] = u[i] * v[j] - u[j] * v[i];
    return p;
}

NormalizedPlane normalizedWedge(const Eigen::Ref<const Eigen::VectorXd>& u, const Eigen::Ref<const Eigen::VectorXd>& v,
                                double eps) {
    if (!(eps > 0)) throw std::invalid_argument("normalizedWedge: eps must be positive");
    NormalizedPlane out;
    out.p = wedge(u, v);
    out.norm = out.p.norm();
    out.degenerate = out.norm <= eps;
    out.p /= std::max(out.norm, eps);
    return out;
}

Eigen::VectorXd pluckerCoordinates(const Eigen::Ref<const Eigen::MatrixXd>& basis) {
    requireFinite(basis, "pluckerCoordinates");
    const Eigen::Index n = basis.rows(), k = basis.cols();
    if (k < 1 || k > n)
        throw std::invalid_argument("pluckerCoordinates: need 1 <= k <= n, got k = " + std::to_string(k) +
                                    ", n = " + std::to_string(n));
    if (k == 2) return wedge(basis.col(0), basis.col(1));
    std::vector<Eigen::Index> idx(static_cast<size_t>(k));
    for (Eigen::Index a = 0; a < k; ++a)
        idx[a] = a;
    std::vector<double> out;
    Eigen::MatrixXd sub(k, k);
    while (true) {
        for (Eigen::Index a = 0; a < k; ++a)
            sub.row(a) = basis.row(idx[a]);
        out.push_back(sub.determinant());
        // Next subset in lexicographic order.
        Eigen::Index a = k - 1;
        while (a >= 0 && idx[a] == n - k + a)
            --a;
        if (a < 0) break;
        ++idx[a];
        for (Eigen::Index b = a + 1; b < k; ++b)
            idx[b] = idx[b - 1] + 1;
    }
    return Eigen::Map<Eigen::VectorXd>(out.data(), static_cast<Eigen::Index>(out.size()));
}

RowMatrixXd bivectorToMatrix(const Eigen::Ref<const Eigen::VectorXd>& b) {
    const int64_t n = dimensionFromPairCount(b.size());
    RowMatrixXd m = RowMatrixXd::Zero(n, n);
    Eigen::Index k = 0;
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = i + 1; j < n; ++j, ++k) {
            m(i, j) = b[k];
            m(j, i) = -b[k];
        }
    return m;
}

Eigen::VectorXd matrixToBivector(const Eigen::Ref<const RowMatrixXd>& m) {
    if (m.rows() != m.cols() || m.rows() < 2)
        throw std::invalid_argument("matrixToBivector: need a square matrix of size >= 2");
    const Eigen::Index n = m.rows();
    Eigen::VectorXd b(pairCount(n));
    Eigen::Index k = 0;
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = i + 1; j < n; ++j)
            b[k++] = m(i, j);
    return b;
}

} // namespace gwb::geometry
