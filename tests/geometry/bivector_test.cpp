#include "gwb/geometry/batch.h"
#include "gwb/geometry/bivector.h"
#include "gwb/geometry/plucker.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

using namespace gwb::geometry;
using gwb::geometry::test::randomOrthogonal;
using gwb::geometry::test::randomVector;

namespace {
// Brute-force rho over all quadruples, straight from the definition.
double residualReference(const Eigen::VectorXd& b) {
    const int64_t n = dimensionFromPairCount(b.size());
    auto B = [&](int64_t i, int64_t j) { return b[pairIndex(i, j, n)]; };
    long double sum = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j)
            for (int64_t k = j + 1; k < n; ++k)
                for (int64_t l = k + 1; l < n; ++l) {
                    const long double r = static_cast<long double>(B(i, j)) * B(k, l) -
                                          static_cast<long double>(B(i, k)) * B(j, l) +
                                          static_cast<long double>(B(i, l)) * B(j, k);
                    sum += r * r;
                }
    return static_cast<double>(std::sqrt(sum) / b.squaredNorm());
}
} // namespace

TEST(Bivector, ResidualVanishesForPlanes) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
        const Eigen::VectorXd p = wedge(randomVector(32, seed), randomVector(32, seed + 50));
        EXPECT_LE(pluckerResidual(p), 1e-12);
        EXPECT_LE(pluckerResidual(1e6 * p), 1e-12); // scale-free
    }
}

TEST(Bivector, ResidualMatchesDefinitionForGenericBivectors) {
    for (int64_t n : {4, 5, 9, 16}) {
        const Eigen::VectorXd b = randomVector(pairCount(n), static_cast<uint64_t>(n));
        const double rho = pluckerResidual(b);
        EXPECT_GT(rho, 0.05);
        EXPECT_NEAR(rho, residualReference(b), 1e-13 * rho);
    }
    // e01 + e23: a single relation R_0123 = 1, ||B||^2 = 2.
    Eigen::VectorXd b = Eigen::VectorXd::Zero(6);
    b[pairIndex(0, 1, 4)] = 1;
    b[pairIndex(2, 3, 4)] = 1;
    EXPECT_NEAR(pluckerResidual(b), 0.5, 1e-15);
}

TEST(Bivector, ResidualAtReadOutSizesMatchesTheQuadrupleSum) {
    // The residual is computed from M's spectrum (O(n^3), O(n^2) near a plane); the long-double sum
    // over all C(n,4) quadruples is the judge, at and beyond the published model's r = 80: planes,
    // near-planes at every distance, repeated pairs, sparse and generic bivectors.
    for (int64_t n : {33, 48, 80}) {
        const uint64_t s = static_cast<uint64_t>(n) * 100;
        const int64_t P = pairCount(n);
        const Eigen::VectorXd plane = wedge(randomVector(n, s), randomVector(n, s + 1));
        std::vector<std::pair<std::string, Eigen::VectorXd>> cases = {{"plane", plane},
                                                                      {"generic", randomVector(P, s + 2)}};
        for (double eps : {1e-14, 1e-10, 1e-6, 1e-3, 1e-1})
            cases.emplace_back("plane + " + std::to_string(eps) + " noise",
                               plane + eps * plane.norm() / std::sqrt(double(P)) * randomVector(P, s + 3));
        cases.emplace_back("plane + 1e-6 plane", plane + 1e-6 * wedge(randomVector(n, s + 4), randomVector(n, s + 5)));
        cases.emplace_back("two planes", plane + 0.5 * wedge(randomVector(n, s + 6), randomVector(n, s + 7)));
        Eigen::VectorXd sparse = Eigen::VectorXd::Zero(P);
        sparse[pairIndex(0, 1, n)] = 1;
        sparse[pairIndex(2, 3, n)] = 1; // two equal pairs: rho = 1/2 exactly
        cases.emplace_back("e01 + e23", sparse);
        sparse[pairIndex(2, 3, n)] = 1e-7; // rho = 1e-7 / (1 + 1e-14)
        cases.emplace_back("e01 + 1e-7 e23", sparse);
        const Eigen::MatrixXd q = randomOrthogonal(n, s + 8);
        cases.emplace_back("equal orthogonal pairs", wedge(q.col(0), q.col(1)) + wedge(q.col(2), q.col(3)));
        for (const auto& [name, b] : cases) {
            const double ref = residualReference(b), rho = pluckerResidual(b);
            EXPECT_NEAR(rho, ref, 1e-15 + 1e-12 * ref) << name << ", n = " << n;
        }
    }
}

TEST(Bivector, PlanarityIsOneForPlanesAndRecoversThePlane) {
    const Eigen::VectorXd u = randomVector(32, 21), v = randomVector(32, 22);
    const Eigen::VectorXd p = wedge(u, v);
    const Planarity pl = planarity(p);
    EXPECT_NEAR(pl.value, 1.0, 1e-13);
    EXPECT_NEAR(pl.s1, p.norm(), 1e-12 * p.norm());
    EXPECT_FALSE(pl.ambiguous);
    EXPECT_NEAR(pl.nearestPlane.dot(p.normalized()), 1.0, 1e-12); // same plane, same orientation
    EXPECT_LE((pl.basis.transpose() * pl.basis - Eigen::Matrix2d::Identity()).norm(), 1e-13);
}

TEST(Bivector, PlanarityOfMixturesAndNearestPlane) {
    // B = 3 e01 + 1 e23 + 0.5 e45 (n = 6): s = (3, 1, 0.5), planarity 9 / 10.25, nearest plane e01.
    const int64_t n = 6;
    Eigen::VectorXd b = Eigen::VectorXd::Zero(pairCount(n));
    b[pairIndex(0, 1, n)] = 3;
    b[pairIndex(2, 3, n)] = 1;
    b[pairIndex(4, 5, n)] = 0.5;
    const Planarity pl = planarity(b);
    EXPECT_NEAR(pl.value, 9.0 / 10.25, 1e-14);
    EXPECT_NEAR(pl.nearestPlane[pairIndex(0, 1, n)], 1.0, 1e-13);
    EXPECT_NEAR(planarityValue(b), pl.value, 1e-15);
    // Equal pairs: invariant plane not unique.
    Eigen::VectorXd e = Eigen::VectorXd::Zero(6);
    e[pairIndex(0, 1, 4)] = 1;
    e[pairIndex(2, 3, 4)] = 1;
    EXPECT_TRUE(planarity(e).ambiguous);
    EXPECT_NEAR(planarity(e).value, 0.5, 1e-14);
}

TEST(Bivector, TopPlaneIsInvariantAtReadOutSizesAndTheCombinedCallAgrees) {
    // The top plane comes from inverse iteration on the tridiagonal form of M^T M: whatever the
    // case (plane, near-plane, a top pair barely above the next, generic, equal pairs), (u, v) is
    // orthonormal, spans an invariant plane of M (||(I - PP^T) M P|| <= 1e-12 s1) and u.Mv = s1.
    // residualAndPlanarity gives what pluckerResidual and planarity give alone.
    for (int64_t n : {5, 12, 33, 80}) {
        const uint64_t s = static_cast<uint64_t>(n) * 7;
        const int64_t P = pairCount(n);
        const Eigen::MatrixXd q = randomOrthogonal(n, s);
        const Eigen::VectorXd plane = wedge(q.col(0), q.col(1));
        std::vector<std::pair<std::string, Eigen::VectorXd>> cases = {
            {"plane", plane},
            {"generic", randomVector(P, s + 1)},
            {"plane + 1e-6 noise", plane + 1e-6 * randomVector(P, s + 2)},
            {"close pairs", plane + 0.999 * wedge(q.col(2), q.col(3))},
            {"equal pairs", plane + wedge(q.col(2), q.col(3))},
        };
        for (const auto& [name, b] : cases) {
            const RowMatrixXd m = bivectorToMatrix(b);
            const Planarity pl = planarity(b);
            const Eigen::MatrixXd& basis = pl.basis;
            EXPECT_LE((basis.transpose() * basis - Eigen::Matrix2d::Identity()).norm(), 1e-13) << name << " " << n;
            const Eigen::MatrixXd mp = m * basis;
            EXPECT_LE((mp - basis * (basis.transpose() * mp)).norm(), 1e-12 * pl.s1) << name << " " << n;
            EXPECT_NEAR(basis.col(0).dot(m * basis.col(1)), pl.s1, 1e-12 * pl.s1) << name << " " << n;
            const ResidualAndPlanarity both = residualAndPlanarity(b);
            EXPECT_EQ(both.residual, pluckerResidual(b)) << name << " " << n;
            EXPECT_EQ(both.planarity.value, pl.value) << name << " " << n;
            EXPECT_EQ(both.planarity.basis, pl.basis) << name << " " << n;
            EXPECT_EQ(both.planarity.ambiguous, name == std::string("equal pairs") && n >= 4) << name << " " << n;
        }
    }
    EXPECT_TRUE(std::isnan(residualAndPlanarity(Eigen::VectorXd::Zero(10)).residual));
}

TEST(Bivector, ZeroBivectorIsFlaggedNaN) {
    const Eigen::VectorXd z = Eigen::VectorXd::Zero(10);
    EXPECT_TRUE(std::isnan(pluckerResidual(z)));
    const Planarity pl = planarity(z);
    EXPECT_TRUE(pl.zero);
    EXPECT_TRUE(std::isnan(pl.value));
}

TEST(Bivector, InvariantUnderOrthogonalChangeOfCoordinates) {
    const int64_t n = 12;
    const Eigen::VectorXd b = randomVector(pairCount(n), 31);
    const Eigen::MatrixXd u = randomOrthogonal(n, 32);
    const RowMatrixXd m = bivectorToMatrix(b);
    const RowMatrixXd mt = u * m * u.transpose();
    const Eigen::VectorXd bt = matrixToBivector(mt);
    EXPECT_NEAR(pluckerResidual(bt), pluckerResidual(b), 1e-12);
    EXPECT_NEAR(planarityValue(bt), planarityValue(b), 1e-12);
}

TEST(Bivector, BatchesAgreeWithSingleCalls) {
    // A general bivector, a plane, planes with small perturbations (1e-9: within the planarity
    // shortcut's 1e-14; 1e-6: outside it, so the eigen-decomposition runs) and a zero row.
    RowMatrixXd rows(5, pairCount(8));
    rows.row(0) = randomVector(pairCount(8), 41).transpose();
    rows.row(1) = wedge(randomVector(8, 42), randomVector(8, 43)).transpose();
    rows.row(2) = rows.row(1) + 1e-9 * randomVector(pairCount(8), 44).transpose();
    rows.row(3) = rows.row(1) + 1e-6 * randomVector(pairCount(8), 45).transpose();
    rows.row(4).setZero();
    const Eigen::VectorXd res = residualBatch(rows), pla = planarityBatch(rows);
    for (int i = 0; i < 4; ++i) {
        EXPECT_NEAR(res[i], pluckerResidual(rows.row(i).transpose()), 1e-15) << i;
        EXPECT_NEAR(pla[i], planarityValue(rows.row(i).transpose()), 1e-14) << i;
    }
    EXPECT_LT(pla[0], 0.9);
    EXPECT_LT(pla[3], 1 - 1e-13); // the 1e-6 perturbation is visible
    EXPECT_TRUE(std::isnan(res[4]));
    EXPECT_TRUE(std::isnan(pla[4]));
    // Both from one matrix a row: the same numbers to the bit.
    const ResidualsAndPlanarities both = residualAndPlanarityBatch(rows);
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(both.residual[i] == res[i] || (std::isnan(res[i]) && std::isnan(both.residual[i]))) << i;
        EXPECT_TRUE(both.planarity[i] == pla[i] || (std::isnan(pla[i]) && std::isnan(both.planarity[i]))) << i;
    }
}

TEST(Bivector, BadInputThrows) {
    EXPECT_THROW(pluckerResidual(Eigen::VectorXd()), std::invalid_argument);
    EXPECT_THROW(pluckerResidual(Eigen::VectorXd::Ones(5)), std::invalid_argument);
    Eigen::VectorXd inf = Eigen::VectorXd::Ones(6);
    inf[2] = INFINITY;
    EXPECT_THROW(planarity(inf), std::invalid_argument);
    EXPECT_THROW(residualBatch(RowMatrixXd::Ones(2, 5)), std::invalid_argument);
}
