#pragma once
// Capture points of one forward pass (engine-internal; Torch types). A model's forward takes an
// optional ForwardCapture*: null costs nothing, non-null gets the tensors below filled (batch-major,
// detached only by the caller's no-grad/inference mode).

#include <torch/torch.h>

#include <vector>

namespace gwb::engine {

struct BlockCapture {
    bool keepAttention = true; ///< copied from ForwardCapture: keep attention probabilities
    torch::Tensor h;           ///< B x T x d   block input (residual stream)
    torch::Tensor mixerInput;  ///< B x T x d   what the mixer saw (h for post-norm, LN1(h) for pre-norm)
    torch::Tensor z;           ///< B x T x r   reduced vectors (Grassmann)
    torch::Tensor g;           ///< B x T x d   geometric feature (Grassmann)
    torch::Tensor gate;        ///< B x T x d   gate a in (0,1) (Grassmann)
    torch::Tensor q;           ///< B x H x T x d_head  queries before scaling (attention)
    torch::Tensor k;           ///< B x H x T x d_head  keys (attention)
    torch::Tensor attn;        ///< B x H x T x T  attention probabilities (only when keepAttention)
};

struct ForwardCapture {
    bool keepAttention = true;        ///< false: do not keep T x T probabilities (long prompts)
    std::vector<BlockCapture> blocks; ///< one per block, filled in order
    torch::Tensor finalH;             ///< B x T x d  output of the last block (before the final LN)
};

} // namespace gwb::engine
