// detail::packedGemm (the engine's inference product over a weight packed once) against a double
// product for every edge of its blocking (row and panel remainders, strides, bias, threads, both
// kernel forms; the AVX-512 and AVX2 forms must also agree bit for bit), and
// the packed weights' cache: repacked when the weight changes (a training step, a copy, a load),
// used only where no gradient is needed.
#include "kernels/adamw_step.h"
#include "model/lm_modules.h"
#include "kernels/packed_gemm.h"
#include "kernels/packed_weight.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace gwb::engine::detail {
namespace {

#define SKIP_WITHOUT_KERNEL()                                                                                          \
    if (!packedGemmAvailable()) GTEST_SKIP() << "this CPU has no AVX2 and FMA: packedGemm does not run here"

TEST(PackedGemm, MatchesADoubleProductForEveryBlockingEdge) {
    SKIP_WITHOUT_KERNEL();
    torch::manual_seed(3);
    for (int64_t m : {1, 2, 11, 12, 13, 25, 100})
        for (int64_t n : {1, 5, 16, 17, 31, 32, 33, 100, 1000})
            for (int64_t k : {1, 3, 64, 257})
                for (bool withBias : {false, true})
                    for (int workers : {1, 3})
                        for (GemmKernel kernel : {GemmKernel::Auto, GemmKernel::Avx2}) {
                            // Strides wider than the rows: x and y are views into wider matrices.
                            const int64_t ldx = k + 3, ldy = n + 5;
                            const torch::Tensor xs = torch::randn({m, ldx}), w = torch::randn({n, k}),
                                                b = torch::randn({n});
                            torch::Tensor ys = torch::full({m, ldy}, 7.0f);
                            const PackedMatrix p(w.data_ptr<float>(), n, k, k);
                            // Large products only go parallel: this one is made large enough at n = 1000.
                            packedGemm(xs.data_ptr<float>(), m, ldx, p, withBias ? b.data_ptr<float>() : nullptr,
                                       ys.data_ptr<float>(), ldy, workers, kernel);
                            const torch::Tensor x = xs.narrow(1, 0, k).to(torch::kDouble);
                            torch::Tensor ref = torch::mm(x, w.to(torch::kDouble).t());
                            if (withBias) ref = ref + b.to(torch::kDouble);
                            const torch::Tensor scale = torch::mm(x.abs(), w.to(torch::kDouble).abs().t()) + 1.0;
                            const double err =
                                ((ys.narrow(1, 0, n).to(torch::kDouble) - ref).abs() / scale).max().item<double>();
                            EXPECT_LT(err, 1e-6)
                                << "m " << m << " n " << n << " k " << k << " bias " << withBias << " workers "
                                << workers << " AVX2 form " << (kernel == GemmKernel::Avx2);
                            // Nothing outside the m x n block is written.
                            EXPECT_TRUE(torch::all(ys.narrow(1, n, ldy - n) == 7.0f).item<bool>())
                                << "m " << m << " n " << n << " k " << k;
                        }
}

TEST(PackedGemm, BothKernelFormsAndAnyThreadCountGiveTheSameBits) {
    SKIP_WITHOUT_KERNEL();
    torch::manual_seed(4);
    const torch::Tensor x = torch::randn({37, 100}), w = torch::randn({70, 100}), b = torch::randn({70});
    const PackedMatrix p(w.data_ptr<float>(), 70, 100, 100);
    torch::Tensor a = torch::empty({37, 70}), c = torch::empty({37, 70});
    packedGemm(x.data_ptr<float>(), 37, 100, p, b.data_ptr<float>(), a.data_ptr<float>(), 70, 2, GemmKernel::Auto);
    packedGemm(x.data_ptr<float>(), 37, 100, p, b.data_ptr<float>(), c.data_ptr<float>(), 70, 2, GemmKernel::Avx2);
    EXPECT_TRUE(torch::equal(a, c));
    // Every output is one tile's sum in a fixed order, so the thread count does not change a bit.
    const torch::Tensor xl = torch::randn({100, 100}), wl = torch::randn({1000, 100});
    const PackedMatrix pl(wl.data_ptr<float>(), 1000, 100, 100);
    torch::Tensor one = torch::empty({100, 1000}), three = torch::empty({100, 1000});
    packedGemm(xl.data_ptr<float>(), 100, 100, pl, nullptr, one.data_ptr<float>(), 1000, 1);
    packedGemm(xl.data_ptr<float>(), 100, 100, pl, nullptr, three.data_ptr<float>(), 1000, 3);
    EXPECT_TRUE(torch::equal(one, three));
}

TEST(PackedGemm, PackedLayoutIsPanelsOf32RowsColumnMajorWithZeroPadding) {
    const torch::Tensor w = torch::arange(40 * 3, torch::kFloat).view({40, 3}); // w[j][c] = 3 j + c
    const PackedMatrix p(w.data_ptr<float>(), 40, 3, 3);
    ASSERT_EQ(p.panels(), 2);
    for (int64_t panel = 0; panel < 2; ++panel)
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t j = 0; j < PackedMatrix::kPanel; ++j) {
                const int64_t row = panel * PackedMatrix::kPanel + j;
                EXPECT_EQ(p.panel(panel)[c * PackedMatrix::kPanel + j], row < 40 ? float(3 * row + c) : 0.0f);
            }
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.panel(0)) % 64, 0u);
}

TEST(PackedWeight, RepacksWhenTheWeightChanges) {
    SKIP_WITHOUT_KERNEL();
    torch::manual_seed(5);
    torch::Tensor w = torch::randn({40, 24});
    PackedWeight cache;
    const auto first = cache.get(w);
    ASSERT_TRUE(first);
    EXPECT_EQ(cache.get(w), first) << "an unchanged weight is packed once";
    w.add_(1.0f); // in place: the version counter moves
    const auto second = cache.get(w);
    EXPECT_NE(second, first);
    EXPECT_EQ(second->panel(0)[0], w[0][0].item<float>());
    w.set_(torch::randn({40, 24})); // new storage
    const auto third = cache.get(w);
    EXPECT_NE(third, second);
    EXPECT_EQ(third->panel(0)[1], w[1][0].item<float>());
    EXPECT_FALSE(cache.get(w.to(torch::kDouble))) << "only float weights are packed";
}

/// Past the budget of packed memory a weight is not packed, and its products keep LibTorch's path
/// with the same values; the bytes are given back when a packed weight goes.
TEST(PackedWeight, PastTheBudgetProductsKeepLibTorchsPath) {
    SKIP_WITHOUT_KERNEL();
    torch::manual_seed(9);
    const int64_t before = packedWeightBytes();
    const int64_t previous = setPackedWeightBudget(before + 32 * 64 * 4); // one panel of 32 rows x 64
    {
        torch::Tensor small = torch::randn({32, 64}), large = torch::randn({100, 64});
        PackedWeight a, b;
        EXPECT_TRUE(a.get(small)) << "32 x 64 floats fit the budget";
        EXPECT_EQ(packedWeightBytes(), before + 32 * 64 * 4);
        EXPECT_FALSE(b.get(large)) << "the budget is spent";
        Dense dense(64, 100, /*initialize=*/true);
        const torch::Tensor x = torch::randn({7, 64});
        torch::NoGradGuard noGrad;
        EXPECT_TRUE(torch::allclose(dense(x), torch::nn::functional::linear(x, dense->weight, dense->bias)));
    }
    EXPECT_EQ(packedWeightBytes(), before) << "destroyed packed weights give their bytes back";
    setPackedWeightBudget(previous);
}

/// Dense::forward takes the packed product under NoGradGuard and LibTorch's where a gradient is
/// needed; both give torch::nn::functional::linear's values.
TEST(PackedWeight, DenseUsesThePackedProductOnlyWithoutGradients) {
    torch::manual_seed(6);
    Dense dense(48, 70, /*initialize=*/true);
    const torch::Tensor x = torch::randn({2, 9, 48});
    const torch::Tensor ref = torch::nn::functional::linear(x, dense->weight, dense->bias).detach();
    {
        torch::NoGradGuard noGrad;
        EXPECT_TRUE(torch::allclose(dense(x), ref, 1e-5, 1e-5));
        PackedWeight fresh;
        EXPECT_EQ(packedLinear(x, dense->weight, dense->bias, fresh).defined(), packedGemmAvailable());
    }
    const torch::Tensor y = dense(x); // with gradients: LibTorch's product, and they flow
    EXPECT_TRUE(torch::allclose(y, ref, 1e-5, 1e-5));
    y.sum().backward();
    ASSERT_TRUE(dense->weight.grad().defined());
    EXPECT_TRUE(torch::allclose(dense->weight.grad(), x.sum(1).sum(0).expand({70, 48})));
}

/// The fused AdamW step writes the parameters through raw pointers; it moves their version
/// counters, so inference after a training step uses the new weights, not a stale packed copy.
TEST(PackedWeight, InferenceAfterAFusedTrainingStepSeesTheNewWeights) {
    torch::manual_seed(8);
    Dense dense(32, 40, /*initialize=*/true);
    const torch::Tensor x = torch::randn({20, 32});
    {
        torch::NoGradGuard noGrad;
        (void)dense(x); // packs the weight
    }
    torch::optim::AdamW optimizer(dense->parameters(), torch::optim::AdamWOptions(0.1));
    optimizer.zero_grad();
    dense(x).pow(2).sum().backward();
    adamwStep(optimizer);
    torch::NoGradGuard noGrad;
    const torch::Tensor ref = torch::nn::functional::linear(x, dense->weight, dense->bias);
    EXPECT_TRUE(torch::allclose(dense(x), ref, 1e-5, 1e-5));
}

} // namespace
} // namespace gwb::engine::detail
