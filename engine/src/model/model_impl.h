#pragma once
// What a gwb::engine::Model holds (engine-internal; Torch types).

#include "gwb/engine/model.h"
#include "model/lm_modules.h"

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <string>

namespace gwb::engine {

struct Model::Impl {
    ModelConfig config;
    std::shared_ptr<LanguageModelImpl> net;
    torch::Device device{torch::kCPU};
    TokenizerPtr tokenizer;
    std::string path;
    std::string trainingSummary = "{}";
    /// Serializes forward passes that switch train/eval mode (trace vs training on one model).
    std::mutex mutex;
    /// The tracer's rows x V logits buffer, kept between traces (guarded by `mutex`): a fresh one
    /// is a fresh mapping, and its first write page-faults (15 ms of a 50 ms trace of the bundled
    /// model, for 8 MB, on the development machine).
    torch::Tensor headBuffer;
};

} // namespace gwb::engine
