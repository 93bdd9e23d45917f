#pragma once
// One AdamW step over every parameter in a single pass per element, on the optimizer's own state.

#include <torch/torch.h>

namespace gwb::engine::detail {

/// Does what optimizer.step() does (LibTorch's AdamW: decoupled weight decay, bias-corrected
/// moments, per-group lr / betas / eps / weight decay), with the state kept in the optimizer (so
/// its save, load and resume are unchanged). LibTorch's step runs about ten element-wise passes
/// per parameter tensor, some allocating: 54 ms for the 6.6M parameters of the training
/// benchmark's model on this 2-core machine; here one fused pass, split over the engine's threads.
/// Float CPU parameters with dense gradients only; anything else (another device or dtype,
/// amsgrad, a sparse gradient) goes to optimizer.step().
void adamwStep(torch::optim::AdamW& optimizer);

} // namespace gwb::engine::detail
