// detail::scanRows (the CPU's one pass per logits row for surprisal and the logit lens) against
// torch in double precision: log-sum-exp, top K with its tie order, the next token's rank; and
// detail::softmaxMinusOneHotRows (the training loss's rows) against torch's softmax in double.
#include "kernels/row_scan.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>

namespace gwb::engine::detail {
namespace {

/// n x V logits: normal values times `scale`.
std::vector<float> randomLogits(int64_t n, int64_t V, float scale, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd;
    std::vector<float> x(static_cast<size_t>(n * V));
    for (float& v : x)
        v = scale * nd(rng);
    return x;
}

void expectKernelMatchesTorch(const std::vector<float>& x, int64_t n, int64_t V, int64_t K, RowKernel kernel) {
    std::vector<int64_t> next(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        next[static_cast<size_t>(i)] = (i * 7919) % V;
    const int64_t m = n - 1; // the last row has no next token
    const RowScan r = scanRows(x.data(), n, V, K, next.data(), m, kernel);
    const torch::Tensor t = torch::from_blob(const_cast<float*>(x.data()), {n, V}, torch::kFloat).to(torch::kDouble);
    const torch::Tensor lse = torch::logsumexp(t, 1);
    for (int64_t i = 0; i < n; ++i) {
        SCOPED_TRACE("row " + std::to_string(i) + ", V " + std::to_string(V) + ", K " + std::to_string(K));
        EXPECT_EQ(r.max[static_cast<size_t>(i)], t[i].max().item<double>());
        const double want = lse[i].item<double>();
        EXPECT_NEAR(r.lse[static_cast<size_t>(i)], want, 2e-6 * std::max(1.0, std::abs(want)));
        // The top K: descending values, the lower index first among equals (a stable sort), and
        // id -1 (value -inf) where the row has fewer than K entries.
        std::vector<int32_t> order(static_cast<size_t>(V));
        std::iota(order.begin(), order.end(), 0);
        const float* row = x.data() + i * V;
        std::stable_sort(order.begin(), order.end(), [row](int32_t a, int32_t b) { return row[a] > row[b]; });
        for (int64_t k = 0; k < K; ++k) {
            const int32_t id = k < V ? order[static_cast<size_t>(k)] : -1;
            EXPECT_EQ(r.topId[static_cast<size_t>(i * K + k)], id) << k;
            EXPECT_EQ(r.topValue[static_cast<size_t>(i * K + k)], id >= 0 ? row[id] : -INFINITY) << k;
        }
        if (i < m) {
            const double target = t[i][next[static_cast<size_t>(i)]].item<double>();
            EXPECT_EQ(r.target[static_cast<size_t>(i)], static_cast<float>(target));
            EXPECT_EQ(r.above[static_cast<size_t>(i)], (t[i] > target).sum().item<int64_t>());
        }
    }
}

/// Every kernel: Auto (AVX-512 where the CPU has it), AVX2 (where the CPU has it), portable.
void expectMatchesTorchBoth(const std::vector<float>& x, int64_t n, int64_t V, int64_t K) {
    for (RowKernel kernel : {RowKernel::Auto, RowKernel::Avx2, RowKernel::Portable}) {
        SCOPED_TRACE(kernel == RowKernel::Auto   ? (rowScanUsesAvx512() ? "AVX-512 kernel" : "auto kernel")
                     : kernel == RowKernel::Avx2 ? (rowScanUsesAvx2() ? "AVX2 kernel" : "portable kernel (no AVX2)")
                                                 : "portable kernel");
        expectKernelMatchesTorch(x, n, V, K, kernel);
    }
}

TEST(RowScan, MatchesTorchForEveryWidthAndK) {
    // Widths around the 8-lane blocks (tails of 0..7), the paper's vocabulary and the bundled one.
    for (int64_t V : {1, 5, 8, 9, 15, 16, 17, 1003, 8000, 30522})
        for (int64_t K : {0, 1, 5})
            expectMatchesTorchBoth(randomLogits(6, V, 3.0f, static_cast<unsigned>(V * 10 + K)), 6, V, K);
}

TEST(RowScan, WideRangesAndTies) {
    // Logits spread over +-200 (exp underflows for most entries) and rows with equal values: the
    // top K keeps the lower index first among equals.
    expectMatchesTorchBoth(randomLogits(5, 4099, 60.0f, 3), 5, 4099, 5);
    std::vector<float> ties(static_cast<size_t>(3 * 40));
    for (size_t j = 0; j < ties.size(); ++j)
        ties[j] = static_cast<float>((j * 13) % 5);
    expectMatchesTorchBoth(ties, 3, 40, 5);
}

/// 4 rows of V entries 0.5 with: a NaN in row 0, row 1 all -inf, one +inf in row 2 (at 20), one
/// -inf among finite entries in row 3 (at 30).
std::vector<float> specialRows(int64_t V) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> x(static_cast<size_t>(4 * V), 0.5f);
    x[3] = std::nanf("");
    for (int64_t v = 0; v < V; ++v)
        x[static_cast<size_t>(V + v)] = -inf;
    x[static_cast<size_t>(2 * V + 20)] = inf;
    x[static_cast<size_t>(3 * V + 30)] = -inf;
    return x;
}

TEST(RowScan, SpecialRows) {
    const float inf = std::numeric_limits<float>::infinity();
    const int64_t V = 37;
    const std::vector<float> x = specialRows(V);
    for (RowKernel kernel : {RowKernel::Auto, RowKernel::Avx2, RowKernel::Portable}) {
        const RowScan r = scanRows(x.data(), 4, V, 2, nullptr, 0, kernel);
        EXPECT_TRUE(std::isnan(r.lse[0]));
        EXPECT_TRUE(std::isnan(r.max[0]));
        EXPECT_EQ(r.lse[1], -inf);
        EXPECT_EQ(r.lse[2], inf);
        EXPECT_EQ(r.topId[4], 20);
        EXPECT_NEAR(r.lse[3], 0.5 + std::log(static_cast<double>(V - 1)), 1e-6);
    }
}

/// softmaxMinusOneHotRows with `kernel` against torch in double: lse, the picked logit, and the
/// row turned into softmax - onehot(target).
void expectSoftmaxRowsMatchTorch(const std::vector<float>& x, int64_t n, int64_t V, RowKernel kernel) {
    std::vector<int64_t> target(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        target[static_cast<size_t>(i)] = (i * 7919 + 3) % V;
    std::vector<float> rows = x, lse(static_cast<size_t>(n)), picked(static_cast<size_t>(n));
    softmaxMinusOneHotRows(rows.data(), n, V, target.data(), lse.data(), picked.data(), kernel);
    const torch::Tensor t = torch::from_blob(const_cast<float*>(x.data()), {n, V}, torch::kFloat).to(torch::kDouble);
    const torch::Tensor wantLse = torch::logsumexp(t, 1);
    torch::Tensor wantRows = torch::softmax(t, 1);
    for (int64_t i = 0; i < n; ++i)
        wantRows[i][target[static_cast<size_t>(i)]] -= 1.0;
    const torch::Tensor got = torch::from_blob(rows.data(), {n, V}, torch::kFloat).to(torch::kDouble);
    for (int64_t i = 0; i < n; ++i) {
        SCOPED_TRACE("row " + std::to_string(i) + ", V " + std::to_string(V));
        const double want = wantLse[i].item<double>();
        EXPECT_NEAR(lse[static_cast<size_t>(i)], want, 2e-6 * std::max(1.0, std::abs(want)));
        EXPECT_EQ(picked[static_cast<size_t>(i)], x[static_cast<size_t>(i * V + target[static_cast<size_t>(i)])]);
        // Entries are probabilities (in [0, 1]) or a probability minus 1: absolute error ~1e-7.
        EXPECT_LE((got[i] - wantRows[i]).abs().max().item<double>(), 1e-6);
        EXPECT_NEAR(got[i].sum().item<double>(), 0.0, 1e-5); // sum of softmax - onehot
    }
}

TEST(SoftmaxRows, MatchTorchForEveryWidth) {
    for (int64_t V : {1, 5, 8, 9, 15, 16, 17, 1003, 8000, 30522})
        for (RowKernel kernel : {RowKernel::Auto, RowKernel::Portable}) {
            SCOPED_TRACE(kernel == RowKernel::Auto ? "auto kernel" : "portable kernel");
            expectSoftmaxRowsMatchTorch(randomLogits(5, V, 3.0f, static_cast<unsigned>(V + 1)), 5, V, kernel);
            expectSoftmaxRowsMatchTorch(randomLogits(3, V, 60.0f, static_cast<unsigned>(V + 2)), 3, V, kernel);
        }
}

TEST(SoftmaxRows, SpecialRowsGiveNaNRowsAndTorchsLogSumExp) {
    const float inf = std::numeric_limits<float>::infinity();
    const int64_t V = 37;
    const std::vector<float> x = specialRows(V);
    const std::vector<int64_t> target = {0, 1, 2, 4};
    for (RowKernel kernel : {RowKernel::Auto, RowKernel::Portable}) {
        std::vector<float> rows = x, lse(4), picked(4);
        softmaxMinusOneHotRows(rows.data(), 4, V, target.data(), lse.data(), picked.data(), kernel);
        EXPECT_TRUE(std::isnan(lse[0]));
        EXPECT_EQ(lse[1], -inf);
        EXPECT_EQ(lse[2], inf);
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t v = 0; v < V; ++v)
                EXPECT_TRUE(std::isnan(rows[static_cast<size_t>(i * V + v)])) << i << " " << v;
        // Row 3: the -inf entry has probability 0; the others 1/36, the target's minus 1.
        EXPECT_NEAR(lse[3], 0.5 + std::log(36.0), 1e-6);
        EXPECT_EQ(rows[static_cast<size_t>(3 * V + 30)], 0.0f);
        EXPECT_NEAR(rows[static_cast<size_t>(3 * V + 5)], 1.0 / 36, 1e-7);
        EXPECT_NEAR(rows[static_cast<size_t>(3 * V + 4)], 1.0 / 36 - 1, 1e-7);
    }
}

} // namespace
} // namespace gwb::engine::detail
