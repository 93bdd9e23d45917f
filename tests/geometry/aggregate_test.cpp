// aggregateBivectors in both aggregation orders against the definitions written out.

#include "gwb/geometry/batch.h"
#include "gwb/geometry/plucker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <utility>

using namespace gwb::geometry;

namespace {

RowMatrixXd randomStates(Eigen::Index T, Eigen::Index r, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    RowMatrixXd z(T, r);
    for (Eigen::Index i = 0; i < T; ++i)
        for (Eigen::Index j = 0; j < r; ++j)
            z(i, j) = n(rng);
    return z;
}

TEST(Aggregate, BothOrdersMatchTheirDefinitions) {
    const RowMatrixXd z = randomStates(9, 5, 3);
    const std::vector<int> offsets{1, 2, 4};
    const double eps = 1e-8;
    const AggregatedBivectors paper = aggregateBivectors(z, offsets, eps, false);
    const AggregatedBivectors fused = aggregateBivectors(z, offsets, eps, true);
    for (Eigen::Index t = 0; t < z.rows(); ++t) {
        Eigen::VectorXd normalizedMean = Eigen::VectorXd::Zero(10), rawMean = Eigen::VectorXd::Zero(10);
        int count = 0;
        for (int D : offsets) {
            if (t - D < 0) continue;
            const Eigen::VectorXd p = wedge(z.row(t).transpose(), z.row(t - D).transpose()); // current x past
            normalizedMean += p / std::max(p.norm(), eps);
            rawMean += p;
            ++count;
        }
        ASSERT_EQ(paper.validCount[static_cast<size_t>(t)], count);
        if (count == 0) {
            EXPECT_EQ(fused.b.row(t).norm(), 0.0);
            continue;
        }
        normalizedMean /= count;
        rawMean /= count;
        const Eigen::VectorXd expected = rawMean / std::sqrt(rawMean.squaredNorm() + eps);
        EXPECT_LT((paper.b.row(t).transpose() - normalizedMean).norm(), 1e-12) << "t " << t;
        EXPECT_LT((fused.b.row(t).transpose() - expected).norm(), 1e-12) << "t " << t;
        // The two orders differ whenever the pair planes have different norms.
        if (count > 1) {
            EXPECT_GT((fused.b.row(t) - paper.b.row(t)).norm(), 1e-3) << "t " << t;
        }
    }
}

TEST(Aggregate, EveryModeIsOneWedgeWithItsContextVectorAndNormsAreAccurate) {
    // B_t = z_t ^ y_t in every mode (the raw mode with its scale), against the mean of the pair
    // planes written out; each pair's norm against the long-double wedge, also for pairs 1e-9
    // apart in angle and of very unequal lengths, and exactly zero for parallel ones.
    RowMatrixXd z = randomStates(12, 7, 5);
    z.row(6) = 1e-3 * z.row(5) + 1e-12 * z.row(2); // (6, D = 1): nearly parallel, unequal lengths
    z.row(9) = -2.0 * z.row(8);                    // (9, D = 1): parallel
    const std::vector<int> offsets{1, 3};
    const double eps = 1e-8, scale = 0.25;
    for (const PlaneMean mode : {PlaneMean::NormalizeThenMean, PlaneMean::MeanThenNormalize, PlaneMean::Raw}) {
        const AggregatedBivectors agg = aggregateBivectors(z, offsets, eps, mode, scale);
        ASSERT_EQ(agg.y.rows(), 12);
        ASSERT_EQ(agg.y.cols(), 7);
        for (Eigen::Index t = 0; t < z.rows(); ++t) {
            Eigen::VectorXd mean = Eigen::VectorXd::Zero(21);
            int count = 0;
            for (size_t o = 0; o < offsets.size(); ++o) {
                const Eigen::Index s = t - offsets[o];
                if (s < 0) continue;
                const Eigen::VectorXd p = wedge(z.row(t).transpose(), z.row(s).transpose());
                long double n2 = 0;
                for (Eigen::Index i = 0; i < 7; ++i)
                    for (Eigen::Index j = i + 1; j < 7; ++j) {
                        const long double v =
                            static_cast<long double>(z(t, i)) * z(s, j) - static_cast<long double>(z(t, j)) * z(s, i);
                        n2 += v * v;
                    }
                const double ref = static_cast<double>(std::sqrt(n2));
                const double bound = 1e-15 * z.row(t).norm() * z.row(s).norm();
                EXPECT_NEAR(agg.norms(t, static_cast<Eigen::Index>(o)), ref, bound) << t << " " << o;
                mean += mode == PlaneMean::Raw                 ? Eigen::VectorXd(scale * p)
                        : mode == PlaneMean::MeanThenNormalize ? p
                                                               : Eigen::VectorXd(p / std::max(p.norm(), eps));
                ++count;
            }
            if (count == 0) {
                EXPECT_EQ(agg.b.row(t).norm(), 0.0);
                continue;
            }
            mean /= count;
            if (mode == PlaneMean::MeanThenNormalize) mean /= std::sqrt(mean.squaredNorm() + eps);
            const Eigen::VectorXd b = agg.b.row(t).transpose();
            // A pair at or below eps enters with weight 1 / eps: the nearly parallel pair's wedge
            // (1e-12 across, known to ~1e-19 by either route) grows 1e8 times, so token 6 agrees to
            // 1e-10 only. The exactly parallel pair adds nothing and must not blur token 9's other
            // pair (a y_t with z_8 / eps in it loses 1e-8 of that pair).
            const bool nearlyParallel = mode == PlaneMean::NormalizeThenMean && t == 6;
            EXPECT_LE((b - mean).norm(), (nearlyParallel ? 1e-10 : 1e-12) * (1 + mean.norm())) << t;
            EXPECT_LE((wedge(z.row(t).transpose(), agg.y.row(t).transpose()) - b).norm(), 1e-14 * (1 + b.norm())) << t;
        }
        EXPECT_EQ(agg.norms(9, 0), 0.0);
        EXPECT_EQ(agg.degenerate, 2) << "the parallel pair and the one 1e-12 from it";
    }
}

} // namespace

TEST(Aggregate, ARangeOfTokensEqualsThoseRowsOfTheWholeCall) {
    // A long prompt's B_t is formed a chunk of tokens at a time: every field of rows [t0, t1) is
    // the whole call's, to the bit, in every mode (the pairs reach back before t0).
    const RowMatrixXd z = randomStates(11, 6, 7);
    const std::vector<int> offsets{1, 3};
    for (PlaneMean mode : {PlaneMean::NormalizeThenMean, PlaneMean::MeanThenNormalize, PlaneMean::Raw}) {
        const AggregatedBivectors whole = aggregateBivectors(z, offsets, 1e-8, mode, 0.5);
        int64_t degenerate = 0;
        for (auto [t0, t1] : {std::pair<int64_t, int64_t>{0, 2}, {2, 7}, {7, 11}, {5, 5}}) {
            const AggregatedBivectors part = aggregateBivectors(z, offsets, 1e-8, mode, 0.5, t0, t1);
            ASSERT_EQ(part.b.rows(), t1 - t0);
            EXPECT_TRUE(part.b == whole.b.middleRows(t0, t1 - t0));
            EXPECT_TRUE(part.y == whole.y.middleRows(t0, t1 - t0));
            for (int64_t i = 0; i < t1 - t0; ++i) {
                EXPECT_EQ(part.validCount[static_cast<size_t>(i)], whole.validCount[static_cast<size_t>(t0 + i)]);
                for (Eigen::Index o = 0; o < 2; ++o)
                    EXPECT_TRUE(part.norms(i, o) == whole.norms(t0 + i, o) ||
                                (std::isnan(part.norms(i, o)) && std::isnan(whole.norms(t0 + i, o))));
            }
            degenerate += part.degenerate;
        }
        EXPECT_EQ(degenerate, whole.degenerate);
    }
    EXPECT_THROW(aggregateBivectors(z, offsets, 1e-8, PlaneMean::Raw, 1.0, 4, 12), std::invalid_argument);
    EXPECT_THROW(aggregateBivectors(z, offsets, 1e-8, PlaneMean::Raw, 1.0, 5, 4), std::invalid_argument);
}
