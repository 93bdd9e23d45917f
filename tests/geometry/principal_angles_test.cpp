#include "gwb/geometry/batch.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/subspace.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace gwb::geometry;
using namespace gwb::geometry::test;

namespace {
constexpr double kHalfPi = 1.5707963267948966;

void expectRelative(const Eigen::VectorXd& got, std::vector<double> want, double rel, const char* what) {
    std::sort(want.begin(), want.end());
    ASSERT_EQ(got.size(), static_cast<Eigen::Index>(want.size())) << what;
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_LE(std::abs(got[static_cast<Eigen::Index>(i)] - want[i]), rel * want[i])
            << what << ": angle " << i << " want " << want[i] << " got " << got[static_cast<Eigen::Index>(i)];
}

// Angle sets across 1e-12..pi/2, with tiny and large angles in the same pair (where arccos-only
// and scipy 1.10's branch mix-up fail).
const std::vector<std::vector<double>> kAngleSets = {
    {1e-9, 1.4},
    {1e-6, 1.2},
    {1e-12, kHalfPi},
    {1e-12, 1e-10, 1e-8, 1e-6},
    {1e-4, 0.3, 0.785, 0.786, 1.5},
    {3e-11, 0.7853981633974483, kHalfPi - 1e-9},
    {2e-8, 2.1e-8, 1.0},
};
} // namespace

TEST(PrincipalAngles, ExactSubspacesRelativeAccuracy) {
    uint64_t seed = 100;
    for (const auto& th : kAngleSets) {
        const auto n = static_cast<Eigen::Index>(2 * th.size() + 3);
        const AnglePair s = subspacesWithAngles(randomSignedPermutation(n, ++seed), th);
        expectRelative(principalAnglesOrthonormal(s.qa, s.qb), th, 1e-10, "orthonormal");
        expectRelative(principalAnglesOrthonormal(s.qb, s.qa), th, 1e-10, "swapped");
        if (th.size() == 2) {
            expectRelative(planeAngles(s.qa, s.qb), th, 1e-10, "planeAngles");
        }
    }
}

TEST(PrincipalAngles, PlaneAnglesOnBothSidesOfTheCosineOnlyPath) {
    // planeAngles takes acos of the cosines alone when both angles are at least 0.05 rad and needs
    // the sine part otherwise: pairs on both sides of that bound and of acos's two branches (cosine
    // 0.5, 60 degrees), equal angles (a repeated singular value) and right angles, in exact and
    // rotated coordinates.
    const std::vector<std::vector<double>> pairs = {{0.84, 0.85},
                                                    {0.83, 0.83},
                                                    {0.8, 1.5},
                                                    {1.0, 1.1},
                                                    {1.2, 1.4},
                                                    {kHalfPi, kHalfPi},
                                                    {0.9, 0.9},
                                                    {0.5, 1.3},
                                                    {kHalfPi - 1e-9, 1.3},
                                                    {0.049, 1.0},
                                                    {0.051, 0.06},
                                                    {0.0500001, 0.3},
                                                    {0.04999, 0.05001},
                                                    {1.0471975511965976, 1.0471975511965979},
                                                    {0.1, 0.1}};
    uint64_t seed = 900;
    for (const auto& th : pairs) {
        const AnglePair exact = subspacesWithAngles(randomSignedPermutation(9, ++seed), th);
        expectRelative(planeAngles(exact.qa, exact.qb), th, 1e-12, "planeAngles, exact coordinates");
        const AnglePair rotated = subspacesWithAngles(randomOrthogonal(9, ++seed), th);
        const Eigen::Vector2d got = planeAngles(rotated.qa, rotated.qb);
        for (int i = 0; i < 2; ++i)
            EXPECT_NEAR(got[i], std::min(th[0], th[1]) * (i == 0) + std::max(th[0], th[1]) * (i == 1), 1e-13)
                << "rotated, angle " << i;
    }
}

TEST(PrincipalAngles, RandomOrthogonalCoordinates) {
    // With a random (rounded) U the inputs themselves are only defined to ~1e-16 absolute, so tiny
    // angles are checked to that absolute floor, all others to 1e-10 relative.
    uint64_t seed = 200;
    for (const auto& th : kAngleSets) {
        const auto n = static_cast<Eigen::Index>(2 * th.size() + 5);
        const AnglePair s = subspacesWithAngles(randomOrthogonal(n, ++seed), th);
        const Eigen::VectorXd got = principalAnglesOrthonormal(s.qa, s.qb);
        std::vector<double> want = th;
        std::sort(want.begin(), want.end());
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_LE(std::abs(got[static_cast<Eigen::Index>(i)] - want[i]), 1e-10 * want[i] + 2e-15)
                << "angle " << want[i];
        // Through the general entry point (QR of a non-orthonormal basis of the same span).
        const Eigen::MatrixXd g =
            randomMatrix(static_cast<Eigen::Index>(th.size()), static_cast<Eigen::Index>(th.size()), seed);
        const PrincipalAngles pa = principalAngles(s.qa * g, s.qb);
        EXPECT_FALSE(pa.rankDeficient);
        for (size_t i = 0; i < want.size(); ++i)
            EXPECT_LE(std::abs(pa.angles[static_cast<Eigen::Index>(i)] - want[i]), 1e-10 * want[i] + 1e-14);
    }
}

TEST(PrincipalAngles, UnequalDimensions) {
    // Qa has 3 columns, Qb 2: angles of Qb's directions to span(Qa).
    const Eigen::MatrixXd u = randomSignedPermutation(9, 7);
    const std::vector<double> th = {1e-10, 1.3};
    Eigen::MatrixXd qa = u.leftCols(3), qb(9, 2);
    qb.col(0) = std::cos(th[0]) * u.col(0) + std::sin(th[0]) * u.col(3);
    qb.col(1) = std::cos(th[1]) * u.col(1) + std::sin(th[1]) * u.col(4);
    expectRelative(principalAnglesOrthonormal(qa, qb), th, 1e-10, "3 vs 2");
    expectRelative(principalAnglesOrthonormal(qb, qa), th, 1e-10, "2 vs 3");
    // A line inside a 3-space: angle 0; a line orthogonal to it: pi/2.
    EXPECT_NEAR(principalAnglesOrthonormal(qa, u.col(2))[0], 0.0, 1e-15);
    EXPECT_NEAR(principalAnglesOrthonormal(qa, u.col(8))[0], kHalfPi, 1e-15);
}

TEST(PrincipalAngles, IdenticalAndOrthogonal) {
    const Eigen::MatrixXd u = randomOrthogonal(10, 8);
    const Eigen::VectorXd same = principalAnglesOrthonormal(u.leftCols(4), u.leftCols(4));
    EXPECT_LE(same.maxCoeff(), 1e-15);
    const Eigen::VectorXd orth = principalAnglesOrthonormal(u.leftCols(4), u.middleCols(4, 4));
    EXPECT_LE((orth.array() - kHalfPi).abs().maxCoeff(), 1e-14);
    EXPECT_NEAR(geodesicDistance(orth), kHalfPi * 2, 1e-13);
    EXPECT_NEAR(chordalDistance(orth), 2.0, 1e-13);
    EXPECT_NEAR(projectionDistance(orth), 1.0, 1e-15);
    EXPECT_EQ(geodesicDistance(same), same.norm());
}

TEST(PrincipalAngles, TwoPlanesMatchPluckerInnerProduct) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
        const Eigen::MatrixXd a = randomMatrix(6, 2, seed), b = randomMatrix(6, 2, seed + 40);
        const Eigen::VectorXd th = principalAngles(a, b).angles;
        const double ip = std::abs(normalizedWedge(a.col(0), a.col(1)).p.dot(normalizedWedge(b.col(0), b.col(1)).p));
        EXPECT_NEAR(ip, std::cos(th[0]) * std::cos(th[1]), 1e-13);
        const Basis qa = planeBasis(a.col(0), a.col(1)), qb = planeBasis(b.col(0), b.col(1));
        EXPECT_LE((planeAngles(qa.q, qb.q) - th).norm(), 1e-13);
    }
}

TEST(PrincipalAngles, InvariantUnderOrthogonalChangeOfCoordinates) {
    const Eigen::MatrixXd a = randomMatrix(12, 3, 51), b = randomMatrix(12, 4, 52);
    const Eigen::MatrixXd u = randomOrthogonal(12, 53);
    const Eigen::VectorXd th = principalAngles(a, b).angles, thu = principalAngles(u * a, u * b).angles;
    EXPECT_LE((th - thu).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(PrincipalAngles, RankDeficientInputIsReported) {
    Eigen::MatrixXd a = randomMatrix(8, 3, 61);
    a.col(2) = 2 * a.col(0) - a.col(1); // rank 2
    const PrincipalAngles pa = principalAngles(a, randomMatrix(8, 3, 62));
    EXPECT_TRUE(pa.rankDeficient);
    EXPECT_EQ(pa.rankA, 2);
    EXPECT_EQ(pa.rankB, 3);
    EXPECT_EQ(pa.angles.size(), 2);
    const Basis b = orthonormalBasis(a);
    EXPECT_TRUE(b.rankDeficient);
    EXPECT_EQ(b.q.cols(), 2);
    EXPECT_LE((b.q.transpose() * b.q - Eigen::MatrixXd::Identity(2, 2)).norm(), 1e-14);
    const Basis zero = orthonormalBasis(Eigen::MatrixXd::Zero(5, 2));
    EXPECT_EQ(zero.rank, 0);
    EXPECT_TRUE(zero.rankDeficient);
    const Basis par = planeBasis(a.col(0), -3 * a.col(0));
    EXPECT_EQ(par.rank, 1);
    EXPECT_TRUE(par.rankDeficient);
}

TEST(PrincipalAngles, BadInputThrows) {
    EXPECT_THROW(principalAngles(Eigen::MatrixXd(), randomMatrix(3, 1, 1)), std::invalid_argument);
    EXPECT_THROW(principalAngles(randomMatrix(4, 2, 1), randomMatrix(5, 2, 2)), std::invalid_argument);
    EXPECT_THROW(principalAngles(Eigen::MatrixXd::Zero(4, 2), randomMatrix(4, 2, 2)), std::invalid_argument);
    Eigen::MatrixXd nan = randomMatrix(4, 2, 3);
    nan(1, 1) = std::nan("");
    EXPECT_THROW(principalAngles(nan, randomMatrix(4, 2, 2)), std::invalid_argument);
    EXPECT_THROW(principalAnglesOrthonormal(randomMatrix(4, 2, 1), randomMatrix(3, 2, 2)), std::invalid_argument);
    EXPECT_THROW(planeBasis(Eigen::VectorXd::Ones(3), Eigen::VectorXd::Ones(4)), std::invalid_argument);
}
