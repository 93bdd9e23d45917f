// detail::causalSoftmax (the causal Transformer's attention weights, with its row kernels) against
// torch's scale, -inf mask and softmax in double: weights and gradients, for a whole sequence and
// for a query chunk that starts later, both kernels, widths with and without 8-lane tails.
#include "kernels/causal_softmax.h"
#include "kernels/row_scan.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

namespace gwb::engine::detail {
namespace {

/// The reference: softmax(scale * scores) with keys after each query's position at -inf.
torch::Tensor reference(const torch::Tensor& scores, double scale, int64_t offset) {
    const int64_t n = scores.size(-2), keys = scores.size(-1);
    const torch::Tensor future = torch::arange(keys).view({1, keys}) > torch::arange(offset, offset + n).view({n, 1});
    return torch::softmax((scores * scale).masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
}

struct Case {
    int64_t n, keys, offset;
};

TEST(CausalSoftmax, WeightsAndGradientsMatchTorchInDouble) {
    torch::manual_seed(21);
    const double scale = 0.125;
    // Whole sequences (offset 0, keys = n) of odd and 8-multiple widths, and later query chunks.
    for (const Case& c :
         {Case{1, 1, 0}, Case{7, 7, 0}, Case{16, 16, 0}, Case{37, 37, 0}, Case{5, 20, 15}, Case{9, 33, 24}}) {
        SCOPED_TRACE("n " + std::to_string(c.n) + ", keys " + std::to_string(c.keys) + ", offset " +
                     std::to_string(c.offset));
        const torch::Tensor s0 = torch::randn({2, 3, c.n, c.keys}) * 6;
        const torch::Tensor upstream = torch::randn({2, 3, c.n, c.keys});
        const torch::Tensor sr = s0.to(torch::kDouble).requires_grad_(true);
        const torch::Tensor want = reference(sr, scale, c.offset);
        want.backward(upstream.to(torch::kDouble));
        const torch::Tensor s = s0.clone().requires_grad_(true);
        const torch::Tensor got = causalSoftmax(s, scale, c.offset);
        got.backward(upstream);
        EXPECT_LE((got.to(torch::kDouble) - want).abs().max().item<double>(), 1e-6);
        EXPECT_LE((s.grad().to(torch::kDouble) - sr.grad()).abs().max().item<double>(), 1e-6);
        // Future keys: weight exactly 0 and no gradient.
        const torch::Tensor future =
            torch::arange(c.keys).view({1, c.keys}) > torch::arange(c.offset, c.offset + c.n).view({c.n, 1});
        EXPECT_EQ(got.masked_select(future.expand_as(got)).abs().sum().item<float>(), 0.0f);
        EXPECT_EQ(s.grad().masked_select(future.expand_as(got)).abs().sum().item<float>(), 0.0f);
        // Without autograd, the same weights.
        torch::NoGradGuard noGrad;
        EXPECT_TRUE(torch::equal(causalSoftmax(s0, scale, c.offset), got.detach()));
    }
}

TEST(CausalSoftmax, PortableRowKernelsAgreeWithTheAutoOnes) {
    torch::manual_seed(22);
    const int64_t rows = 24, n = 12, keys = 29, offset = 17;
    const torch::Tensor x = torch::randn({rows, keys}) * 4, g = torch::randn({rows, keys});
    torch::Tensor a = torch::empty_like(x), b = torch::empty_like(x);
    causalSoftmaxRows(x.data_ptr<float>(), a.data_ptr<float>(), rows, n, keys, offset, 0.3f, RowKernel::Auto);
    causalSoftmaxRows(x.data_ptr<float>(), b.data_ptr<float>(), rows, n, keys, offset, 0.3f, RowKernel::Portable);
    EXPECT_LE((a - b).abs().max().item<float>(), 1e-6f);
    torch::Tensor ga = torch::empty_like(x), gb = torch::empty_like(x);
    causalSoftmaxBackwardRows(a.data_ptr<float>(), g.data_ptr<float>(), ga.data_ptr<float>(), rows, n, keys, offset,
                              0.3f, RowKernel::Auto);
    causalSoftmaxBackwardRows(a.data_ptr<float>(), g.data_ptr<float>(), gb.data_ptr<float>(), rows, n, keys, offset,
                              0.3f, RowKernel::Portable);
    EXPECT_LE((ga - gb).abs().max().item<float>(), 1e-6f);
    // In place (in == out), as the documentation allows.
    torch::Tensor y = x.clone();
    causalSoftmaxRows(y.data_ptr<float>(), y.data_ptr<float>(), rows, n, keys, offset, 0.3f);
    EXPECT_TRUE(torch::equal(y, a));
}

TEST(CausalSoftmax, OtherDtypesUseTorchsOperations) {
    torch::manual_seed(23);
    const torch::Tensor s = torch::randn({1, 2, 6, 6}, torch::kDouble);
    EXPECT_TRUE(torch::allclose(causalSoftmax(s, 0.5, 0), reference(s, 0.5, 0), 0, 1e-15));
}

} // namespace
} // namespace gwb::engine::detail
