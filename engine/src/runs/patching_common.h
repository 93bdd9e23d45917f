#pragma once
// What the exact sweeps (patching.cpp) and the attribution sweeps (patching_attribution.cpp) share:
// the record of a run, the metric position, the model's lock and eval-mode preparation.

#include "gwb/engine/patching.h"

#include "model/model_impl.h"

#include <limits>
#include <mutex>
#include <vector>

namespace gwb::engine::patching_detail {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// Everything recorded of one run.
struct RunRecord {
    std::vector<BlockRecord> blocks; ///< per block, batch 1, whole sequence
    torch::Tensor final;             ///< 1 x T x d: h^N, before the final LayerNorm
    torch::Tensor logprob;           ///< T x 1: log p(next token) at t (T-1: 0), when asked for
};

inline int64_t metricPosition(const PatchRequest& r) {
    return r.position < 0 ? static_cast<int64_t>(r.clean.size()) - 1 : r.position;
}

inline torch::Tensor idsTensor(const std::vector<int64_t>& ids, const torch::Device& device) {
    return torch::tensor(ids, torch::kLong).view({1, -1}).to(device);
}

/// A model runs one computation at a time.
struct Lock {
    explicit Lock(const Model& model) : guard(model.impl().mutex) {}
    std::lock_guard<std::mutex> guard;
};

/// The models' common preparation: eval mode, no gradients.
struct Prepared {
    Prepared(const Model& model) : net(*model.impl().net), device(model.impl().device) { net.eval(); }
    LanguageModelImpl& net;
    torch::Device device;
    torch::NoGradGuard noGrad;
};

} // namespace gwb::engine::patching_detail
