// detail::linearCrossEntropy (the training loss of the tied head, a chunk of rows at a time)
// against nll_loss(log_softmax(x E^T)) in double precision: value and both gradients.
#include "kernels/linear_cross_entropy.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace gwb::engine::detail {
namespace {

TEST(LinearCrossEntropy, ValueAndGradientsEqualLogSoftmaxNllInDouble) {
    torch::manual_seed(3);
    const int64_t N = 37, d = 6, V = 29;
    const torch::Tensor x0 = torch::randn({N, d}, torch::kDouble) * 2;
    const torch::Tensor w0 = torch::randn({V, d}, torch::kDouble);
    const torch::Tensor t = torch::randint(0, V, {N}, torch::kLong);
    // Reference: the whole N x V logits.
    const torch::Tensor xr = x0.clone().requires_grad_(true), wr = w0.clone().requires_grad_(true);
    const torch::Tensor ref = torch::nll_loss(torch::log_softmax(torch::mm(xr, wr.t()), -1), t);
    ref.backward();
    // Chunks of 1, 5 (37 = 7 x 5 + 2), 37 and more rows than there are.
    for (int64_t rows : {1, 5, 37, 100}) {
        SCOPED_TRACE("chunk rows " + std::to_string(rows));
        const torch::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
        const torch::Tensor loss = linearCrossEntropy(x, w, t, rows);
        (loss * 3).backward(); // a non-unit upstream gradient
        EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-12);
        EXPECT_LE((x.grad() - 3 * xr.grad()).abs().max().item<double>(), 1e-12);
        EXPECT_LE((w.grad() - 3 * wr.grad()).abs().max().item<double>(), 1e-12);
    }
}

TEST(LinearCrossEntropy, FloatMatchesAndChunksStayUnder16MiB) {
    torch::manual_seed(4);
    const int64_t N = 300, d = 16, V = 8000;
    EXPECT_LE(linearCrossEntropyChunkRows(V) * V * 4, int64_t{16} << 20);
    EXPECT_GE(linearCrossEntropyChunkRows(int64_t{1} << 30), 1);
    const torch::Tensor x0 = torch::randn({N, d}), w0 = torch::randn({V, d}) * 0.3;
    const torch::Tensor t = torch::randint(0, V, {N}, torch::kLong);
    // Float on the CPU takes the row-scan path (row_scan.h); the reference is torch's, in double.
    const torch::Tensor xr = x0.to(torch::kDouble).requires_grad_(true),
                        wr = w0.to(torch::kDouble).requires_grad_(true);
    const torch::Tensor ref = torch::nll_loss(torch::log_softmax(torch::mm(xr, wr.t()), -1), t);
    ref.backward();
    const torch::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
    const torch::Tensor loss = linearCrossEntropy(x, w, t, 64);
    loss.backward();
    EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-5);
    EXPECT_LE((x.grad() - xr.grad()).abs().max().item<double>(), 1e-6);
    EXPECT_LE((w.grad() - wr.grad()).abs().max().item<double>(), 1e-6);
    // Without a gradient (evaluation) the same value comes from the log-sum-exp scan alone.
    {
        torch::NoGradGuard noGrad;
        EXPECT_NEAR(linearCrossEntropy(x0, w0, t, 64).item<double>(), ref.item<double>(), 1e-5);
    }
    {
        torch::InferenceMode inference;
        EXPECT_NEAR(linearCrossEntropy(x0, w0, t).item<double>(), ref.item<double>(), 1e-5);
    }
}

TEST(LinearCrossEntropy, TargetsOutsideTheVocabularyAreAnError) {
    const torch::Tensor x = torch::randn({4, 3}), w = torch::randn({10, 3});
    for (int64_t bad : {-1, 10}) {
        const torch::Tensor t = torch::tensor(std::vector<int64_t>{0, 1, bad, 2});
        try {
            linearCrossEntropy(x, w, t);
            ADD_FAILURE() << "target " << bad << " accepted";
        } catch (const c10::Error& e) {
            EXPECT_NE(std::string(e.what()).find("outside the vocabulary of 10"), std::string::npos) << e.what();
        }
    }
}

} // namespace
} // namespace gwb::engine::detail
