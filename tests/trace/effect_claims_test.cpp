// When a causal number is a claim (effect_claims.h): the normalised effect's threshold, the
// estimators over pairs against plain loops, a planted reversed half with no effect, Student's t
// against tabled values and Holm's marks against a plain statement of the procedure.
#include "gwb/engine/effect_claims.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace gwb::engine;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

double plainQuantile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const double at = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at));
    const size_t hi = std::min(v.size() - 1, lo + 1);
    return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}
} // namespace

TEST(EffectClaims, TheElizabethDarcyDifferenceIsBelowTheThresholdAndSaysSo) {
    // gwb patch on the bundled model: clean 0.458528, corrupted 0.457848.
    const EffectCondition e = effectCondition(0.458528, 0.457848, kDefaultMinDifference);
    EXPECT_FALSE(e.defined);
    EXPECT_NEAR(e.difference, 0.00068, 1e-9);
    EXPECT_EQ(e.reason, "clean - corrupted is 0.00068 logits, below 0.05: raw effects shown (patched - corrupted, "
                        "logits)");
    EXPECT_TRUE(effectCondition(1.5, 0.2, kDefaultMinDifference).defined);
    EXPECT_TRUE(effectCondition(0.2, 1.5, kDefaultMinDifference).defined); // either sign
    EXPECT_TRUE(effectCondition(0.458528, 0.457848, 0.0).defined);         // threshold 0: any nonzero difference
    EXPECT_FALSE(effectCondition(0.3, 0.3, 0.0).defined);
    EXPECT_FALSE(effectCondition(1.0, 0.0, 0.5, /*hasCorrupt=*/false).defined);
    EXPECT_THROW(checkMinDifference(-1), std::invalid_argument);
    EXPECT_THROW(checkMinDifference(kNaN), std::invalid_argument);
    EXPECT_NO_THROW(checkMinDifference(0));
}

TEST(EffectClaims, StudentsTMatchesTables) {
    EXPECT_NEAR(studentTwoSidedP(2.0, 10), 0.0733880, 1e-6);
    EXPECT_NEAR(studentTwoSidedP(2.228139, 10), 0.05, 1e-6);
    EXPECT_NEAR(studentTwoSidedP(-1.959964, 1e7), 0.05, 1e-5);
    EXPECT_NEAR(studentTwoSidedP(12.706205, 1), 0.05, 1e-6);
    EXPECT_NEAR(studentTwoSidedP(0.0, 5), 1.0, 1e-12);
    EXPECT_TRUE(std::isnan(studentTwoSidedP(1.0, 0)));
}

TEST(EffectClaims, HolmMarksEqualThePlainProcedure) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<double> p(1 + trial % 40);
        for (double& v : p)
            v = trial % 3 == 0 ? std::pow(u(rng), 6) : u(rng) * 0.02; // many small ones, some ties of scale
        if (trial % 5 == 0) p[0] = kNaN;                              // not tested
        // Plain: sort the tested ones; reject H(1..k) for the largest k with p(j) <= a / (m - j + 1) for all j <= k.
        std::vector<double> tested;
        for (double v : p)
            if (std::isfinite(v)) tested.push_back(v);
        std::sort(tested.begin(), tested.end());
        const size_t m = tested.size();
        size_t k = 0;
        while (k < m && tested[k] <= 0.05 / static_cast<double>(m - k))
            ++k;
        const double cut = k > 0 ? tested[k - 1] : -1.0;
        const std::vector<uint8_t> marks = holmMarks(p, 0.05);
        for (size_t i = 0; i < p.size(); ++i) {
            // Ties at the cut are all rejected or all kept by both statements except when split by
            // the step-down order; none occur with continuous draws.
            const bool want = std::isfinite(p[i]) && p[i] <= cut;
            EXPECT_EQ(marks[i] != 0, want) << "trial " << trial << " cell " << i;
        }
    }
}

TEST(EffectClaims, RatioOfMeansAndItsPairedBootstrapEqualPlainLoops) {
    const int64_t P = 23, C = 3;
    std::mt19937_64 rng(3);
    std::normal_distribution<double> g(0, 1);
    std::vector<double> clean(P), corrupt(P), metric(P * C);
    for (int64_t p = 0; p < P; ++p) {
        corrupt[p] = g(rng);
        clean[p] = corrupt[p] + 0.8 + 0.5 * g(rng) + (p == 4 ? -0.79 : 0.0);
        for (int64_t c = 0; c < C; ++c)
            metric[p * C + c] = corrupt[p] + (0.3 * c) * (clean[p] - corrupt[p]) + 0.1 * g(rng);
    }
    metric[5 * C + 2] = kNaN; // pair 5 does not define cell 2
    const int B = 300;
    const uint64_t seed = 11;
    const PairsEstimates e = estimatePairs(metric, clean, corrupt, true, P, C, 0.05, B, seed);
    for (int64_t c = 0; c < C; ++c) {
        double num = 0, den = 0, rawSum = 0, mor = 0;
        int64_t n = 0, nm = 0;
        for (int64_t p = 0; p < P; ++p) {
            const double m = metric[p * C + c];
            if (!std::isfinite(m)) continue;
            num += m - corrupt[p];
            den += clean[p] - corrupt[p];
            rawSum += m - corrupt[p];
            ++n;
            if (std::abs(clean[p] - corrupt[p]) >= 0.05) mor += (m - corrupt[p]) / (clean[p] - corrupt[p]), ++nm;
        }
        EXPECT_NEAR(e.ratio[c], num / den, 1e-12);
        EXPECT_NEAR(e.raw[c], rawSum / n, 1e-12);
        EXPECT_NEAR(e.meanOfRatios[c], mor / nm, 1e-12);
        EXPECT_EQ(e.n[c], n);
        EXPECT_EQ(e.meanOfRatiosN[c], nm);
        EXPECT_EQ(e.leftOut[c], n - nm);
        // The bootstrap, stated plainly: resample the pairs, recompute the ratio.
        std::vector<double> ratios;
        for (int b = 0; b < B; ++b) {
            double bn = 0, bd = 0;
            int64_t k = 0;
            for (int64_t j = 0; j < P; ++j) {
                const int64_t p = bootstrapDraw(seed, b, j, P);
                const double m = metric[p * C + c];
                if (!std::isfinite(m)) continue;
                bn += m - corrupt[p];
                bd += clean[p] - corrupt[p];
                ++k;
            }
            if (k > 0 && std::abs(bd / k) >= 0.05) ratios.push_back(bn / bd);
        }
        EXPECT_NEAR(e.ratioLow[c], plainQuantile(ratios, 0.025), 1e-12);
        EXPECT_NEAR(e.ratioHigh[c], plainQuantile(ratios, 0.975), 1e-12);
    }
    int64_t positive = 0, small = 0;
    for (int64_t p = 0; p < P; ++p)
        positive += clean[p] > corrupt[p], small += std::abs(clean[p] - corrupt[p]) < 0.05;
    EXPECT_GE(small, 1); // pair 4's difference is about 0.01
    EXPECT_EQ(e.leftOut[0], small);
    EXPECT_EQ(e.difference.belowThreshold, small);
    EXPECT_TRUE(e.difference.effect) << e.difference.verdict;
    EXPECT_NEAR(e.difference.shareInDirection, static_cast<double>(positive) / P, 1e-12);
    // The draws are the stated splitmix64 ones, in range.
    for (int b = 0; b < 50; ++b)
        for (int64_t j = 0; j < P; ++j) {
            const int64_t p = bootstrapDraw(seed, b, j, P);
            EXPECT_GE(p, 0);
            EXPECT_LT(p, P);
        }
}

TEST(EffectClaims, PlantedPairsWithHalfReversedShowNoEffectToLocalise) {
    // Half the pairs prefer the answer by 2 logits, half prefer the wrong piece by 2: each pair's
    // ratio is a clean 1 at cell 0, but there is nothing on average to explain.
    const int64_t P = 40, C = 2;
    std::vector<double> clean(P), corrupt(P, 0.0), metric(P * C);
    for (int64_t p = 0; p < P; ++p) {
        clean[p] = p % 2 ? -2.0 : 2.0;
        metric[p * C] = clean[p]; // full restoration
        metric[p * C + 1] = 0.0;  // nothing
    }
    const PairsEstimates e = estimatePairs(metric, clean, corrupt, true, P, C, kDefaultMinDifference, 500, 1);
    EXPECT_FALSE(e.difference.effect);
    EXPECT_NEAR(e.difference.shareInDirection, 0.5, 1e-12);
    EXPECT_NE(e.difference.verdict.find("no effect to localise"), std::string::npos) << e.difference.verdict;
    EXPECT_TRUE(std::isnan(e.ratio[0]));        // sum(c - k) = 0: the ratio of means is not defined
    EXPECT_NEAR(e.meanOfRatios[0], 1.0, 1e-12); // what the old estimator reported with confidence
    EXPECT_NEAR(e.raw[0], 0.0, 1e-12);
}

TEST(EffectClaims, OneLuckyCellOfSixtyIsNotMarked) {
    // 60 cells of pure noise and one real effect: Holm marks the real one only.
    const int64_t P = 30, C = 61;
    std::mt19937_64 rng(10);
    std::normal_distribution<double> g(0, 1);
    std::vector<double> clean(P), corrupt(P, 0.0), metric(P * C);
    for (int64_t p = 0; p < P; ++p) {
        clean[p] = 1.0 + 0.1 * g(rng);
        for (int64_t c = 0; c < C; ++c)
            metric[p * C + c] = (c == 60 ? 0.8 : 0.0) + 0.2 * g(rng);
    }
    const PairsEstimates e = estimatePairs(metric, clean, corrupt, true, P, C, kDefaultMinDifference, 200, 2);
    EXPECT_EQ(e.tested, 61);
    EXPECT_EQ(e.marked[60], 1);
    EXPECT_EQ(e.markedCount, 1);
    int uncorrected = 0;
    for (int64_t c = 0; c < 60; ++c) {
        uncorrected += e.pValue[c] < 0.05;
        if (e.marked[c]) ADD_FAILURE() << "noise cell " << c << " marked, p " << e.pValue[c];
    }
    EXPECT_GE(uncorrected, 1); // the lucky cells an uncorrected test would have reported
}
