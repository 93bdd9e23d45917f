#include "gwb/geometry/batch.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/subspace.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::geometry;
using namespace gwb::geometry::test;

TEST(Subspace, PrincipalSubspaceRecoversPlantedDirections) {
    // 200 points in R^10 spread along 3 orthonormal directions (variances 9, 4, 1) plus tiny noise.
    const Eigen::MatrixXd u = randomOrthogonal(10, 71);
    const Eigen::MatrixXd coef = randomMatrix(200, 3, 72);
    RowMatrixXd x = coef * Eigen::Vector3d(3, 2, 1).asDiagonal() * u.leftCols(3).transpose();
    x += 1e-6 * RowMatrixXd(randomMatrix(200, 10, 73));
    x.rowwise() += Eigen::RowVectorXd::Constant(10, 5.0); // an offset that centring removes
    const Basis b = principalSubspace(x, 3, /*center=*/true);
    EXPECT_FALSE(b.rankDeficient);
    const Eigen::VectorXd th = principalAnglesOrthonormal(b.q, u.leftCols(3));
    EXPECT_LE(th.maxCoeff(), 1e-5);
    // Without centring the mean direction dominates.
    const Basis nc = principalSubspace(x, 1, /*center=*/false);
    EXPECT_NEAR(std::abs(nc.q.col(0).dot(Eigen::VectorXd::Constant(10, 1.0 / std::sqrt(10.0)))), 1.0, 1e-3);
}

TEST(Subspace, PrincipalSubspaceOfFewPointsInManyDimensions) {
    // 40 points in R^120 (a prompt shorter than the model is wide: the Gram route): the planted
    // directions are found, the basis is orthonormal, and it spans what the covariance route
    // finds for the same points with 120 more zero-weight copies appended (T >= d again).
    const Eigen::MatrixXd u = randomOrthogonal(120, 81);
    const Eigen::MatrixXd coef = randomMatrix(40, 4, 82);
    RowMatrixXd x = coef * Eigen::Vector4d(5, 3, 2, 1).asDiagonal() * u.leftCols(4).transpose();
    x += 1e-6 * RowMatrixXd(randomMatrix(40, 120, 83));
    const Basis b = principalSubspace(x, 4, /*center=*/true);
    ASSERT_FALSE(b.rankDeficient);
    EXPECT_LE(principalAnglesOrthonormal(b.q, u.leftCols(4)).maxCoeff(), 1e-5);
    EXPECT_LE((b.q.transpose() * b.q - Eigen::MatrixXd::Identity(4, 4)).cwiseAbs().maxCoeff(), 1e-14);
    // Appending the centred points' mirror images keeps the covariance (up to a factor) and the mean.
    RowMatrixXd xc = x;
    xc.rowwise() -= x.colwise().mean();
    RowMatrixXd tall(3 * 40 + 120, 120);
    tall << xc, -xc, xc, RowMatrixXd::Zero(120, 120);
    const Basis viaCov = principalSubspace(tall, 4, /*center=*/true);
    EXPECT_LE(principalAnglesOrthonormal(b.q, viaCov.q).maxCoeff(), 1e-9);
    // A rank drop with few points: 10 points spanning 3 directions, k = 5.
    const RowMatrixXd low = randomMatrix(10, 3, 84) * u.leftCols(3).transpose();
    const Basis d3 = principalSubspace(low, 5, false);
    EXPECT_TRUE(d3.rankDeficient);
    EXPECT_EQ(d3.rank, 3);
    EXPECT_EQ(principalSubspace(low.topRows(2), 4, false).rank, 2);
}

TEST(Subspace, PrincipalSubspaceRankDropIsFlagged) {
    const Eigen::MatrixXd u = randomOrthogonal(8, 74);
    const RowMatrixXd x = randomMatrix(50, 2, 75) * u.leftCols(2).transpose(); // rank 2
    const Basis b = principalSubspace(x, 4, false);
    EXPECT_TRUE(b.rankDeficient);
    EXPECT_EQ(b.rank, 2);
    EXPECT_EQ(b.q.cols(), 2);
    EXPECT_THROW(principalSubspace(x, 0, false), std::invalid_argument);
    EXPECT_THROW(principalSubspace(x, 9, false), std::invalid_argument);
    EXPECT_THROW(principalSubspace(RowMatrixXd(), 1, false), std::invalid_argument);
}

TEST(Subspace, RowSpace) {
    const RowMatrixXd w = randomMatrix(4, 12, 76);
    const Basis b = rowSpace(w);
    EXPECT_EQ(b.rank, 4);
    // Every row lies in the span.
    const RowMatrixXd resid = w - (w * b.q) * b.q.transpose();
    EXPECT_LE(resid.norm(), 1e-13 * w.norm());
}

TEST(Subspace, LiftedPlaneIsPreimageInRowSpace) {
    const RowMatrixXd w = randomMatrix(5, 16, 77);
    const PlaneLifter lifter(w);
    EXPECT_EQ(lifter.rank(), 5);
    EXPECT_FALSE(lifter.rankDeficient());
    const Eigen::VectorXd z1 = randomVector(5, 78), z2 = randomVector(5, 79);
    const Basis lifted = lifter.liftPlane(z1, z2);
    ASSERT_EQ(lifted.rank, 2);
    // W maps the lifted plane back onto span(z1, z2): principal angles 0.
    Eigen::MatrixXd back = w * lifted.q, zz(5, 2);
    zz << z1, z2;
    EXPECT_LE(principalAngles(back, zz).angles.maxCoeff(), 1e-7);
    // The lifted vectors are pinv(W) z: W pinv(W) z = z for full row rank.
    EXPECT_LE((w * (lifter.pinv() * z1) - z1).norm(), 1e-12);
    const RowMatrixXd rows = lifter.liftRows(RowMatrixXd(zz.transpose()));
    EXPECT_LE((rows.row(0).transpose() - lifter.pinv() * z1).norm(), 1e-14);
    EXPECT_THROW(lifter.liftPlane(randomVector(4, 1), randomVector(4, 2)), std::invalid_argument);
    RowMatrixXd wd = w;
    wd.row(4) = wd.row(0);
    EXPECT_TRUE(PlaneLifter(wd).rankDeficient());
}

TEST(Subspace, BatchedPairsMatchSingleCalls) {
    const int64_t T = 20, r = 6;
    const RowMatrixXd z = randomMatrix(T, r, 81);
    const std::vector<int> offsets = {1, 2, 4};
    const PairPlanes pp = pairPlanes(z, offsets);
    const AggregatedBivectors ab = aggregateBivectors(z, offsets);
    EXPECT_EQ(ab.validCount[0], 0);
    EXPECT_EQ(ab.validCount[3], 2);
    EXPECT_EQ(ab.validCount[10], 3);
    EXPECT_TRUE(std::isnan(pp.norms(1, 1)));
    const NormalizedPlane single = normalizedWedge(z.row(10).transpose(), z.row(6).transpose());
    EXPECT_LE((pp.planes.row(10 * 3 + 2).transpose() - single.p).norm(), 1e-15);
    EXPECT_NEAR(pp.norms(10, 2), single.norm, 1e-14);
    const Eigen::VectorXd mean = (pp.planes.row(30) + pp.planes.row(31) + pp.planes.row(32)).transpose() / 3.0;
    EXPECT_LE((ab.b.row(10).transpose() - mean).norm(), 1e-15);
    EXPECT_EQ(ab.b.row(0).norm(), 0.0);

    const RowMatrixXd a = randomMatrix(T, 9, 82), b = randomMatrix(T, 9, 83);
    const PlaneAnglesBatch pab = pairPlaneAnglesBatch(a, b, offsets);
    Eigen::MatrixXd pa(9, 2), pb(9, 2);
    pa << a.row(7).transpose(), a.row(3).transpose();
    pb << b.row(7).transpose(), b.row(3).transpose();
    const Eigen::VectorXd th = principalAngles(pa, pb).angles;
    EXPECT_NEAR(pab.angles(7, 4), th[0], 1e-13);
    EXPECT_NEAR(pab.angles(7, 5), th[1], 1e-13);
    EXPECT_TRUE(std::isnan(pab.angles(0, 0)));
    const PlaneAnglesBatch self = pairPlaneAnglesBatch(a, a, offsets);
    EXPECT_LE(self.angles.bottomRows(T - 4).maxCoeff(), 1e-7);

    RowMatrixXd par = a;
    par.row(5) = 2 * par.row(4); // (5, D=1) degenerate
    EXPECT_EQ(pairPlaneAnglesBatch(par, b, offsets).degenerate, 1);
    EXPECT_THROW(pairPlanes(z, {}), std::invalid_argument);
    EXPECT_THROW(pairPlanes(z, {0}), std::invalid_argument);
    EXPECT_THROW(pairPlaneAnglesBatch(a, z, offsets), std::invalid_argument);
}

TEST(Subspace, PairPlaneAnglesOnBothRoutesEqualTheDoubleDoubleReference) {
    // pairPlaneAnglesBatch takes a plane pair's cosines from 2 x 2 Gram matrices when each plane's two
    // vectors are at least ~5.7 degrees apart (sin^2 >= 0.01) and both angles are at least 0.05 rad,
    // and from explicit bases otherwise. Rows built in R^640 (the GrassLM-100M width) so that the
    // pairs (t, t - 1) cover both sides of both bounds: a's vectors 90, 10, 5.8, 5.6 and 1 degrees
    // apart; b's plane a's rotated by angles from 1e-9 to 1.5 rad. principalAngles (double-double,
    // checked against mpmath) of the same vectors is the reference.
    const Eigen::Index d = 640;
    const Eigen::MatrixXd u = randomOrthogonal(d, 91).leftCols(8);
    const std::vector<double> apart = {1.5707963, 0.1745, 0.1012, 0.0977, 0.01745};
    const std::vector<std::vector<double>> rotations = {
        {1e-9, 0.3}, {0.049, 0.051}, {0.06, 1.5}, {0.2, 0.7}, {1e-4, 1e-3}};
    const auto T = static_cast<Eigen::Index>(2 * apart.size() * rotations.size());
    RowMatrixXd a(T, d), b(T, d);
    Eigen::Index t = 0;
    for (size_t i = 0; i < apart.size(); ++i)
        for (size_t j = 0; j < rotations.size(); ++j, t += 2) {
            const double alpha = apart[i], th0 = rotations[j][0], th1 = rotations[j][1];
            // Plane span(u0, u1); b's plane span(cos th0 u0 + sin th0 u2, cos th1 u1 + sin th1 u3).
            const Eigen::VectorXd p0 = u.col(0), p1 = u.col(1);
            const Eigen::VectorXd q0 = std::cos(th0) * u.col(0) + std::sin(th0) * u.col(2);
            const Eigen::VectorXd q1 = std::cos(th1) * u.col(1) + std::sin(th1) * u.col(3);
            // Token t - 1 and t: two vectors of each plane alpha apart, unequal lengths.
            a.row(t) = (2.0 * p0).transpose();
            a.row(t + 1) = (0.7 * (std::cos(alpha) * p0 + std::sin(alpha) * p1)).transpose();
            b.row(t) = (1.3 * q0).transpose();
            b.row(t + 1) = (0.4 * (std::cos(alpha) * q0 + std::sin(alpha) * q1)).transpose();
        }
    const PlaneAnglesBatch batch = pairPlaneAnglesBatch(a, b, {1});
    EXPECT_EQ(batch.degenerate, 0);
    for (Eigen::Index s = 0; s < T; s += 2) {
        Eigen::MatrixXd pa(d, 2), pb(d, 2);
        pa << a.row(s + 1).transpose(), a.row(s).transpose();
        pb << b.row(s + 1).transpose(), b.row(s).transpose();
        const Eigen::VectorXd ref = principalAngles(pa, pb).angles;
        for (int k = 0; k < 2; ++k)
            EXPECT_NEAR(batch.angles(s + 1, k), ref[k], 1e-12 + 1e-10 * ref[k]) << "pair " << s / 2 << " angle " << k;
    }
}
