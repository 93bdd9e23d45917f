#include "kernels/adamw_step.h"

#include "gwb/engine/device.h"
#include "trace/parallel_for.h"

#include <cmath>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace gwb::engine::detail {
namespace {

/// The key LibTorch's optimizers file a parameter's state under: the TensorImpl's address, as a
/// string in LibTorch 1.x (c10::guts::to_string, an ostream of the pointer) and as the pointer
/// itself in later versions. Map is the optimizer's state map type.
template <class Map> typename Map::key_type stateKey(const torch::Tensor& p) {
    using Key = typename Map::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream s;
        s << p.unsafeGetTensorImpl();
        return s.str();
    } else {
        return static_cast<Key>(p.unsafeGetTensorImpl());
    }
}

bool fusable(const torch::Tensor& t) {
    return t.defined() && t.is_cpu() && t.scalar_type() == torch::kFloat && t.is_contiguous() && !t.is_sparse();
}

/// One parameter's slice of work, with the step's constants in float as LibTorch's CPU kernels
/// use them.
struct Slice {
    float* p;
    const float* g;
    float* m;
    float* v;
    int64_t begin, end;
    bool decay;
    float keep; // 1 - lr * weight_decay
    float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
    float sqrtBias2; // sqrt(1 - beta2^step)
    float eps;
    float stepSize; // lr / (1 - beta1^step)
};

void run(const Slice& s) {
    float* __restrict p = s.p;
    const float* __restrict g = s.g;
    float* __restrict m = s.m;
    float* __restrict v = s.v;
    for (int64_t i = s.begin; i < s.end; ++i) {
        // The order of LibTorch's AdamW::step: p *= 1 - lr wd; m = m b1 + (1 - b1) g;
        // v = v b2 + (1 - b2) g g; p -= step_size m / (sqrt(v) / sqrt(bias2) + eps).
        float pi = s.decay ? p[i] * s.keep : p[i];
        const float gi = g[i];
        const float mi = m[i] * s.beta1 + s.oneMinusBeta1 * gi;
        const float vi = v[i] * s.beta2 + s.oneMinusBeta2 * gi * gi;
        pi -= s.stepSize * mi / (std::sqrt(vi) / s.sqrtBias2 + s.eps);
        p[i] = pi;
        m[i] = mi;
        v[i] = vi;
    }
}

} // namespace

void adamwStep(torch::optim::AdamW& optimizer) {
    auto& state = optimizer.state();
    using Map = std::decay_t<decltype(state)>;
    // Everything fusable, or LibTorch's step for all (decided before anything changes).
    for (auto& group : optimizer.param_groups()) {
        if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) return (void)optimizer.step();
        for (const torch::Tensor& p : group.params()) {
            if (!p.grad().defined()) continue;
            if (!fusable(p) || !fusable(p.grad())) return (void)optimizer.step();
            const auto it = state.find(stateKey<Map>(p));
            if (it != state.end()) {
                const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
                if (!fusable(st.exp_avg()) || !fusable(st.exp_avg_sq())) return (void)optimizer.step();
            }
        }
    }
    torch::NoGradGuard noGrad;
    constexpr int64_t kBlock = 32768;
    std::vector<Slice> work;
    for (auto& group : optimizer.param_groups()) {
        const auto& o = static_cast<const torch::optim::AdamWOptions&>(group.options());
        for (const torch::Tensor& p : group.params()) {
            if (!p.grad().defined()) continue;
            auto& slot = state[stateKey<Map>(p)];
            if (!slot) {
                auto fresh = std::make_unique<torch::optim::AdamWParamState>();
                fresh->step(0);
                fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
                slot = std::move(fresh);
            }
            auto& st = static_cast<torch::optim::AdamWParamState&>(*slot);
            st.step(st.step() + 1);
            const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
            const double bias1 = 1 - std::pow(beta1, static_cast<double>(st.step()));
            const double bias2 = 1 - std::pow(beta2, static_cast<double>(st.step()));
            Slice s{p.data_ptr<float>(),
                    p.grad().data_ptr<float>(),
                    st.exp_avg().data_ptr<float>(),
                    st.exp_avg_sq().data_ptr<float>(),
                    0,
                    0,
                    o.weight_decay() != 0,
                    static_cast<float>(1 - o.lr() * o.weight_decay()),
                    static_cast<float>(beta1),
                    static_cast<float>(1 - beta1),
                    static_cast<float>(beta2),
                    static_cast<float>(1 - beta2),
                    static_cast<float>(std::sqrt(bias2)),
                    static_cast<float>(o.eps()),
                    static_cast<float>(o.lr() / bias1)};
            for (int64_t b = 0; b < p.numel(); b += kBlock) {
                s.begin = b;
                s.end = std::min(p.numel(), b + kBlock);
                work.push_back(s);
            }
        }
    }
    parallelFor(work.size(), threads(), [&](size_t i) { run(work[i]); });
    // The parameters changed in place behind LibTorch's back: move their version counters as an
    // in-place op would, so that what is keyed by them (the packed inference weights) sees it.
    for (auto& group : optimizer.param_groups())
        for (const torch::Tensor& p : group.params())
            if (p.grad().defined()) torch::autograd::impl::bump_version(p);
}

} // namespace gwb::engine::detail
