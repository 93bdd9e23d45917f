// aggregateBivectors in both aggregation orders against the definitions written out.

#include "gwb/geometry/batch.h"
#include "gwb/geometry/plucker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

} // namespace
