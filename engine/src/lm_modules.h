#pragma once
// The two language models of model-spec.md as torch::nn modules (engine-internal).
// Parameter names match parameterSpecs() in config_io.h; they are the .gwb tensor names.

#include "forward_capture.h"
#include "gwb/engine/config.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace gwb::engine {

/// Common interface of a block: input B x T x d -> output B x T x d.
class BlockImpl : public torch::nn::Module {
public:
    virtual torch::Tensor forward(const torch::Tensor& h, BlockCapture* capture) = 0;
};

/// Position-wise feed-forward: Linear(d, d_ff) -> GELU (erf) -> Dropout -> Linear(d_ff, d).
struct FeedForward {
    torch::nn::Linear in{nullptr}, out{nullptr};
    torch::nn::Dropout drop{nullptr};
    torch::Tensor operator()(const torch::Tensor& x);
};

/// Causal Grassmann mixing block (model-spec steps 1-9), vectorized over T.
class GrassmannBlockImpl : public BlockImpl {
public:
    GrassmannBlockImpl(const ModelConfig& config, std::vector<int> offsets);
    torch::Tensor forward(const torch::Tensor& h, BlockCapture* capture) override;

    /// Mixer steps 1-7 on x (B x T x d): returns g and the gate a; z into *zOut when non-null.
    std::pair<torch::Tensor, torch::Tensor> geometry(const torch::Tensor& x, torch::Tensor* zOut);
    const std::vector<int>& offsets() const { return m_offsets; }

    torch::nn::LayerNorm ln1{nullptr}, lnMix{nullptr}, ln2{nullptr};
    torch::nn::Linear wRed{nullptr}, wPlu{nullptr}, wGate{nullptr};

private:
    ModelConfig m_config;
    std::vector<int> m_offsets;
    FeedForward m_ffn;
    torch::nn::Dropout m_drop{nullptr};
    torch::Tensor m_idxI, m_idxJ; ///< C(r,2) pair indices i < j in lexicographic order (int64, model's device)
};

/// Causal multi-head self-attention block of the baseline.
class AttentionBlockImpl : public BlockImpl {
public:
    explicit AttentionBlockImpl(const ModelConfig& config);
    torch::Tensor forward(const torch::Tensor& h, BlockCapture* capture) override;

    torch::nn::LayerNorm ln1{nullptr}, lnMix{nullptr}, ln2{nullptr};
    torch::nn::Linear qkv{nullptr}, outProj{nullptr};

private:
    torch::Tensor attend(const torch::Tensor& x, BlockCapture* capture);
    ModelConfig m_config;
    FeedForward m_ffn;
    torch::nn::Dropout m_drop{nullptr};
};

/// Embeddings + N blocks + final LayerNorm + head tied to the token table.
class LanguageModelImpl : public torch::nn::Module {
public:
    explicit LanguageModelImpl(const ModelConfig& config);

    /// ids: B x T int64 (T <= maxLen) -> logits B x T x V.
    torch::Tensor forward(const torch::Tensor& ids, ForwardCapture* capture = nullptr);
    /// h0 = E[x] + P[t] (before dropout): B x T x d.
    torch::Tensor embed(const torch::Tensor& ids);
    /// From the embedding output (dropout applied here) to logits.
    torch::Tensor forwardFromEmbedding(const torch::Tensor& h0, ForwardCapture* capture = nullptr);
    /// Final LayerNorm + tied head on any state B x T x d (logit lens).
    torch::Tensor head(const torch::Tensor& h);

    /// N(0, 0.02) weights, zero biases, LayerNorm 1/0.
    void resetParameters();

    const ModelConfig& config() const { return m_config; }
    const std::vector<std::shared_ptr<BlockImpl>>& blocks() const { return m_blocks; }

    torch::nn::Embedding tokEmbed{nullptr}, posEmbed{nullptr};
    torch::nn::LayerNorm lnFinal{nullptr};

private:
    ModelConfig m_config;
    torch::nn::Dropout m_drop{nullptr};
    torch::nn::ModuleList m_blockList{nullptr};
    std::vector<std::shared_ptr<BlockImpl>> m_blocks;
};

} // namespace gwb::engine
