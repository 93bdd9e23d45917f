// Incremental generation (generate.h) over IncrementalDecoder, with temperature / top-k / top-p sampling.

#include "gwb/engine/generate.h"

#include "gwb/engine/analysis.h"
#include "model/incremental_decoder.h"
#include "model/model_impl.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

namespace gwb::engine {

IncrementalDecoder::IncrementalDecoder(LanguageModelImpl& net) : m_net(net) {}

torch::Tensor IncrementalDecoder::prefill(const torch::Tensor& ids) {
    m_states.clear();
    torch::Tensor h = m_net.embed(ids);
    for (const auto& block : m_net.blocks()) {
        if (auto* g = dynamic_cast<GrassmannBlockImpl*>(block.get())) {
            GrassmannState s = g->initialState();
            h = g->prefill(h, s);
            m_states.emplace_back(std::move(s));
        } else {
            auto* a = dynamic_cast<AttentionBlockImpl*>(block.get());
            AttentionState s;
            h = a->prefill(h, s);
            m_states.emplace_back(std::move(s));
        }
    }
    m_length = ids.size(1);
    return m_net.head(h.narrow(1, m_length - 1, 1));
}

torch::Tensor IncrementalDecoder::next(int64_t id) {
    const ModelConfig& c = m_net.config();
    if (m_length >= c.maxLen)
        throw std::invalid_argument("context is already max_len (" + std::to_string(c.maxLen) + ") tokens long");
    const torch::Device device = m_net.tokEmbed->weight.device();
    const auto longOpts = torch::TensorOptions().dtype(torch::kLong).device(device);
    const torch::Tensor idT = torch::full({1, 1}, id, longOpts);
    const torch::Tensor pos = torch::full({1}, m_length, longOpts);
    torch::Tensor h = m_net.tokEmbed(idT) + m_net.posEmbed(pos).unsqueeze(0); // 1 x 1 x d
    const auto& blocks = m_net.blocks();
    for (size_t l = 0; l < blocks.size(); ++l) {
        if (auto* gs = std::get_if<GrassmannState>(&m_states[l]))
            h = static_cast<GrassmannBlockImpl*>(blocks[l].get())->step(h, *gs);
        else
            h = static_cast<AttentionBlockImpl*>(blocks[l].get())->step(h, std::get<AttentionState>(m_states[l]));
    }
    ++m_length;
    return m_net.head(h);
}

const OptionTable<GenerateOptions>& generateOptions() {
    using O = GenerateOptions;
    static const OptionTable<O> table = {
        integerOption<O>("max_new", "max-new", "N", "Tokens to generate; stops early at max_len", 0, kNoMax,
                         &O::maxNew),
        numberOption<O>("temperature", "temperature", "T", "Sampling temperature", 0, true, kNoMax, false,
                        &O::temperature),
        integerOption<O>("top_k", "top-k", "K", "Keep the K likeliest tokens; 0 = all", 0, kNoMax, &O::topK),
        numberOption<O>("top_p", "top-p", "P", "Nucleus mass; 1 = off", 0, true, 1, false, &O::topP),
        integerOption<O>("seed", "seed", "N", "Random seed", 0, kMaxSeed, &O::seed),
    };
    return table;
}

namespace {

void checkOptions(const ModelConfig& c, const std::vector<int32_t>& prompt, const GenerateOptions& o) {
    if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
    if (static_cast<int64_t>(prompt.size()) > c.maxLen)
        throw std::invalid_argument("generate: prompt of " + std::to_string(prompt.size()) +
                                    " tokens exceeds max_len " + std::to_string(c.maxLen));
    for (int32_t id : prompt)
        if (id < 0 || id >= c.vocabSize)
            throw std::invalid_argument("generate: token id " + std::to_string(id) + " outside the vocabulary (0.." +
                                        std::to_string(c.vocabSize - 1) + ")");
    for (const Option<GenerateOptions>& option : generateOptions())
        if (!(o.greedy && std::string(option.key) == "temperature")) checkOptionValue(option, option.number(o));
}

/// Picks the next id from one row of logits (V floats) on the CPU.
int32_t sampleToken(const float* logits, int64_t V, const GenerateOptions& o, std::mt19937_64& rng) {
    if (o.greedy) return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);
    std::vector<int32_t> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    int64_t keep = (o.topK > 0 && o.topK < V) ? o.topK : V;
    auto byLogit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    if (keep < V) std::partial_sort(order.begin(), order.begin() + keep, order.end(), byLogit);
    if (o.topP < 1.0 && keep == V) std::sort(order.begin(), order.end(), byLogit);
    const double maxLogit = logits[order[0]] / o.temperature;
    std::vector<double> w(static_cast<size_t>(keep));
    double total = 0;
    for (int64_t i = 0; i < keep; ++i) {
        w[static_cast<size_t>(i)] = std::exp(logits[order[static_cast<size_t>(i)]] / o.temperature - maxLogit);
        total += w[static_cast<size_t>(i)];
    }
    if (o.topP < 1.0) {
        // Nucleus: the smallest prefix (highest probabilities first) whose mass reaches top_p.
        double mass = 0;
        int64_t n = 0;
        while (n < keep) {
            mass += w[static_cast<size_t>(n)] / total;
            ++n;
            if (mass >= o.topP) break;
        }
        keep = n;
        total = std::accumulate(w.begin(), w.begin() + keep, 0.0);
    }
    std::uniform_real_distribution<double> uniform(0.0, total);
    double u = uniform(rng), acc = 0;
    for (int64_t i = 0; i < keep; ++i) {
        acc += w[static_cast<size_t>(i)];
        if (u < acc) return order[static_cast<size_t>(i)];
    }
    return order[static_cast<size_t>(keep - 1)];
}

} // namespace

GenerateResult generate(const Model& model, const std::vector<int32_t>& promptIds, const GenerateOptions& options,
                        const std::function<bool(int32_t, int64_t)>& onToken, const std::atomic<bool>* cancel) {
    Model::Impl& impl = model.impl();
    const ModelConfig& c = impl.config;
    checkOptions(c, promptIds, options);
    GenerateResult result;
    result.ids = promptIds;
    result.promptLength = static_cast<int64_t>(promptIds.size());

    std::lock_guard<std::mutex> lock(impl.mutex);
    const bool wasTraining = impl.net->is_training();
    impl.net->eval();
    struct Restore {
        LanguageModelImpl& net;
        bool training;
        ~Restore() { net.train(training); }
    } restore{*impl.net, wasTraining};
    torch::InferenceMode inference; // no autograd bookkeeping at all: a token step is ~100 small ops

    std::mt19937_64 rng(options.seed);
    IncrementalDecoder decoder(*impl.net);
    const auto start = std::chrono::steady_clock::now();
    std::vector<int64_t> ids64(promptIds.begin(), promptIds.end());
    const torch::Tensor ids = torch::tensor(ids64, torch::kLong).view({1, -1}).to(impl.device);
    torch::Tensor last = decoder.prefill(ids).select(1, 0); // 1 x V
    int64_t generated = 0;
    while (generated < options.maxNew) {
        if (cancel && cancel->load()) throw Cancelled();
        // ids never grow past max_len, so prompt + continuation can always be traced.
        if (static_cast<int64_t>(result.ids.size()) >= c.maxLen) {
            result.stoppedAtMaxLen = true;
            break;
        }
        if (generated > 0) last = decoder.next(result.ids.back()).reshape({1, -1});
        const torch::Tensor row = last.reshape({-1}).to(torch::kCPU, torch::kFloat).contiguous();
        const int32_t id = sampleToken(row.data_ptr<float>(), row.numel(), options, rng);
        result.ids.push_back(id);
        ++generated;
        if (onToken && !onToken(id, static_cast<int64_t>(result.ids.size()) - 1)) break;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.tokensPerSecond = seconds > 0 ? static_cast<double>(generated) / seconds : 0.0;
    return result;
}

} // namespace gwb::engine
