// One forward pass with every capture point on, converted into a Trace; saliency.

#include "device_errors.h"
#include "gwb/engine/tracer.h"

#include "model_impl.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace gwb::engine {

namespace {

FloatArray toArray(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
    const float* p = c.data_ptr<float>();
    return FloatArray(c.sizes().vec(), std::vector<float>(p, p + c.numel()));
}

void checkCancel(const std::atomic<bool>* cancel, const ProgressFn& progress, int64_t done, int64_t total) {
    if ((cancel && cancel->load()) || (progress && !progress(done, total))) throw Cancelled();
}

TracePtr runTrace(const Model& model, std::vector<TraceToken> tokens, const std::string& prompt, const TraceOptions& o,
                  const ProgressFn& progress, const std::atomic<bool>* cancel) {
    Model::Impl& m = model.impl();
    const ModelConfig& c = m.config;
    if (tokens.empty()) throw std::invalid_argument("empty prompt: nothing to trace");
    auto out = std::make_shared<Trace>();
    const int64_t limit = o.maxTokens > 0 ? std::min(o.maxTokens, c.maxLen) : c.maxLen;
    if (static_cast<int64_t>(tokens.size()) > limit) {
        out->droppedTokens = static_cast<int64_t>(tokens.size()) - limit;
        tokens.resize(static_cast<size_t>(limit));
    }
    const int64_t T = static_cast<int64_t>(tokens.size());
    for (const TraceToken& t : tokens)
        if (t.id < 0 || t.id >= c.vocabSize)
            throw std::invalid_argument("token id " + std::to_string(t.id) + " is outside the vocabulary of " +
                                        std::to_string(c.vocabSize));
    const int64_t N = c.nLayers;
    const int64_t total = 2 + N + (o.lensTopK > 0 ? N + 1 : 0);
    int64_t done = 0;
    checkCancel(cancel, progress, done, total);

    std::vector<int64_t> idv;
    for (const TraceToken& t : tokens)
        idv.push_back(t.id);

    std::lock_guard<std::mutex> lock(m.mutex);
    torch::InferenceMode inference;
    m.net->eval();
    const torch::Tensor ids = torch::tensor(idv, torch::kLong).view({1, T}).to(m.device);
    ForwardCapture cap;
    cap.keepAttention = T <= o.denseAttentionLimit;
    const torch::Tensor logits = m.net->forward(ids, &cap)[0].to(torch::kFloat); // T x V
    checkCancel(cancel, progress, ++done, total);

    out->modelPath = m.path;
    out->modelName = model.displayName();
    out->config = c;
    out->device = m.device.str();
    out->prompt = prompt;
    out->tokens = std::move(tokens);

    // Surprisal of x_t is read from the prediction at t-1.
    const torch::Tensor logp = torch::log_softmax(logits, -1);
    out->surprisal.assign(static_cast<size_t>(T), std::numeric_limits<float>::quiet_NaN());
    if (T > 1) {
        const torch::Tensor next = ids[0].narrow(0, 1, T - 1).view({T - 1, 1});
        const torch::Tensor s = (-logp.narrow(0, 0, T - 1).gather(1, next)).view({T - 1}).to(torch::kCPU).contiguous();
        std::copy(s.data_ptr<float>(), s.data_ptr<float>() + (T - 1), out->surprisal.begin() + 1);
    }
    if (o.keepLogits) out->logits = toArray(logits);

    for (int64_t l = 0; l < N; ++l) {
        const BlockCapture& b = cap.blocks[static_cast<size_t>(l)];
        LayerTrace lt;
        lt.h = toArray(b.h[0]);
        lt.mixerInput = toArray(b.mixerInput[0]);
        if (c.kind == ModelKind::Grassmann) {
            GrassmannLayerTrace g;
            const auto* block = dynamic_cast<GrassmannBlockImpl*>(m.net->blocks()[static_cast<size_t>(l)].get());
            g.offsets = block->offsets();
            g.z = toArray(b.z[0]);
            g.g = toArray(b.g[0]);
            g.gate = toArray(b.gate[0]);
            if (o.keepWeights) {
                g.wRed = toArray(block->wRed->weight);
                g.bRed = toArray(block->wRed->bias);
                g.wPlu = toArray(block->wPlu->weight);
                g.bPlu = toArray(block->wPlu->bias);
            }
            lt.grassmann = std::move(g);
        } else {
            AttentionLayerTrace a;
            a.nHeads = c.nHeads;
            a.q = toArray(b.q[0]);
            a.k = toArray(b.k[0]);
            if (b.attn.defined()) a.attn = toArray(b.attn[0]);
            lt.attention = std::move(a);
        }
        out->layers.push_back(std::move(lt));
        checkCancel(cancel, progress, ++done, total);
    }
    out->finalH = toArray(cap.finalH[0]);

    if (o.lensTopK > 0) {
        const int64_t K = std::min<int64_t>(o.lensTopK, c.vocabSize);
        out->lensTopIds = IntArray::zeros({N + 1, T, K});
        out->lensTopLogProbs = FloatArray::zeros({N + 1, T, K});
        out->lensNextRank = IntArray::zeros({N + 1, T});
        out->lensNextLogProb = FloatArray::zeros({N + 1, T});
        for (int64_t l = 0; l <= N; ++l) {
            const torch::Tensor h = l < N ? cap.blocks[static_cast<size_t>(l)].h : cap.finalH;
            const torch::Tensor lp = torch::log_softmax(m.net->head(h)[0].to(torch::kFloat), -1);
            const auto top = lp.topk(K, -1);
            const torch::Tensor vals = std::get<0>(top).to(torch::kCPU).contiguous();
            const torch::Tensor idx = std::get<1>(top).to(torch::kCPU, torch::kInt).contiguous();
            std::copy(vals.data_ptr<float>(), vals.data_ptr<float>() + T * K,
                      out->lensTopLogProbs.data.begin() + l * T * K);
            std::copy(idx.data_ptr<int32_t>(), idx.data_ptr<int32_t>() + T * K,
                      out->lensTopIds.data.begin() + l * T * K);
            // Rank (0 = top-1) and log-prob of the actual next token x_{t+1}; -1 / NaN at t = T-1.
            out->lensNextRank.data[static_cast<size_t>(l * T + T - 1)] = -1;
            out->lensNextLogProb.data[static_cast<size_t>(l * T + T - 1)] = std::nanf("");
            if (T > 1) {
                const torch::Tensor head = lp.slice(0, 0, T - 1);
                const torch::Tensor target = head.gather(1, ids[0].slice(0, 1).view({T - 1, 1}));
                const torch::Tensor rank = (head > target).sum(1).to(torch::kCPU, torch::kInt).contiguous();
                const torch::Tensor tlp = target.view({T - 1}).to(torch::kCPU).contiguous();
                std::copy(rank.data_ptr<int32_t>(), rank.data_ptr<int32_t>() + T - 1,
                          out->lensNextRank.data.begin() + l * T);
                std::copy(tlp.data_ptr<float>(), tlp.data_ptr<float>() + T - 1,
                          out->lensNextLogProb.data.begin() + l * T);
            }
            checkCancel(cancel, progress, ++done, total);
        }
        if (const TokenizerPtr tok = model.tokenizer())
            for (int32_t id : out->lensTopIds.data)
                if (id < tok->vocabSize() && !out->lensPieces.count(id))
                    out->lensPieces.emplace(id, tok->pieceText(id));
    }
    checkCancel(cancel, progress, total, total);
    return out;
}

} // namespace

TracePtr trace(const Model& model, const std::string& prompt, const TraceOptions& options, const ProgressFn& progress,
               const std::atomic<bool>* cancel) {
    const TokenizerPtr tok = model.tokenizer();
    if (!tok) throw std::invalid_argument("this model has no tokenizer: trace token ids instead");
    if (prompt.empty()) throw std::invalid_argument("empty prompt: nothing to trace");
    std::vector<TraceToken> tokens;
    for (const TokenPiece& p : tok->encode(prompt))
        tokens.push_back({p.id, p.text, p.begin, p.end});
    const std::string work = "tracing " + std::to_string(tokens.size()) + " tokens";
    return withDeviceErrors(work, model.device(),
                            [&] { return runTrace(model, std::move(tokens), prompt, options, progress, cancel); });
}

TracePtr traceIds(const Model& model, const std::vector<int32_t>& ids, const TraceOptions& options,
                  const ProgressFn& progress, const std::atomic<bool>* cancel) {
    const TokenizerPtr tok = model.tokenizer();
    std::vector<TraceToken> tokens;
    for (int32_t id : ids) {
        const bool known = tok && id >= 0 && id < tok->vocabSize();
        std::string text = "#"; // unknown piece: shown as #id (built with +=: GCC 12 warns falsely on "#" + s)
        text += std::to_string(id);
        tokens.push_back({id, known ? tok->pieceText(id) : text, -1, -1});
    }
    const std::string work = "tracing " + std::to_string(tokens.size()) + " tokens";
    return withDeviceErrors(work, model.device(),
                            [&] { return runTrace(model, std::move(tokens), "", options, progress, cancel); });
}

std::vector<float> saliency(const Model& model, const std::vector<int32_t>& ids, int64_t position, int32_t targetId) {
    Model::Impl& m = model.impl();
    const int64_t T = static_cast<int64_t>(ids.size());
    if (T == 0) throw std::invalid_argument("saliency needs at least one token");
    if (T > m.config.maxLen)
        throw std::invalid_argument("saliency: " + std::to_string(T) + " tokens exceed max_len " +
                                    std::to_string(m.config.maxLen));
    if (position < 0 || position >= T)
        throw std::invalid_argument("saliency: position " + std::to_string(position) + " outside [0, " +
                                    std::to_string(T) + ")");
    if (targetId < 0 || targetId >= m.config.vocabSize)
        throw std::invalid_argument("saliency: target id " + std::to_string(targetId) + " outside the vocabulary");
    std::vector<int64_t> idv(ids.begin(), ids.end());
    for (int64_t id : idv)
        if (id < 0 || id >= m.config.vocabSize)
            throw std::invalid_argument("token id " + std::to_string(id) + " outside the vocabulary");
    std::lock_guard<std::mutex> lock(m.mutex);
    return withDeviceErrors("saliency over " + std::to_string(T) + " tokens", model.device(), [&] {
        m.net->eval();
        torch::AutoGradMode grad(true);
        const torch::Tensor x = torch::tensor(idv, torch::kLong).view({1, T}).to(m.device);
        const torch::Tensor h0 = m.net->embed(x).detach().requires_grad_(true);
        const torch::Tensor logits = m.net->forwardFromEmbedding(h0);
        const torch::Tensor logp = torch::log_softmax(logits[0][position], -1)[targetId];
        const torch::Tensor g = torch::autograd::grad({logp}, {h0})[0];
        const torch::Tensor s = (g * h0).sum(-1)[0].detach().to(torch::kCPU, torch::kFloat).contiguous();
        return std::vector<float>(s.data_ptr<float>(), s.data_ptr<float>() + T);
    });
}

} // namespace gwb::engine
