// The shared layers (Dense, feed-forward) and the language model around the blocks: embeddings,
// the block stack, final LayerNorm and the tied head (model-spec.md). The blocks are in
// grassmann_block.cpp and attention_block.cpp.

#include "model/lm_modules.h"

#include "kernels/linear_cross_entropy.h"

#include <cmath>

namespace gwb::engine {

torch::nn::LayerNorm detail::makeNorm(const ModelConfig& c) {
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.dModel}).eps(c.layerNormEps));
}

FeedForward detail::makeFfn(torch::nn::Module& owner, const ModelConfig& c, const torch::nn::Dropout& drop, bool init) {
    FeedForward f;
    f.in = owner.register_module("ffn_in", Dense(c.dModel, c.dFF, init));
    f.out = owner.register_module("ffn_out", Dense(c.dFF, c.dModel, init));
    f.drop = drop;
    f.tanhGelu = c.activation == Activation::GeluTanh;
    return f;
}

DenseImpl::DenseImpl(int64_t in, int64_t out, bool initialize) {
    weight = register_parameter("weight", torch::empty({out, in}));
    bias = register_parameter("bias", torch::empty({out}));
    if (initialize) { // what torch's LinearImpl::reset_parameters() does
        torch::NoGradGuard noGrad;
        torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        torch::nn::init::uniform_(bias, -bound, bound);
    }
}

torch::Tensor DenseImpl::forward(const torch::Tensor& x) {
    // Inference on the CPU: the engine's product over the weight packed once (packed_gemm.h), one
    // row (a generated token) included: it streams the packed weight once.
    if (torch::Tensor y = detail::packedLinear(x, weight, bias, m_packed); y.defined()) return y;
    // One row elsewhere: a matrix-vector product. The 1-row GEMM path of OpenBLAS is 3-6x slower at
    // these sizes (80 us against 14 us for 256 -> 1024) and was most of a token step.
    if (x.dim() >= 1 && x.numel() == x.size(-1)) {
        std::vector<int64_t> sizes = x.sizes().vec();
        sizes.back() = weight.size(0);
        return torch::addmv(bias, weight, x.reshape({-1})).view(sizes);
    }
    return torch::nn::functional::linear(x, weight, bias);
}

torch::Tensor FeedForward::operator()(const torch::Tensor& x) {
    // Exact (erf) GELU is torch's default; GPT-2's is the tanh approximation.
    return detail::overTokenBlocks(x, [&](int64_t t0, int64_t n) {
        const torch::Tensor xs = n < 0 ? x : x.narrow(1, t0, n);
        return out(drop(tanhGelu ? torch::gelu(in(xs), "tanh") : torch::gelu(in(xs))));
    });
}

namespace detail {
torch::Tensor overTokenBlocks(const torch::Tensor& x, const std::function<torch::Tensor(int64_t, int64_t)>& fn) {
    constexpr int64_t kBlock = 1024;
    const int64_t T = x.dim() >= 3 ? x.size(1) : 0;
    if (T <= kBlock || (torch::GradMode::is_enabled() && x.requires_grad())) return fn(0, -1);
    std::vector<torch::Tensor> parts;
    for (int64_t t0 = 0; t0 < T; t0 += kBlock)
        parts.push_back(fn(t0, std::min(kBlock, T - t0)));
    return torch::cat(parts, 1);
}
} // namespace detail

torch::Tensor FeedForward::operator()(const torch::Tensor& x, const BlockEdit* edit, BlockRecord* record) {
    torch::Tensor f = (*this)(x);
    if (record) record->ffnIn = x;
    if (edit && edit->site == BlockEdit::Site::Ffn) f = edit->apply(f);
    if (edit && edit->freezeFfn.defined()) f = edit->freezeFfn;
    if (record) record->ffn = f;
    return f;
}

// ---------------------------------------------------------------------------------------------
LanguageModelImpl::LanguageModelImpl(const ModelConfig& config, bool initialize) : m_config(config) {
    // The embedding tables are the largest parameters: without initialize they are not even filled
    // by torch's default N(0, 1) (an Embedding given _weight takes it as is).
    auto table = [&](int64_t rows) {
        torch::nn::EmbeddingOptions o(rows, config.dModel);
        if (!initialize) o._weight(torch::empty({rows, config.dModel}));
        return torch::nn::Embedding(o);
    };
    tokEmbed = register_module("tok_embed", table(config.vocabSize));
    posEmbed = register_module("pos_embed", table(config.maxLen));
    m_drop = register_module("drop", torch::nn::Dropout(config.dropout));
    m_blockList = register_module("blocks", torch::nn::ModuleList());
    for (int64_t l = 0; l < config.nLayers; ++l) {
        std::shared_ptr<BlockImpl> block;
        if (config.kind == ModelKind::Grassmann)
            block = std::make_shared<GrassmannBlockImpl>(config, config.layerOffsets.at(static_cast<size_t>(l)),
                                                         initialize);
        else
            block = std::make_shared<AttentionBlockImpl>(config, initialize);
        m_blockList->push_back(block);
        m_blocks.push_back(block);
    }
    lnFinal = register_module("ln_final", detail::makeNorm(config));
    if (initialize) resetParameters();
}

void LanguageModelImpl::resetParameters() {
    torch::NoGradGuard noGrad;
    for (auto& item : named_parameters()) {
        const std::string& name = item.key();
        torch::Tensor& p = item.value();
        const bool isNorm = name.rfind("ln_final.", 0) == 0 || name.find(".ln1.") != std::string::npos ||
                            name.find(".ln2.") != std::string::npos || name.find(".ln_mix.") != std::string::npos;
        if (isNorm) {
            if (name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0)
                p.fill_(1.0);
            else
                p.zero_();
        } else if (name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0) {
            p.zero_();
        } else {
            p.normal_(0.0, 0.02);
        }
    }
}

torch::Tensor LanguageModelImpl::embed(const torch::Tensor& ids) {
    const int64_t T = ids.size(1);
    TORCH_CHECK(T <= m_config.maxLen, "sequence of ", T, " tokens exceeds max_len ", m_config.maxLen);
    const torch::Tensor pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(ids.device()));
    return tokEmbed(ids) + posEmbed(pos).unsqueeze(0);
}

torch::Tensor LanguageModelImpl::forwardFromEmbedding(const torch::Tensor& h0, ForwardCapture* capture) {
    return head(blocksFrom(h0, capture));
}

torch::Tensor LanguageModelImpl::forwardHidden(const torch::Tensor& ids, ForwardCapture* capture) {
    return blocksFrom(embed(ids), capture);
}

torch::Tensor LanguageModelImpl::blocksFrom(const torch::Tensor& h0, ForwardCapture* capture) {
    torch::Tensor h = m_drop(h0);
    if (capture) {
        BlockCapture proto;
        proto.keepAttention = capture->keepAttention;
        capture->blocks.assign(m_blocks.size(), proto);
    }
    for (size_t l = 0; l < m_blocks.size(); ++l)
        h = m_blocks[l]->forward(h, capture ? &capture->blocks[l] : nullptr);
    if (capture) capture->finalH = h;
    return h;
}

torch::Tensor LanguageModelImpl::forward(const torch::Tensor& ids, ForwardCapture* capture) {
    return forwardFromEmbedding(embed(ids), capture);
}

torch::Tensor LanguageModelImpl::nextTokenLoss(const torch::Tensor& h, const torch::Tensor& targets) {
    const torch::Tensor x = lnFinal(h);
    return detail::linearCrossEntropy(x.reshape({-1, x.size(-1)}), tokEmbed->weight, targets.reshape({-1}));
}

torch::Tensor LanguageModelImpl::head(const torch::Tensor& h) {
    const torch::Tensor x = lnFinal(h);
    if (torch::Tensor y = detail::packedLinear(x, tokEmbed->weight, {}, headPacked); y.defined()) return y;
    if (x.numel() == x.size(-1)) { // one position (generation): E x as a matrix-vector product, 3.5x faster
        std::vector<int64_t> sizes = x.sizes().vec();
        sizes.back() = tokEmbed->weight.size(0);
        return torch::mv(tokEmbed->weight, x.reshape({-1})).view(sizes);
    }
    return torch::matmul(x, tokEmbed->weight.t());
}

} // namespace gwb::engine
