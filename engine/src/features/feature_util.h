#pragma once
// Shared pieces of the features folder (engine-internal, Torch types).

#include "gwb/engine/array.h"
#include "gwb/engine/features.h"

#include <torch/torch.h>

#include <string>

namespace gwb::engine::features {

/// CPU float copy of `t` as a FloatArray.
FloatArray toArray(const torch::Tensor& t);
/// Tensor view of `a` (CPU, float), copied to `device`.
torch::Tensor toTensor(const FloatArray& a, const torch::Device& device = torch::kCPU);

/// Feature activations of pre-activations `pre` (rows x d_sae): ReLU, then for "topk" the k
/// largest kept (ties broken by torch::topk) and the rest set to 0.
torch::Tensor activate(const torch::Tensor& pre, const std::string& architecture, int64_t k);

/// z of rows (n x d_in) under a dictionary: activate(pre) with pre = (x - b_dec) W_enc + b_enc, or
/// x W_enc + b_enc for a transcoder (its b_dec is in the target's space).
torch::Tensor encodeRows(const Dictionary& d, const torch::Tensor& rows);

/// D of an offset site "offset.L.D", 0 for every other site (rows t < D carry no pair).
int64_t offsetOfSite(const std::string& site);

} // namespace gwb::engine::features
