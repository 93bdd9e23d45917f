#pragma once
// What a gwb::engine::Model holds (engine-internal; Torch types).

#include "gwb/engine/model.h"
#include "model/lm_modules.h"

#include <torch/torch.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

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
    /// modelWeightsHash's last result and the (storage, version counter) of every parameter it saw:
    /// a window that matches a dictionary to its models after every run hashes 385 MB once, not
    /// each time, and an optimizer step, a load or a copy_ into a weight makes it hash again.
    std::mutex hashMutex;
    std::string weightsHash;
    std::vector<std::pair<const void*, int64_t>> hashStamp;
};

} // namespace gwb::engine
