// detail::adamwStep (the fused AdamW step the trainer uses) against LibTorch's AdamW::step on the
// same parameters, gradients and groups, over several steps with a changing learning rate; its
// state is LibTorch's own, so an optimizer saved after fused steps resumes in LibTorch's.
#include "kernels/adamw_step.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

namespace gwb::engine::detail {
namespace {

/// Two groups as the trainer makes them: matrices with weight decay, the rest without.
std::vector<torch::Tensor> makeParams(torch::Dtype dtype) {
    torch::manual_seed(11);
    std::vector<torch::Tensor> ps = {torch::randn({70000}, dtype), torch::randn({33, 17}, dtype),
                                     torch::randn({5}, dtype), torch::randn({40000, 3}, dtype)};
    for (auto& p : ps)
        p.requires_grad_(true);
    return ps;
}

std::unique_ptr<torch::optim::AdamW> makeOptimizer(std::vector<torch::Tensor>& ps) {
    auto options = [](double wd) {
        auto o = std::make_unique<torch::optim::AdamWOptions>(1e-2);
        o->betas(std::make_tuple(0.9, 0.98)).eps(1e-8).weight_decay(wd);
        return o;
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{ps[1], ps[3]}, options(0.1));
    groups.emplace_back(std::vector<torch::Tensor>{ps[0], ps[2]}, options(0.0));
    return std::make_unique<torch::optim::AdamW>(std::move(groups), torch::optim::AdamWOptions(1e-2));
}

void setGradients(std::vector<torch::Tensor>& ps, int step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < ps.size(); ++i) {
        if (step == 2 && i == 2) { // a parameter without a gradient this step is skipped
            ps[i].mutable_grad() = torch::Tensor();
            continue;
        }
        ps[i].mutable_grad() = torch::randn_like(ps[i]) * (i == 0 ? 1e-4 : 1.0);
    }
}

/// max |a - b| / (|b| + 1e-3): relative for parameters of ordinary size, and against the step's
/// scale (lr = 1e-2) for those near 0, where one float rounding of p is all that can differ.
double maxRelative(const torch::Tensor& a, const torch::Tensor& b) {
    return ((a - b).abs() / (b.abs() + 1e-3)).max().item<double>();
}

TEST(AdamWStep, MatchesLibTorchsAdamWOverSeveralSteps) {
    auto fusedParams = makeParams(torch::kFloat), refParams = makeParams(torch::kFloat);
    auto fused = makeOptimizer(fusedParams), ref = makeOptimizer(refParams);
    for (int step = 0; step < 6; ++step) {
        for (auto* opt : {fused.get(), ref.get()})
            for (auto& group : opt->param_groups()) // warm-up / cosine: the lr changes every step
                static_cast<torch::optim::AdamWOptions&>(group.options()).lr(1e-2 / (1 + step));
        setGradients(fusedParams, step);
        setGradients(refParams, step);
        adamwStep(*fused);
        ref->step();
        for (size_t i = 0; i < fusedParams.size(); ++i) {
            SCOPED_TRACE("step " + std::to_string(step) + ", parameter " + std::to_string(i));
            EXPECT_LE(maxRelative(fusedParams[i].detach(), refParams[i].detach()), 3e-6);
            // The parameters moved (the comparison is not of two unchanged tensors).
            if (step == 0) {
                EXPECT_GT((fusedParams[i] - makeParams(torch::kFloat)[i]).abs().max().item<double>(), 1e-4);
            }
        }
    }
    // The same state entries, with the same step counts (parameter 2 skipped one step).
    ASSERT_EQ(fused->state().size(), ref->state().size());
    for (auto& [key, st] : ref->state()) {
        (void)key;
        EXPECT_TRUE(static_cast<torch::optim::AdamWParamState&>(*st).step() == 6 ||
                    static_cast<torch::optim::AdamWParamState&>(*st).step() == 5);
    }
}

TEST(AdamWStep, StateSavedAfterFusedStepsResumesInLibTorch) {
    auto fusedParams = makeParams(torch::kFloat), refParams = makeParams(torch::kFloat);
    auto fused = makeOptimizer(fusedParams), ref = makeOptimizer(refParams);
    for (int step = 0; step < 3; ++step) {
        setGradients(fusedParams, step);
        setGradients(refParams, step);
        adamwStep(*fused);
        ref->step();
    }
    // Save the fused optimizer, load it into a fresh LibTorch AdamW over copies of its parameters,
    // and take one more LibTorch step on both sides.
    std::stringstream buffer;
    {
        torch::serialize::OutputArchive archive;
        fused->save(archive);
        archive.save_to(buffer);
    }
    std::vector<torch::Tensor> resumedParams;
    for (const auto& p : fusedParams)
        resumedParams.push_back(p.detach().clone().requires_grad_(true));
    auto resumed = makeOptimizer(resumedParams);
    {
        torch::serialize::InputArchive archive;
        archive.load_from(buffer);
        resumed->load(archive);
    }
    setGradients(resumedParams, 3);
    setGradients(refParams, 3);
    resumed->step();
    ref->step();
    for (size_t i = 0; i < refParams.size(); ++i)
        EXPECT_LE(maxRelative(resumedParams[i].detach(), refParams[i].detach()), 3e-6) << i;
}

TEST(AdamWStep, OtherDtypesAndAmsgradUseLibTorchsStep) {
    auto params = makeParams(torch::kDouble), refParams = makeParams(torch::kDouble);
    auto opt = makeOptimizer(params), ref = makeOptimizer(refParams);
    setGradients(params, 0);
    setGradients(refParams, 0);
    adamwStep(*opt);
    ref->step();
    for (size_t i = 0; i < params.size(); ++i)
        EXPECT_TRUE(torch::equal(params[i], refParams[i])) << i; // the very same computation

    auto fp = makeParams(torch::kFloat), rp = makeParams(torch::kFloat);
    torch::optim::AdamW a(fp, torch::optim::AdamWOptions(1e-2).amsgrad(true));
    torch::optim::AdamW b(rp, torch::optim::AdamWOptions(1e-2).amsgrad(true));
    setGradients(fp, 0);
    setGradients(rp, 0);
    adamwStep(a);
    b.step();
    for (size_t i = 0; i < fp.size(); ++i)
        EXPECT_TRUE(torch::equal(fp[i], rp[i])) << i;
}

} // namespace
} // namespace gwb::engine::detail
