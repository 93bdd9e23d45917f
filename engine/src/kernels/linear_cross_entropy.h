#pragma once
// The training loss of the tied head without the N x V logits: mean cross-entropy of x E^T
// against the targets, computed over row chunks in forward and backward.

#include <torch/torch.h>

namespace gwb::engine::detail {

/// mean_i [log sum_v exp(x_i . E_v) - x_i . E_{t_i}] for x (N x d, the final LayerNorm's output),
/// E (V x d, the tied token table) and targets t (N, int64): the value and gradients of
/// nll_loss(log_softmax(x E^T), t). It works on chunks of rows whose logits stay under 16 MiB, so
/// no N x V tensor is made (at a batch of 8 x 256 and V = 8000 one was 64 MB, above glibc's largest
/// mmap threshold: fresh pages, page faults, every step). When a gradient is wanted, forward also
/// computes both gradients chunk by chunk (softmax - onehot is known once the chunk's log-sum-exp
/// is) and backward scales them: three products of the head's size, none recomputed. On the CPU in
/// float the rows go through row_scan.h's kernels. Targets outside [0, V) are an error.
/// chunkRows > 0 overrides the chunk size (for tests).
torch::Tensor linearCrossEntropy(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& targets,
                                 int64_t chunkRows = 0);

/// Rows per chunk for a vocabulary of V (at least 1).
int64_t linearCrossEntropyChunkRows(int64_t V);

} // namespace gwb::engine::detail
