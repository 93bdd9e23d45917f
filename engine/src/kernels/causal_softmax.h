#pragma once
// The attention weights of the causal Transformer: softmax(scale * scores) with the future masked.

#include <torch/torch.h>

namespace gwb::engine::detail {

/// softmax over the last dimension of scale * scores, where scores (... x n x keys) are query rows
/// offset .. offset + n - 1 against keys 0 .. keys - 1 and each row sees the keys up to its own
/// position (the rest get weight 0, as after masking them with -inf). Differentiable. Float CPU
/// tensors use one pass per row over the visible keys only (row_scan.h's causalSoftmaxRows and its
/// backward), in place of a scale, a mask fill and a softmax over the whole square and their three
/// backward passes; other devices and dtypes use exactly those torch operations.
torch::Tensor causalSoftmax(const torch::Tensor& scores, double scale, int64_t offset);

} // namespace gwb::engine::detail
