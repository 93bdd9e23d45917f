#pragma once
// A tensor's values as the engine's std-only FloatArray (gwb/engine/array.h): detached, on the
// CPU, in float32, with the tensor's shape. The runs hand their results out this way.

#include "gwb/engine/array.h"

#include <torch/torch.h>

#include <vector>

namespace gwb::engine {

inline FloatArray toArray(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
    const float* p = c.data_ptr<float>();
    return FloatArray(c.sizes().vec(), std::vector<float>(p, p + c.numel()));
}

} // namespace gwb::engine
