// The top eigenpairs by bisection and tridiagonal inverse iteration (geometry/src/top_eigen.h)
// against Eigen's full solver: the same eigenvalues, the same top subspaces, and the full solver only where the
// iteration cannot certify its vectors. principalSubspace uses it on both of its routes.
#include "../../geometry/src/top_eigen.h"

#include "gwb/geometry/subspace.h"
#include "test_util.h"

#include <Eigen/Eigenvalues>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace gwb::geometry;

namespace {

Eigen::MatrixXd randomGaussian(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> normal;
    Eigen::MatrixXd m(rows, cols);
    for (Eigen::Index i = 0; i < rows; ++i)
        for (Eigen::Index j = 0; j < cols; ++j)
            m(i, j) = normal(rng);
    return m;
}

/// Q diag(spectrum) Q^T with a random orthogonal Q.
Eigen::MatrixXd withSpectrum(const Eigen::VectorXd& spectrum, unsigned seed) {
    const Eigen::MatrixXd q =
        Eigen::HouseholderQR<Eigen::MatrixXd>(randomGaussian(spectrum.size(), spectrum.size(), seed)).householderQ();
    return q * spectrum.asDiagonal() * q.transpose();
}

/// Sine of the largest principal angle between the spans of two orthonormal n x k bases (from
/// the part of b outside span(a): accurate for small angles, where acos of a cosine is not).
double largestAngle(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
    const Eigen::MatrixXd outside = b - a * (a.transpose() * b);
    return Eigen::JacobiSVD<Eigen::MatrixXd>(outside).singularValues().maxCoeff();
}

} // namespace

TEST(TopEigen, TheTopSubspacesAndEigenvaluesAreTheFullSolvers) {
    std::vector<std::pair<std::string, Eigen::MatrixXd>> cases;
    const Eigen::MatrixXd g = randomGaussian(300, 120, 1);
    cases.emplace_back("covariance 120", g.transpose() * g);
    const Eigen::MatrixXd w = randomGaussian(40, 640, 2);
    cases.emplace_back("gram 40 (rank 40 of 640 columns)", w * w.transpose());
    Eigen::VectorXd spread = Eigen::VectorXd::LinSpaced(90, 0.0, 1.0).array().square();
    cases.emplace_back("spread spectrum", withSpectrum(spread, 3));
    Eigen::VectorXd pair = spread;
    pair[89] = pair[88] = 2.0; // a repeated top pair, separated from the rest
    cases.emplace_back("repeated top pair", withSpectrum(pair, 4));
    Eigen::VectorXd lowRank = Eigen::VectorXd::Zero(70);
    lowRank.tail(3) << 1.0, 2.0, 3.0; // rank 3
    cases.emplace_back("rank 3", withSpectrum(lowRank, 5));
    Eigen::VectorXd negative = Eigen::VectorXd::LinSpaced(50, -3.0, 1.0); // indefinite
    cases.emplace_back("indefinite", withSpectrum(negative, 6));
    int iterated = 0;
    for (const auto& [name, m] : cases) {
        SCOPED_TRACE(name);
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ref(m);
        const Eigen::Index n = m.rows();
        for (Eigen::Index k : {Eigen::Index{1}, Eigen::Index{2}, Eigen::Index{4}}) {
            const detail::TopEigen top = detail::topEigen(m, k);
            iterated += !top.fullSolver;
            ASSERT_EQ(top.values.size(), k);
            for (Eigen::Index j = 0; j < k; ++j)
                EXPECT_LE(std::abs(top.values[j] - ref.eigenvalues()[n - 1 - j]),
                          1e-12 * ref.eigenvalues().cwiseAbs().maxCoeff())
                    << j;
            EXPECT_LE(std::abs(top.smallest - ref.eigenvalues()[0]), 1e-12 * ref.eigenvalues().cwiseAbs().maxCoeff());
            ASSERT_EQ(top.vectors.cols(), k);
            EXPECT_LE((top.vectors.transpose() * top.vectors - Eigen::MatrixXd::Identity(k, k)).norm(), 1e-12);
            // Each vector is an eigenvector: ||M v - lambda v|| small against ||M||.
            for (Eigen::Index j = 0; j < k; ++j)
                EXPECT_LE((m * top.vectors.col(j) - top.values[j] * top.vectors.col(j)).norm(),
                          1e-10 * ref.eigenvalues().cwiseAbs().maxCoeff())
                    << j;
            // The subspace is the full solver's wherever it is defined (a gap after the k-th).
            const double gap = ref.eigenvalues()[n - k] - ref.eigenvalues()[n - k - 1];
            if (gap > 1e-6 * ref.eigenvalues().cwiseAbs().maxCoeff()) {
                EXPECT_LE(largestAngle(top.vectors, ref.eigenvectors().rightCols(k)), 1e-10) << k;
            }
        }
    }
    EXPECT_GE(iterated, 12) << "the inverse iteration, not the fallback, gives most of them";
}

TEST(TopEigen, PrincipalSubspacesOnBothRoutesAtTheModelsSizes) {
    // 256 tokens of a d = 640 model (the Gram route) and 1024 (the covariance route), centred.
    for (Eigen::Index T : {Eigen::Index{256}, Eigen::Index{1024}}) {
        RowMatrixXd x = randomGaussian(T, 640, 7 + static_cast<unsigned>(T));
        x.col(3) *= 9.0; // a few directions with more variance
        x.col(10) *= 6.0;
        x.col(77) *= 4.0;
        x.col(200) *= 3.0;
        const Basis b = principalSubspace(x, 4, true);
        ASSERT_EQ(b.rank, 4);
        RowMatrixXd xc = x;
        xc.rowwise() -= x.colwise().mean();
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> ref(xc.transpose() * xc);
        EXPECT_LE(largestAngle(b.q, ref.eigenvectors().rightCols(4)), 1e-10) << T;
    }
}
