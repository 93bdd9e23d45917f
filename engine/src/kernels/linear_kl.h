#pragma once
// The tuned lens's loss without autograd over N x V logits: KL(p_F || softmax(y_s E^T)) for several
// lens outputs y_s against one target distribution p_F = softmax(y_F E^T), and its gradient with
// respect to each y_s, computed over row chunks.

#include <torch/torch.h>

#include <vector>

namespace gwb::engine::detail {

struct LinearKl {
    std::vector<double> kl;          ///< by s: mean over rows of KL(p_F || q_s), in nats
    std::vector<torch::Tensor> grad; ///< by s: d kl[s] / d y_s (N x d)
};

/// For yF and each ys[s] (N x d, the final LayerNorm's outputs) and the tied head E (V x d):
/// q_s = softmax(ys[s] E^T), p_F = softmax(yF E^T), the mean over rows of sum_v p_F (log p_F - log q_s)
/// and its gradient (q_s - p_F) E / N. The target's chunk of logits is made once and read by every
/// s; a chunk's logits become q_s - p_F in place, so per s and chunk there are two products of the
/// head's size and four passes over the chunk (log-sum-exp, the dot with p_F, exp, subtract) where
/// autograd through log_softmax and the KL makes about ten over the whole N x V block.
/// chunkRows > 0 overrides the chunk size (for tests). Runs without recording gradients.
LinearKl linearKl(const torch::Tensor& yF, const std::vector<torch::Tensor>& ys, const torch::Tensor& E,
                  int64_t chunkRows = 0);

} // namespace gwb::engine::detail
