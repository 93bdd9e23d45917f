#pragma once
// Engine-internal incremental decoder over a LanguageModelImpl (Torch types): prefill the prompt in
// one batched pass, then one token at a time with per-layer state (model-spec "incremental decoding").

#include "model/lm_modules.h"

#include <torch/torch.h>

#include <variant>
#include <vector>

namespace gwb::engine {

class IncrementalDecoder {
public:
    /// The model must be in eval mode; calls run under the caller's no-grad guard.
    explicit IncrementalDecoder(LanguageModelImpl& net);

    /// ids: 1 x T int64 on the model's device (1 <= T <= max_len) -> the last position's logits
    /// 1 x 1 x V (the head runs on that row only). Resets the state.
    torch::Tensor prefill(const torch::Tensor& ids);
    /// Appends one token -> its logits 1 x 1 x V. Throws when the context is already max_len long.
    torch::Tensor next(int64_t id);
    int64_t length() const { return m_length; }

private:
    LanguageModelImpl& m_net;
    std::vector<std::variant<GrassmannState, AttentionState>> m_states; ///< one per block
    int64_t m_length = 0;
};

} // namespace gwb::engine
