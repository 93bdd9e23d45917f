#include "gwb/geometry/attention_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace gwb::geometry;

TEST(AttentionMetrics, OneHotRow) {
    const std::vector<float> a = {0, 0, 1, 0, 0};
    const RowMetrics m = rowMetrics(a);
    EXPECT_DOUBLE_EQ(m.entropy, 0.0);
    EXPECT_DOUBLE_EQ(m.normEntropy, 0.0);
    EXPECT_NEAR(m.sparsity, 1.0 / std::sqrt(5.0), 1e-15);
    EXPECT_DOUBLE_EQ(m.top1, 1.0);
    EXPECT_DOUBLE_EQ(m.effSupport, 1.0);
    EXPECT_TRUE(std::isnan(m.transportCost));
}

TEST(AttentionMetrics, UniformRowAndTransportCost) {
    const int n = 8;
    const std::vector<double> a(n, 1.0 / n);
    std::vector<double> c(n);
    for (int j = 0; j < n; ++j)
        c[j] = j - 2.0;
    const RowMetrics m = rowMetrics(a, c);
    EXPECT_NEAR(m.entropy, std::log(8.0), 1e-14);
    EXPECT_NEAR(m.normEntropy, 1.0, 1e-14);
    EXPECT_NEAR(m.sparsity, 1.0, 1e-14);
    EXPECT_NEAR(m.top1, 0.125, 1e-15);
    EXPECT_NEAR(m.effSupport, 8.0, 1e-12);
    EXPECT_NEAR(m.transportCost, 1.5, 1e-14); // mean of -2..5
    const RowMetrics single = rowMetrics(std::vector<double>{1.0});
    EXPECT_TRUE(std::isnan(single.normEntropy));
}

TEST(AttentionMetrics, JensenShannon) {
    const std::vector<double> p = {0.5, 0.5, 0}, q = {0, 0, 2}, r = {0.25, 0.25, 0.5};
    EXPECT_NEAR(jensenShannon(p, p), 0.0, 1e-15);
    EXPECT_NEAR(jensenShannon(p, q), std::log(2.0), 1e-15); // disjoint supports; q renormalized
    const double pr =
        0.5 * (0.5 * std::log(0.5 / 0.375) * 2) + 0.5 * (0.25 * std::log(0.25 / 0.375) * 2 + 0.5 * std::log(2.0));
    EXPECT_NEAR(jensenShannon(p, r), pr, 1e-14);
    EXPECT_NEAR(jensenShannon(p, r), jensenShannon(r, p), 1e-16);
    EXPECT_NEAR(entropy(r), -(0.5 * std::log(0.25) + 0.5 * std::log(0.5)), 1e-14);
}

TEST(AttentionMetrics, CausalBatchMatchesRows) {
    const int64_t T = 3;
    // One block, rows of a lower-triangular probability matrix.
    const std::vector<float> probs = {1, 0, 0, 0.25f, 0.75f, 0, 0.2f, 0.3f, 0.5f};
    const auto all = causalRowMetrics(probs.data(), nullptr, 1, T);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_NEAR(all[1].entropy, rowMetrics(std::vector<float>{0.25f, 0.75f}).entropy, 1e-15);
    EXPECT_NEAR(all[2].top1, 0.5, 1e-7);
}

TEST(AttentionMetrics, BadInputThrows) {
    EXPECT_THROW(rowMetrics(std::vector<float>{}), std::invalid_argument);
    EXPECT_THROW(rowMetrics(std::vector<float>{0.5f, -0.1f}), std::invalid_argument);
    EXPECT_THROW(rowMetrics(std::vector<float>{0.0f, 0.0f}), std::invalid_argument);
    EXPECT_THROW(rowMetrics(std::vector<float>{NAN, 1.0f}), std::invalid_argument);
    EXPECT_THROW(rowMetrics(std::vector<double>{0.5, 0.5}, std::vector<double>{1.0}), std::invalid_argument);
    EXPECT_THROW(jensenShannon(std::vector<double>{1.0}, std::vector<double>{0.5, 0.5}), std::invalid_argument);
    EXPECT_THROW(causalRowMetrics(nullptr, nullptr, 1, 3), std::invalid_argument);
}

TEST(AttentionMetrics, SoftmaxRowMetricsEqualTheRowOfItsSoftmax) {
    // Scores with a wide spread (a nearly one-hot row) and a flat one; the row is the exact
    // softmax in double and the cost the scores' negative.
    for (const std::vector<double>& x :
         {std::vector<double>{0.3, -1.2, 4.0, 2.5, -0.7, 0.0, 1.1}, std::vector<double>{30.0, -5.0, 2.0},
          std::vector<double>(9, 0.25), std::vector<double>{-3.5}}) {
        const double m = *std::max_element(x.begin(), x.end());
        std::vector<double> a(x.size()), c(x.size());
        double z = 0;
        for (size_t j = 0; j < x.size(); ++j)
            z += a[j] = std::exp(x[j] - m);
        for (size_t j = 0; j < x.size(); ++j) {
            a[j] /= z;
            c[j] = -x[j];
        }
        const RowMetrics want = rowMetrics(a, c), got = softmaxRowMetrics(x);
        EXPECT_NEAR(got.entropy, want.entropy, 1e-14);
        EXPECT_NEAR(got.sparsity, want.sparsity, 1e-14);
        EXPECT_NEAR(got.top1, want.top1, 1e-15);
        EXPECT_NEAR(got.effSupport, want.effSupport, 1e-13);
        EXPECT_NEAR(got.transportCost, want.transportCost, 1e-13);
        if (x.size() > 1)
            EXPECT_NEAR(got.normEntropy, want.normEntropy, 1e-14);
        else
            EXPECT_TRUE(std::isnan(got.normEntropy));
    }
    EXPECT_NEAR(softmaxRowMetrics(std::vector<double>(9, 0.25)).entropy, std::log(9.0), 1e-14);
    EXPECT_THROW(softmaxRowMetrics(std::vector<double>{}), std::invalid_argument);
    EXPECT_THROW(softmaxRowMetrics(std::vector<double>{1.0, NAN}), std::invalid_argument);
}

TEST(AttentionMetrics, SoftmaxRowMetricsOfLongRowsOnEveryKernelAgreeWithLongDouble) {
    // Rows of every length up to 40 (each vector width's tail) and a long one of 4,096 entries
    // (a long prompt's row), scores spread over hundreds of units so that some exps underflow
    // (below exp(-708) of the top the kernels give 0, std::exp a subnormal: nothing next to 1).
    // Reference: the same formulas in long double.
    std::mt19937 rng(5);
    std::normal_distribution<double> n(0.0, 3.0);
    std::vector<std::vector<double>> rows;
    for (size_t len = 1; len <= 40; ++len) {
        std::vector<double> x(len);
        for (double& v : x)
            v = n(rng);
        rows.push_back(x);
    }
    std::vector<double> wide(4096);
    for (size_t j = 0; j < wide.size(); ++j)
        wide[j] = j % 97 == 0 ? -900.0 + n(rng) : j % 13 == 0 ? 40.0 + n(rng) : n(rng);
    rows.push_back(wide);
    rows.push_back(std::vector<double>(4096, -2.5)); // uniform: entropy log 4096, sparsity 1
    for (const char* kernel : {"scalar", "avx2", "avx512"}) {
        if (!softmaxKernelAvailable(kernel)) {
            EXPECT_THROW(softmaxRowMetrics(rows[0], kernel), std::invalid_argument) << kernel;
            continue;
        }
        for (const std::vector<double>& x : rows) {
            const long double m = *std::max_element(x.begin(), x.end());
            long double z = 0, ex = 0, sq = 0;
            for (double v : x) {
                const long double d = v - m, e = std::exp(d);
                z += e;
                ex += e * d;
                sq += e * e;
            }
            const long double entropy = std::log(z) - ex / z;
            const RowMetrics got = softmaxRowMetrics(x, kernel);
            const std::string at = std::string(kernel) + " n=" + std::to_string(x.size());
            EXPECT_NEAR(got.entropy, static_cast<double>(entropy), 1e-13) << at;
            EXPECT_NEAR(got.top1, static_cast<double>(1 / z), 1e-15) << at;
            EXPECT_NEAR(got.sparsity, static_cast<double>((1.0L / x.size()) / std::sqrt(sq / (z * z) / x.size())),
                        1e-13 * got.sparsity)
                << at;
            EXPECT_NEAR(got.transportCost, static_cast<double>(-(ex / z + m)), 1e-12 * (1 + std::abs(m))) << at;
        }
    }
    EXPECT_NEAR(softmaxRowMetrics(rows.back()).entropy, std::log(4096.0), 1e-12);
    EXPECT_NEAR(softmaxRowMetrics(rows.back()).sparsity, 1.0, 1e-12);
    EXPECT_THROW(softmaxRowMetrics(rows[3], "sse9"), std::invalid_argument);
    for (const char* kernel : {"scalar", "avx2", "avx512"}) // NaN or Inf anywhere, tails included
        if (softmaxKernelAvailable(kernel))
            for (size_t at : {0u, 5u, 17u, 38u}) {
                std::vector<double> bad = rows[38];
                bad[at] = at % 2 ? INFINITY : NAN;
                EXPECT_THROW(softmaxRowMetrics(bad, kernel), std::invalid_argument) << kernel << " " << at;
            }
}
