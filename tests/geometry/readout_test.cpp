// Read-out planes: analytic cases (one plane, two equal orthogonal planes, given spectra) and an
// independent cross-check of the residual against the spectrum (||A ^ A|| from the singular pairs).
#include "gwb/geometry/batch.h"
#include "gwb/geometry/bivector.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/readout.h"
#include "gwb/geometry/subspace.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::geometry;
using gwb::geometry::test::randomOrthogonal;
using gwb::geometry::test::randomVector;

namespace {
/// sum_k s_k (q_{2k} ^ q_{2k+1}) for an orthonormal Q: a bivector with known singular pairs s.
Eigen::VectorXd bivectorWithSpectrum(const Eigen::MatrixXd& q, const std::vector<double>& s) {
    Eigen::VectorXd b = Eigen::VectorXd::Zero(pairCount(q.rows()));
    for (size_t k = 0; k < s.size(); ++k)
        b += s[k] * wedge(q.col(static_cast<Eigen::Index>(2 * k)), q.col(static_cast<Eigen::Index>(2 * k + 1)));
    return b;
}
} // namespace

TEST(Readout, RankTwoChannelIsAPlane) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
        const Eigen::VectorXd u = randomVector(9, seed), v = randomVector(9, seed + 30);
        RowMatrixXd w(1, pairCount(9));
        w.row(0) = wedge(u, v).transpose();
        const ReadoutPlanes p = readoutPlanes(w);
        EXPECT_LE(p.residual[0], 1e-12);
        EXPECT_NEAR(p.planarity[0], 1.0, 1e-12);
        ASSERT_EQ(p.spectrum.cols(), 4);
        // s_1 = ||u ^ v|| = sqrt(|u|^2 |v|^2 - (u.v)^2), the other pairs 0.
        const double area = std::sqrt(u.squaredNorm() * v.squaredNorm() - std::pow(u.dot(v), 2));
        EXPECT_NEAR(p.spectrum(0, 0), area, 1e-12 * area);
        for (int k = 1; k < 4; ++k)
            EXPECT_LE(p.spectrum(0, k), 1e-7 * area);
        // The top plane is span(u, v).
        const RowMatrixXd angles = readoutPlaneAngles(u, v, p);
        EXPECT_LE(angles(0, 1), 1e-7);
    }
}

TEST(Readout, TwoEqualOrthogonalPlanesGivePlanarityHalf) {
    const Eigen::MatrixXd q = randomOrthogonal(8, 7);
    RowMatrixXd w(1, pairCount(8));
    w.row(0) = bivectorWithSpectrum(q, {1.0, 1.0}).transpose();
    const ReadoutPlanes p = readoutPlanes(w);
    EXPECT_NEAR(p.planarity[0], 0.5, 1e-12);
    // R_ijkl of s1 e12 + s2 e34 has the single value s1 s2: rho = s1 s2 / (s1^2 + s2^2) = 1/2.
    EXPECT_NEAR(p.residual[0], 0.5, 1e-12);
    EXPECT_NEAR(p.spectrum(0, 0), 1.0, 1e-12);
    EXPECT_NEAR(p.spectrum(0, 1), 1.0, 1e-12);
    EXPECT_LE(p.spectrum(0, 2), 1e-7);
    EXPECT_TRUE(p.ambiguous[0]);
}

TEST(Readout, SpectrumPlanarityAndResidualOfKnownPairs) {
    const Eigen::MatrixXd q = randomOrthogonal(11, 3);
    const std::vector<double> s{3.0, 2.0, 0.5, 0.25};
    RowMatrixXd w(1, pairCount(11));
    w.row(0) = bivectorWithSpectrum(q, s).transpose();
    const ReadoutPlanes p = readoutPlanes(w);
    ASSERT_EQ(p.spectrum.cols(), 5);
    for (size_t k = 0; k < s.size(); ++k)
        EXPECT_NEAR(p.spectrum(0, static_cast<Eigen::Index>(k)), s[k], 1e-12);
    double sum2 = 0, cross = 0;
    for (size_t k = 0; k < s.size(); ++k) {
        sum2 += s[k] * s[k];
        for (size_t l = k + 1; l < s.size(); ++l)
            cross += s[k] * s[k] * s[l] * s[l];
    }
    EXPECT_NEAR(p.planarity[0], 9.0 / sum2, 1e-12);
    EXPECT_NEAR(p.residual[0], std::sqrt(cross) / sum2, 1e-12);
    // The top plane is span(q0, q1).
    const RowMatrixXd angles = readoutPlaneAngles(q.col(0), q.col(1) + 0.3 * q.col(0), p);
    EXPECT_LE(angles(0, 1), 1e-7);
    const RowMatrixXd far = readoutPlaneAngles(q.col(2), q.col(3), p);
    EXPECT_NEAR(far(0, 0), M_PI / 2, 1e-7);
    EXPECT_NEAR(far(0, 1), M_PI / 2, 1e-7);
}

TEST(Readout, ResidualAgreesWithSpectrumOnRandomChannels) {
    // Independent routes: rho from the quadruple sum, the spectrum from an eigen-decomposition.
    // Orthogonal invariance gives sum R_ijkl^2 = sum_{k<l} s_k^2 s_l^2 for every bivector.
    RowMatrixXd w(6, pairCount(10));
    for (int c = 0; c < 6; ++c)
        w.row(c) = randomVector(pairCount(10), 100 + c).transpose();
    const ReadoutPlanes p = readoutPlanes(w);
    for (int c = 0; c < 6; ++c) {
        const Eigen::VectorXd s = p.spectrum.row(c).transpose();
        double sum2 = 0, cross = 0;
        for (int k = 0; k < s.size(); ++k) {
            sum2 += s[k] * s[k];
            for (int l = k + 1; l < s.size(); ++l)
                cross += s[k] * s[k] * s[l] * s[l];
        }
        EXPECT_NEAR(sum2, w.row(c).squaredNorm(), 1e-10 * sum2);
        EXPECT_NEAR(p.residual[c], std::sqrt(cross) / sum2, 1e-10);
        EXPECT_NEAR(p.planarity[c], s[0] * s[0] / sum2, 1e-10);
    }
}

TEST(Readout, ZeroChannelIsFlaggedNotACrash) {
    RowMatrixXd w = RowMatrixXd::Zero(2, pairCount(5));
    w.row(1) = wedge(randomVector(5, 1), randomVector(5, 2)).transpose();
    const ReadoutPlanes p = readoutPlanes(w);
    EXPECT_EQ(p.zeroRows, 1);
    EXPECT_TRUE(std::isnan(p.residual[0]));
    EXPECT_TRUE(std::isnan(p.planarity[0]));
    EXPECT_FALSE(std::isnan(p.residual[1]));
    EXPECT_THROW(readoutPlanes(RowMatrixXd::Zero(2, 7)), std::invalid_argument); // 7 is not C(n,2)
}

TEST(Readout, ContextVectorsReproduceTheMeanBivector) {
    // B_t from aggregateBivectors (mean of normalized pair planes) equals z_t ^ y_t with y_t the
    // paper's (1/|W_t|) sum_D z_{t-D} / ||z_t ^ z_{t-D}|| (written out here), up to a part along
    // z_t: AggregatedBivectors::y spans the same plane with z_t.
    RowMatrixXd z(12, 6);
    for (int t = 0; t < 12; ++t)
        z.row(t) = randomVector(6, 40 + t).transpose();
    const std::vector<int> offsets{1, 2, 4};
    const AggregatedBivectors agg = aggregateBivectors(z, offsets);
    EXPECT_EQ(agg.y.row(0).norm(), 0.0);
    for (int t = 1; t < 12; ++t) {
        Eigen::VectorXd y = Eigen::VectorXd::Zero(6);
        int count = 0;
        for (int D : offsets) {
            if (t - D < 0) continue;
            y += z.row(t - D).transpose() / wedge(z.row(t).transpose(), z.row(t - D).transpose()).norm();
            ++count;
        }
        y /= count;
        const Eigen::VectorXd b = wedge(z.row(t).transpose(), y);
        EXPECT_LE((b - agg.b.row(t).transpose()).norm(), 1e-12) << t;
        EXPECT_LE((wedge(z.row(t).transpose(), agg.y.row(t).transpose()) - b).norm(), 1e-12) << t;
    }
    // And the channel value: W_plu[c] . B_t = z_t^T A_c y_t.
    const Eigen::VectorXd wc = randomVector(pairCount(6), 9);
    const RowMatrixXd a = bivectorToMatrix(wc);
    for (int t = 1; t < 12; ++t)
        EXPECT_NEAR(wc.dot(agg.b.row(t).transpose()), z.row(t) * a * agg.y.row(t).transpose(), 1e-12);
}

TEST(Readout, BatchedAnglesEqualTheDoubleDoubleReferencePerChannel) {
    // readoutPlaneAnglesBatch (stacked channel planes, one product per token) against
    // principalAngles, the double-double routine checked against 40-digit mpmath, given the raw
    // vectors (z_t, y_t) rather than our orthonormal basis, channel by channel, including a token
    // whose plane nearly coincides with a channel's top plane (tiny angles).
    const int64_t r = 9, d = 7, T = 6;
    RowMatrixXd w(d, pairCount(r));
    for (int64_t c = 0; c < d; ++c)
        w.row(c) = randomVector(pairCount(r), 300 + static_cast<uint64_t>(c)).transpose();
    const ReadoutPlanes p = readoutPlanes(w);
    RowMatrixXd z(T, r), y(T, r);
    for (int64_t t = 0; t < T; ++t) {
        z.row(t) = randomVector(r, 400 + static_cast<uint64_t>(t)).transpose();
        y.row(t) = randomVector(r, 500 + static_cast<uint64_t>(t)).transpose();
    }
    // Token 4 lies in channel 2's top plane up to 1e-9; token 5 has no plane (y parallel to z).
    const Eigen::MatrixXd& q2 = p.topPlane[2];
    z.row(4) = (q2.col(0) + 1e-9 * randomVector(r, 600)).transpose();
    y.row(4) = (q2.col(1) - 0.4 * q2.col(0)).transpose();
    y.row(5) = 2.0 * z.row(5);
    const RowMatrixXd batch = readoutPlaneAnglesBatch(z, y, p);
    ASSERT_EQ(batch.rows(), T);
    ASSERT_EQ(batch.cols(), 2 * d);
    for (int64_t t = 0; t < 5; ++t) {
        Eigen::MatrixXd plane(r, 2);
        plane << z.row(t).transpose(), y.row(t).transpose();
        const RowMatrixXd single = readoutPlaneAngles(z.row(t).transpose(), y.row(t).transpose(), p);
        for (int64_t c = 0; c < d; ++c) {
            const Eigen::VectorXd ref = principalAngles(plane, p.topPlane[static_cast<size_t>(c)]).angles;
            for (int k = 0; k < 2; ++k) {
                EXPECT_NEAR(batch(t, 2 * c + k), ref[k], 1e-12 + 1e-10 * ref[k]) << "t " << t << " c " << c;
                EXPECT_EQ(batch(t, 2 * c + k), single(c, k));
            }
        }
    }
    EXPECT_LT(batch(4, 2 * 2 + 1), 1e-7); // both angles tiny for the coinciding plane
    EXPECT_GT(batch(4, 2 * 2 + 1), 0.0);
    for (int64_t k = 0; k < 2 * d; ++k)
        EXPECT_TRUE(std::isnan(batch(5, k))) << "a token without a plane has no angles";
}
