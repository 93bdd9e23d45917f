// One forward pass with every capture point on, converted into a Trace; saliency.

#include "runtime/device_errors.h"
#include "runs/tensor_array.h"
#include "gwb/engine/tracer.h"

#include "model/model_impl.h"
#include "kernels/row_scan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gwb::engine {

namespace {

/// Rows of the T x V head computed at once when TraceOptions::headChunkRows is 0: 256 (taller
/// products run nearer the BLAS's peak: a paper-size T = 256 trace takes 56 instead of 61 ms, its
/// lens 240 instead of 280 ms), fewer for large vocabularies so that a chunk stays within 32 MiB.
int64_t defaultHeadChunkRows(int64_t V) {
    constexpr int64_t kBytes = int64_t{32} << 20;
    return std::clamp<int64_t>(kBytes / (4 * std::max<int64_t>(V, 1)), 64, 256);
}

/// The tied head (final LayerNorm, then E^T) over a few rows at a time, with every rows x V
/// intermediate in buffers allocated once per trace: no fresh pages (and page faults) per chunk.
class HeadChunks {
public:
    /// `buffer`: the model's kept logits buffer, reused when it is large enough (else replaced).
    HeadChunks(LanguageModelImpl& net, int64_t rows, int64_t T, const torch::Device& device, torch::Tensor& buffer)
        : m_net(net), m_rows(std::min(rows, T)) {
        const auto f = torch::TensorOptions().dtype(torch::kFloat).device(device);
        const int64_t V = net.config().vocabSize;
        if (!buffer.defined() || buffer.device() != device || buffer.size(1) != V || buffer.size(0) < m_rows)
            buffer = torch::empty({m_rows, V}, f);
        m_logits = buffer;
        m_cpu = device.is_cpu();
        if (!m_cpu) { // the device path's log-sum-exp and rank (the CPU scans rows instead)
            m_scratch = torch::empty({m_rows, V}, f);
            m_above = torch::empty({m_rows, V}, f.dtype(torch::kBool));
        }
    }
    int64_t rows() const { return m_rows; }
    int64_t vocabSize() const { return m_logits.size(1); }

    /// n x V logits of states (n x d, n <= rows()). With `keep` (room for n x V floats) they are
    /// written there (directly on the CPU, copied from the device otherwise).
    torch::Tensor logits(const torch::Tensor& states, float* keep) {
        const int64_t n = states.size(0), V = m_logits.size(1);
        torch::Tensor out = keep && m_cpu ? torch::from_blob(keep, {n, V}, torch::kFloat) : m_logits.narrow(0, 0, n);
        const torch::Tensor x = m_net.lnFinal(states).to(torch::kFloat);
        if (!detail::packedLinearOut(out, x, m_net.tokEmbed->weight, {}, m_net.headPacked))
            torch::mm_out(out, x, m_net.tokEmbed->weight.t().to(torch::kFloat));
        if (keep && !m_cpu) {
            const torch::Tensor cpu = out.to(torch::kCPU).contiguous();
            std::copy(cpu.data_ptr<float>(), cpu.data_ptr<float>() + n * V, keep);
        }
        return out;
    }
    bool cpu() const { return m_cpu; }
    /// log sum_v exp(logits[i][v]) per row (n x 1), on the device.
    torch::Tensor logSumExp(const torch::Tensor& logits) {
        const torch::Tensor mx = logits.amax({1}, /*keepdim=*/true);
        torch::Tensor s = m_scratch.narrow(0, 0, logits.size(0));
        torch::sub_out(s, logits, mx);
        s.exp_();
        return mx + s.sum(1, /*keepdim=*/true).log_();
    }
    /// Number of entries of each row above that row's target (m x 1): the rank of the target (CPU int32).
    torch::Tensor countAbove(const torch::Tensor& logits, const torch::Tensor& target) {
        torch::Tensor a = m_above.narrow(0, 0, logits.size(0));
        torch::gt_out(a, logits, target);
        // Summed straight into int32: a bool sum without a dtype goes through int64 on a slow path
        // (40x slower on the CPU). The CPU lens uses scanRows instead; this is the device path.
        return a.sum(1, /*keepdim=*/false, torch::kInt).to(torch::kCPU).contiguous();
    }

private:
    LanguageModelImpl& m_net;
    int64_t m_rows;
    bool m_cpu = true;
    torch::Tensor m_logits, m_scratch, m_above;
};

void checkCancel(const std::atomic<bool>* cancel, const ProgressFn& progress, int64_t done, int64_t total) {
    if ((cancel && cancel->load()) || (progress && !progress(done, total))) throw Cancelled();
}

std::shared_ptr<LogitLens> emptyLens(int64_t N, int64_t T, int64_t K) {
    auto lens = std::make_shared<LogitLens>();
    lens->topIds = IntArray::zeros({N + 1, T, K});
    lens->topLogProbs = FloatArray::zeros({N + 1, T, K});
    lens->nextRank = IntArray::zeros({N + 1, T});
    lens->nextLogProb = FloatArray::zeros({N + 1, T});
    return lens;
}

/// A kept T x d state as the model's input to its head: on its device, in its weights' type.
torch::Tensor statesOf(const FloatArray& h, const Model::Impl& m) {
    const torch::Tensor cpu = torch::from_blob(const_cast<float*>(h.data.data()), {h.dim(0), h.dim(1)}, torch::kFloat);
    return cpu.to(m.device, m.net->tokEmbed->weight.scalar_type());
}

void fillLensPieces(LogitLens& lens, const Model& model) {
    if (const TokenizerPtr tok = model.tokenizer())
        for (int32_t id : lens.topIds.data)
            if (id < tok->vocabSize() && !lens.pieces.count(id)) lens.pieces.emplace(id, tok->pieceText(id));
}

/// One head pass over `states` (T x d): row l of the lens (when `lens` is set), the surprisal
/// (when `surprisal` is set: the final state's pass) and the kept logits (`keep`, T x V).
void headPass(HeadChunks& head, const torch::Tensor& states, const std::vector<int64_t>& idv, int64_t l,
              LogitLens* lens, std::vector<float>* surprisal, FloatArray* keep) {
    const int64_t T = states.size(0), V = head.vocabSize();
    const int64_t K = lens ? lens->topK() : 0;
    const torch::Tensor ids = torch::tensor(idv, torch::kLong).to(states.device());
    const torch::Tensor next = T > 1 ? ids.narrow(0, 1, T - 1) : torch::Tensor(); // x_{t+1} for t < T-1
    for (int64_t t0 = 0; t0 < T; t0 += head.rows()) {
        const int64_t n = std::min(head.rows(), T - t0);
        const int64_t m1 = std::min(n, T - 1 - t0); // rows whose next token exists
        const torch::Tensor logits = head.logits(states.narrow(0, t0, n), keep ? keep->row(t0) : nullptr);
        if (head.cpu()) {
            // On the CPU one scan per row gives the log-sum-exp, the next token's logit and
            // rank, and the lens's top K (detail::scanRows), while the row is in cache.
            const detail::RowScan scan = detail::scanRows(logits.data_ptr<float>(), n, V, K, idv.data() + t0 + 1, m1);
            const float* lse = scan.lse.data();
            if (surprisal)
                for (int64_t i = 0; i < m1; ++i)
                    (*surprisal)[static_cast<size_t>(t0 + i + 1)] = lse[i] - scan.target[static_cast<size_t>(i)];
            if (K == 0) continue;
            const int64_t at = l * T + t0;
            for (int64_t i = 0; i < n; ++i)
                for (int64_t k = 0; k < K; ++k) {
                    const size_t src = static_cast<size_t>(i * K + k), dst = static_cast<size_t>((at + i) * K + k);
                    lens->topLogProbs.data[dst] = scan.topValue[src] - lse[i];
                    lens->topIds.data[dst] = scan.topId[src];
                }
            for (int64_t i = 0; i < m1; ++i) {
                lens->nextRank.data[static_cast<size_t>(at + i)] = scan.above[static_cast<size_t>(i)];
                lens->nextLogProb.data[static_cast<size_t>(at + i)] = scan.target[static_cast<size_t>(i)] - lse[i];
            }
            if (m1 < n) {
                lens->nextRank.data[static_cast<size_t>(l * T + T - 1)] = -1;
                lens->nextLogProb.data[static_cast<size_t>(l * T + T - 1)] = std::nanf("");
            }
            continue;
        }
        const torch::Tensor lse = head.logSumExp(logits); // n x 1
        torch::Tensor target;                             // m1 x 1 logits of x_{t+1}
        if (m1 > 0) target = logits.narrow(0, 0, m1).gather(1, next.narrow(0, t0, m1).view({m1, 1}));
        if (surprisal && m1 > 0) {
            const torch::Tensor s = (lse.narrow(0, 0, m1) - target).view({m1}).to(torch::kCPU).contiguous();
            std::copy(s.data_ptr<float>(), s.data_ptr<float>() + m1, surprisal->begin() + t0 + 1);
        }
        if (K == 0) continue;
        const auto top = logits.topk(K, -1);
        const torch::Tensor vals = (std::get<0>(top) - lse).to(torch::kCPU).contiguous();
        const torch::Tensor idx = std::get<1>(top).to(torch::kCPU, torch::kInt).contiguous();
        const int64_t at = (l * T + t0);
        std::copy(vals.data_ptr<float>(), vals.data_ptr<float>() + n * K, lens->topLogProbs.data.begin() + at * K);
        std::copy(idx.data_ptr<int32_t>(), idx.data_ptr<int32_t>() + n * K, lens->topIds.data.begin() + at * K);
        // Rank (0 = top-1) and log-prob of the actual next token x_{t+1}; -1 / NaN at t = T-1.
        if (m1 > 0) {
            const torch::Tensor rank = head.countAbove(logits.narrow(0, 0, m1), target);
            const torch::Tensor tlp = (target - lse.narrow(0, 0, m1)).view({m1}).to(torch::kCPU).contiguous();
            std::copy(rank.data_ptr<int32_t>(), rank.data_ptr<int32_t>() + m1, lens->nextRank.data.begin() + at);
            std::copy(tlp.data_ptr<float>(), tlp.data_ptr<float>() + m1, lens->nextLogProb.data.begin() + at);
        }
        if (m1 < n) {
            lens->nextRank.data[static_cast<size_t>(l * T + T - 1)] = -1;
            lens->nextLogProb.data[static_cast<size_t>(l * T + T - 1)] = std::nanf("");
        }
    }
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
    // Steps: forward, final head (surprisal), N layer copies, N lens layers, done.
    const int64_t total = 3 + N + (o.lensTopK > 0 ? N : 0);
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
    m.net->forwardHidden(ids, &cap); // blocks only: the T x V head runs in row chunks below
    checkCancel(cancel, progress, ++done, total);

    out->modelPath = m.path;
    out->modelName = model.displayName();
    out->config = c;
    out->device = m.device.str();
    out->prompt = prompt;
    out->tokens = std::move(tokens);

    // The T x V work (surprisal, kept logits, logit lens) runs over row chunks into buffers that are
    // allocated once, so no T x V array exists unless keepLogits asks for it.
    const int64_t V = c.vocabSize;
    const int64_t K = o.lensTopK > 0 ? std::min<int64_t>(o.lensTopK, V) : 0;
    HeadChunks head(*m.net, o.headChunkRows > 0 ? o.headChunkRows : defaultHeadChunkRows(c.vocabSize), T, m.device,
                    m.headBuffer);
    out->surprisal.assign(static_cast<size_t>(T), std::numeric_limits<float>::quiet_NaN());
    if (o.keepLogits) out->logits = FloatArray::zeros({T, V});
    std::shared_ptr<LogitLens> lens;
    if (K > 0) lens = emptyLens(N, T, K);
    // The final state's pass gives the surprisal (the model's own prediction) and the lens's last row.
    headPass(head, cap.finalH[0], idv, N, lens.get(), &out->surprisal, o.keepLogits ? &out->logits : nullptr);
    checkCancel(cancel, progress, ++done, total);

    for (int64_t l = 0; l < N; ++l) {
        BlockCapture& b = cap.blocks[static_cast<size_t>(l)];
        LayerTrace lt;
        lt.h = toArray(b.h[0]);
        if (o.keepMixerStates) lt.mixerInput = toArray(b.mixerInput[0]);
        if (c.kind == ModelKind::Grassmann) {
            GrassmannLayerTrace g;
            const auto* block = dynamic_cast<GrassmannBlockImpl*>(m.net->blocks()[static_cast<size_t>(l)].get());
            g.offsets = block->offsets();
            g.z = toArray(b.z[0]);
            if (o.keepMixerStates) g.g = toArray(b.g[0]);
            g.gate = toArray(b.gate[0]);
            if (o.keepWeights) {
                g.wRed = toArray(block->wRed->weight);
                g.bRed = toArray(block->wRed->bias);
                if (block->wPlu) {
                    g.wPlu = toArray(block->wPlu->weight);
                    g.bPlu = toArray(block->wPlu->bias);
                } else {
                    g.wGeoIn = toArray(block->geoIn->weight);
                    g.bGeoIn = toArray(block->geoIn->bias);
                    g.wGeoOut = toArray(block->geoOut->weight);
                    g.bGeoOut = toArray(block->geoOut->bias);
                }
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
        b = BlockCapture{}; // copied: the capture's tensors go now, so a long prompt is not held twice
        out->layers.push_back(std::move(lt));
        checkCancel(cancel, progress, ++done, total);
    }
    out->finalH = toArray(cap.finalH[0]);
    cap.finalH = torch::Tensor();

    if (lens) {
        // From the kept states, exactly as logitLens() computes it for a trace made without one.
        for (int64_t l = 0; l < N; ++l) {
            headPass(head, statesOf(out->layers[static_cast<size_t>(l)].h, m), idv, l, lens.get(), nullptr, nullptr);
            checkCancel(cancel, progress, ++done, total);
        }
        fillLensPieces(*lens, model);
        out->lens = std::move(lens);
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

LensPtr logitLens(const Model& model, const Trace& trace, int topK, const ProgressFn& progress,
                  const std::atomic<bool>* cancel) {
    Model::Impl& m = model.impl();
    const ModelConfig& c = m.config;
    const int64_t T = trace.length(), N = c.nLayers;
    if (topK < 1)
        throw std::invalid_argument("logit lens: top-K must be at least 1 (got " + std::to_string(topK) + ")");
    if (trace.config.kind != c.kind || trace.config.nLayers != N || trace.config.dModel != c.dModel ||
        trace.config.vocabSize != c.vocabSize || static_cast<int64_t>(trace.layers.size()) != N)
        throw std::invalid_argument("logit lens: the trace was not made by this model (" + trace.modelName +
                                    " has another shape than " + model.displayName() + ")");
    if (T == 0) throw std::invalid_argument("logit lens: the trace has no tokens");
    for (const LayerTrace& L : trace.layers)
        if (L.h.rank() != 2 || L.h.dim(0) != T || L.h.dim(1) != c.dModel)
            throw std::invalid_argument("logit lens: the trace does not keep every block's T x d input state");
    if (trace.finalH.rank() != 2 || trace.finalH.dim(0) != T || trace.finalH.dim(1) != c.dModel)
        throw std::invalid_argument("logit lens: the trace does not keep its final state");
    std::vector<int64_t> idv;
    for (const TraceToken& t : trace.tokens) {
        if (t.id < 0 || t.id >= c.vocabSize)
            throw std::invalid_argument("logit lens: token id " + std::to_string(t.id) + " is outside the vocabulary");
        idv.push_back(t.id);
    }
    const int64_t K = std::min<int64_t>(topK, c.vocabSize), total = N + 1;
    int64_t done = 0;
    checkCancel(cancel, progress, done, total);
    return withDeviceErrors("the logit lens of " + std::to_string(T) + " tokens", model.device(), [&] {
        std::lock_guard<std::mutex> lock(m.mutex);
        torch::InferenceMode inference;
        m.net->eval();
        HeadChunks head(*m.net, defaultHeadChunkRows(c.vocabSize), T, m.device, m.headBuffer);
        std::shared_ptr<LogitLens> lens = emptyLens(N, T, K);
        // In the trace's order: the final state first, then each block's input.
        headPass(head, statesOf(trace.finalH, m), idv, N, lens.get(), nullptr, nullptr);
        checkCancel(cancel, progress, ++done, total);
        for (int64_t l = 0; l < N; ++l) {
            headPass(head, statesOf(trace.layers[static_cast<size_t>(l)].h, m), idv, l, lens.get(), nullptr, nullptr);
            checkCancel(cancel, progress, ++done, total);
        }
        fillLensPieces(*lens, model);
        return LensPtr(std::move(lens));
    });
}

std::vector<float> saliency(const Model& model, const std::vector<int32_t>& ids, int64_t position, int32_t targetId,
                            int32_t wrongId) {
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
    if (wrongId >= m.config.vocabSize)
        throw std::invalid_argument("saliency: wrong id " + std::to_string(wrongId) + " outside the vocabulary");
    std::vector<int64_t> idv(ids.begin(), ids.end());
    for (int64_t id : idv)
        if (id < 0 || id >= m.config.vocabSize)
            throw std::invalid_argument("token id " + std::to_string(id) + " outside the vocabulary");
    std::lock_guard<std::mutex> lock(m.mutex);
    return withDeviceErrors("saliency over " + std::to_string(T) + " tokens", model.device(), [&] {
        m.net->eval();
        torch::AutoGradMode grad(true);
        // Both models are causal, so tokens after `position` neither change its logits nor get a
        // gradient: only the prefix 0..position runs, and the head is applied to its last row alone
        // (not T x V). The entries after `position` are exactly zero.
        const int64_t n = position + 1;
        const torch::Tensor x =
            torch::tensor(std::vector<int64_t>(idv.begin(), idv.begin() + n), torch::kLong).view({1, n}).to(m.device);
        const torch::Tensor h0 = m.net->embed(x).detach().requires_grad_(true);
        const torch::Tensor last = m.net->hiddenFromEmbedding(h0)[0][position];
        const torch::Tensor lp = torch::log_softmax(m.net->head(last), -1);
        const torch::Tensor objective = wrongId >= 0 ? lp[targetId] - lp[wrongId] : lp[targetId];
        const torch::Tensor g = torch::autograd::grad({objective}, {h0})[0];
        const torch::Tensor s = (g * h0).sum(-1)[0].detach().to(torch::kCPU, torch::kFloat).contiguous();
        std::vector<float> out(static_cast<size_t>(T), 0.0f);
        std::copy(s.data_ptr<float>(), s.data_ptr<float>() + n, out.begin());
        return out;
    });
}

} // namespace gwb::engine
