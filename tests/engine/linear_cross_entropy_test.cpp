// detail::linearCrossEntropy (the training loss of the tied head, a chunk of rows at a time)
// against nll_loss(log_softmax(x E^T)) in double precision: value and both gradients; and
// detail::linearKl (the tuned lens's KL to the final layer) against autograd through log_softmax.
#include "kernels/linear_cross_entropy.h"
#include "kernels/linear_kl.h"

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

TEST(LinearKl, ValuesAndGradientsEqualAutogradThroughLogSoftmaxInDouble) {
    torch::manual_seed(5);
    const int64_t N = 23, d = 5, V = 31;
    const torch::Tensor E = torch::randn({V, d}, torch::kDouble);
    const torch::Tensor yF = torch::randn({N, d}, torch::kDouble) * 2;
    std::vector<torch::Tensor> ys{torch::randn({N, d}, torch::kDouble), yF.clone(),
                                  torch::randn({N, d}, torch::kDouble) * 3};
    const torch::Tensor logpF = torch::log_softmax(torch::mm(yF, E.t()), -1);
    std::vector<double> refKl;
    std::vector<torch::Tensor> refGrad;
    for (const torch::Tensor& y : ys) {
        const torch::Tensor yr = y.clone().requires_grad_(true);
        const torch::Tensor kl = (logpF.exp() * (logpF - torch::log_softmax(torch::mm(yr, E.t()), -1))).sum(-1).mean();
        kl.backward();
        refKl.push_back(kl.item<double>());
        refGrad.push_back(yr.grad());
    }
    EXPECT_NEAR(refKl[1], 0.0, 1e-12); // the final layer's own distribution
    // Chunks of 1, 4 (23 = 5 x 4 + 3), 23 and more rows than there are.
    for (int64_t rows : {1, 4, 23, 100}) {
        SCOPED_TRACE("chunk rows " + std::to_string(rows));
        const LinearKl got = linearKl(yF, ys, E, rows);
        ASSERT_EQ(got.kl.size(), ys.size());
        for (size_t s = 0; s < ys.size(); ++s) {
            EXPECT_NEAR(got.kl[s], refKl[s], 1e-12);
            EXPECT_LE((got.grad[s] - refGrad[s]).abs().max().item<double>(), 1e-14);
        }
    }
    EXPECT_GT(refKl[0], 0.1); // the cases are not trivially zero
}

TEST(LinearKl, FloatAtTheBundledVocabularyMatchesDouble) {
    torch::manual_seed(6);
    const int64_t N = 70, d = 16, V = 8000;
    const torch::Tensor E = torch::randn({V, d}) * 0.3, yF = torch::randn({N, d}), y = torch::randn({N, d});
    const LinearKl ref = linearKl(yF.to(torch::kDouble), {y.to(torch::kDouble)}, E.to(torch::kDouble));
    const LinearKl got = linearKl(yF, {y}, E); // the default chunk
    EXPECT_NEAR(got.kl[0], ref.kl[0], 1e-5 * std::max(1.0, ref.kl[0]));
    EXPECT_LE((got.grad[0].to(torch::kDouble) - ref.grad[0]).abs().max().item<double>(), 1e-7);
}

} // namespace
} // namespace gwb::engine::detail
