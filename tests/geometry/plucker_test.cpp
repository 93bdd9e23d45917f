#include "gwb/geometry/plucker.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::geometry;
using gwb::geometry::test::randomMatrix;
using gwb::geometry::test::randomVector;

TEST(Plucker, PairIndexRoundTripsInLexicographicOrder) {
    for (int64_t n : {2, 3, 7, 32}) {
        int64_t k = 0;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = i + 1; j < n; ++j, ++k) {
                EXPECT_EQ(pairIndex(i, j, n), k);
                EXPECT_EQ(pairFromIndex(k, n), std::make_pair(i, j));
            }
        EXPECT_EQ(k, pairCount(n));
        EXPECT_EQ(dimensionFromPairCount(pairCount(n)), n);
    }
    EXPECT_EQ(pairCount(32), 496);
    const PairTable table(32);
    EXPECT_EQ(table.first[31], 1);
    EXPECT_EQ(table.second[31], 2);
}

TEST(Plucker, WedgeNormIdentity) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        const Eigen::VectorXd u = randomVector(32, seed), v = randomVector(32, seed + 100);
        const double lhs = wedge(u, v).squaredNorm();
        const double rhs = u.squaredNorm() * v.squaredNorm() - std::pow(u.dot(v), 2);
        EXPECT_NEAR(lhs, rhs, 1e-12 * u.squaredNorm() * v.squaredNorm());
    }
}

TEST(Plucker, WedgeIsAntisymmetricAndMatchesDefinition) {
    const Eigen::VectorXd u = randomVector(6, 3), v = randomVector(6, 4);
    const Eigen::VectorXd p = wedge(u, v), q = wedge(v, u);
    EXPECT_LE((p + q).norm(), 1e-15);
    EXPECT_DOUBLE_EQ(p[pairIndex(1, 4, 6)], u[1] * v[4] - u[4] * v[1]);
    EXPECT_LE(wedge(u, u).norm(), 0.0);
}

TEST(Plucker, NormalizedVectorInvariantUpToSignUnderChangeOfBasis) {
    const Eigen::VectorXd u = randomVector(10, 7), v = randomVector(10, 8);
    const Eigen::VectorXd p = normalizedWedge(u, v).p;
    const Eigen::Matrix2d g = randomMatrix(2, 2, 9); // invertible with probability 1
    const Eigen::VectorXd u2 = g(0, 0) * u + g(1, 0) * v, v2 = g(0, 1) * u + g(1, 1) * v;
    const Eigen::VectorXd q = normalizedWedge(u2, v2).p;
    EXPECT_NEAR(std::abs(p.dot(q)), 1.0, 1e-13);
    EXPECT_LE(std::min((p - q).norm(), (p + q).norm()), 1e-12);
    EXPECT_EQ(g.determinant() > 0, p.dot(q) > 0); // sign follows the orientation
}

TEST(Plucker, DegeneratePlanesAreFlagged) {
    const Eigen::VectorXd u = randomVector(5, 11);
    const NormalizedPlane par = normalizedWedge(u, 3.0 * u);
    EXPECT_TRUE(par.degenerate);
    EXPECT_LE(par.p.norm(), 1e-6);
    const NormalizedPlane zero = normalizedWedge(Eigen::VectorXd::Zero(5), u);
    EXPECT_TRUE(zero.degenerate);
    EXPECT_EQ(zero.p.norm(), 0.0);
    EXPECT_FALSE(normalizedWedge(u, randomVector(5, 12)).degenerate);
}

TEST(Plucker, KPlaneMinors) {
    const Eigen::MatrixXd a = randomMatrix(6, 2, 13);
    EXPECT_LE((pluckerCoordinates(a) - wedge(a.col(0), a.col(1))).norm(), 1e-15);
    const Eigen::MatrixXd b = randomMatrix(5, 3, 14);
    const Eigen::VectorXd p = pluckerCoordinates(b);
    ASSERT_EQ(p.size(), 10); // C(5,3)
    Eigen::Matrix3d first;
    first << b.row(0), b.row(1), b.row(2);
    EXPECT_NEAR(p[0], first.determinant(), 1e-14);
    // Change of basis multiplies every minor by det(G).
    const Eigen::Matrix3d g = randomMatrix(3, 3, 15);
    const Eigen::VectorXd q = pluckerCoordinates(b * g);
    EXPECT_LE((q - g.determinant() * p).norm(), 1e-12 * q.norm());
    const Eigen::MatrixXd sq = randomMatrix(4, 4, 16);
    EXPECT_NEAR(pluckerCoordinates(sq)[0], sq.determinant(), 1e-13);
}

TEST(Plucker, MatrixRoundTrip) {
    const Eigen::VectorXd b = randomVector(pairCount(7), 17);
    const RowMatrixXd m = bivectorToMatrix(b);
    EXPECT_LE((m + m.transpose()).norm(), 0.0);
    EXPECT_LE((matrixToBivector(m) - b).norm(), 0.0);
}

TEST(Plucker, BadInputThrows) {
    EXPECT_THROW(wedge(Eigen::VectorXd::Zero(3), Eigen::VectorXd::Zero(4)), std::invalid_argument);
    Eigen::VectorXd nan = Eigen::VectorXd::Zero(3);
    nan[1] = std::nan("");
    EXPECT_THROW(wedge(nan, Eigen::VectorXd::Ones(3)), std::invalid_argument);
    EXPECT_THROW(wedge(Eigen::VectorXd(), Eigen::VectorXd()), std::invalid_argument);
    EXPECT_THROW(pairIndex(3, 3, 5), std::out_of_range);
    EXPECT_THROW(pairFromIndex(10, 5), std::out_of_range);
    EXPECT_THROW(dimensionFromPairCount(7), std::invalid_argument);
    EXPECT_THROW(bivectorToMatrix(Eigen::VectorXd::Zero(4)), std::invalid_argument);
    EXPECT_THROW(pluckerCoordinates(Eigen::MatrixXd::Zero(2, 3)), std::invalid_argument);
    EXPECT_THROW(normalizedWedge(Eigen::VectorXd::Ones(3), Eigen::VectorXd::Ones(3), 0.0), std::invalid_argument);
}
