#include "features/activation_stream.h"

#include "features/feature_util.h"

#include "gwb/engine/corpus_run.h"
#include "gwb/engine/hooks.h"
#include "gwb/engine/tokenizer.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gwb::engine::features {

std::vector<std::vector<int32_t>> corpusWindows(const Model& model, const std::vector<std::string>& files,
                                                int64_t context) {
    if (files.empty()) throw std::invalid_argument("no text files given");
    if (!model.tokenizer()) throw std::invalid_argument("the model has no tokenizer: cannot read text files");
    if (context < 2 || context > model.config().maxLen)
        throw std::invalid_argument("context size " + std::to_string(context) + " is outside 2.." +
                                    std::to_string(model.config().maxLen) + " (the model's max_len)");
    std::vector<std::vector<int32_t>> out;
    for (const std::string& path : files) {
        std::ifstream in(path, std::ios::binary);
        if (!in) throw std::invalid_argument("cannot open text file '" + path + "'");
        std::ostringstream ss;
        ss << in.rdbuf();
        const std::string text = ss.str();
        try {
            checkUtf8(text);
        } catch (const std::exception& e) {
            throw std::invalid_argument("'" + path + "' is not UTF-8 text: " + e.what());
        }
        const std::vector<int32_t> ids = model.tokenizer()->encodeIds(text);
        if (ids.size() < 2) throw std::invalid_argument("'" + path + "' has fewer than 2 tokens");
        for (int64_t s : windowStarts(static_cast<int64_t>(ids.size()), context, context)) {
            const int64_t e = std::min<int64_t>(s + context, static_cast<int64_t>(ids.size()));
            out.emplace_back(ids.begin() + s, ids.begin() + e);
        }
    }
    if (out.empty()) throw std::invalid_argument("the text files give no window of 2 or more tokens");
    return out;
}

namespace {
/// Thrown by the reading hook once it has the value: the rest of the pass (the later blocks and
/// the unembedding, more than half of a pass at resid.3 of the bundled model) is not needed.
struct HaveValue {};
} // namespace

torch::Tensor siteRows(const Model& model, const std::string& site, const std::vector<int32_t>& ids) {
    FloatArray value;
    std::map<std::string, SiteHook> hooks;
    hooks[site] = [&value](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        value = v;
        throw HaveValue{};
    };
    try {
        runWithHooks(model, std::vector<int64_t>(ids.begin(), ids.end()), hooks);
    } catch (const HaveValue&) {
    }
    if (value.empty() && value.shape.empty())
        throw std::runtime_error("the forward pass never reached site '" + site + "'");
    const int64_t first = std::min<int64_t>(offsetOfSite(site), value.dim(0));
    const torch::Tensor all = toTensor(value);
    return all.slice(0, first, all.size(0)).contiguous();
}

torch::Tensor sourceRows(const Sources& sources, const std::vector<int32_t>& ids) {
    if (sources.size() == 1) return siteRows(*sources[0].model, sources[0].site, ids);
    std::vector<torch::Tensor> parts;
    for (const Source& s : sources)
        parts.push_back(siteRows(*s.model, s.site, ids));
    for (const torch::Tensor& t : parts)
        if (t.size(0) != parts[0].size(0))
            throw std::invalid_argument("the crosscoder's sites give different numbers of rows (offset sites cannot "
                                        "be paired)");
    return torch::cat(parts, 1);
}

Sources sourcesOf(const Dictionary& d, const Model& model, const Model* second) {
    Sources out{{&model, d.config.site}};
    if (!d.config.crosscoder()) return out;
    if (!second)
        throw std::invalid_argument("the dictionary is a crosscoder of two models ('" + d.config.modelName + "' and '" +
                                    d.config.secondModelName + "'): give the second model too");
    out.push_back({second, d.config.secondSite});
    return out;
}

double Rng::normal() {
    if (m_haveSpare) {
        m_haveSpare = false;
        return m_spare;
    }
    double u = 0, v = 0, s = 0;
    do {
        u = uniform() * 2 - 1;
        v = uniform() * 2 - 1;
        s = u * u + v * v;
    } while (s >= 1 || s == 0);
    const double f = std::sqrt(-2 * std::log(s) / s);
    m_spare = v * f;
    m_haveSpare = true;
    return u * f;
}

void shuffleIndices(std::vector<int64_t>& v, Rng& rng) {
    for (size_t i = v.size(); i > 1; --i)
        std::swap(v[i - 1], v[rng.below(i)]);
}

ActivationStream::ActivationStream(Sources sources, std::vector<std::vector<int32_t>> windows, int64_t bufferWindows,
                                   uint64_t seed)
    : m_sources(std::move(sources)), m_windows(std::move(windows)),
      m_bufferWindows(std::max<int64_t>(1, bufferWindows)), m_seed(seed) {}

int64_t ActivationStream::windowAt(int64_t sequenceIndex) {
    const int64_t n = static_cast<int64_t>(m_windows.size());
    const int64_t epoch = sequenceIndex / n;
    while (static_cast<int64_t>(m_epochOrder.size()) <= epoch) {
        std::vector<int64_t> order(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i)
            order[static_cast<size_t>(i)] = i;
        Rng rng(m_seed * 1000003ull + 17 + m_epochOrder.size());
        shuffleIndices(order, rng);
        m_epochOrder.push_back(std::move(order));
    }
    return m_epochOrder[static_cast<size_t>(epoch)][static_cast<size_t>(sequenceIndex % n)];
}

torch::Tensor ActivationStream::buffer(int64_t b) {
    if (b == m_cachedIndex) return m_cached;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<torch::Tensor> parts;
    for (int64_t i = 0; i < m_bufferWindows; ++i)
        parts.push_back(sourceRows(m_sources, m_windows[static_cast<size_t>(windowAt(b * m_bufferWindows + i))]));
    torch::Tensor rows = torch::cat(parts, 0);
    std::vector<int64_t> perm(static_cast<size_t>(rows.size(0)));
    for (size_t i = 0; i < perm.size(); ++i)
        perm[i] = static_cast<int64_t>(i);
    Rng rng(m_seed * 7919ull + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(b + 1));
    shuffleIndices(perm, rng);
    m_cached = rows.index_select(0, torch::tensor(perm, torch::kLong)).contiguous();
    m_cachedIndex = b;
    m_harvestSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return m_cached;
}

torch::Tensor ActivationStream::take(int64_t rows) {
    std::vector<torch::Tensor> parts;
    int64_t need = rows;
    int64_t emptyBuffers = 0;
    while (need > 0) {
        const torch::Tensor buf = buffer(m_buffer);
        const int64_t n = buf.size(0);
        if (m_offset >= n) {
            // Windows shorter than an offset D have no rows at offset.L.D: an endless run of
            // them means the corpus has none at all.
            if (n == 0 && ++emptyBuffers > static_cast<int64_t>(m_windows.size()))
                throw std::invalid_argument("no window of the text files is long enough to have rows at '" +
                                            m_sources.front().site + "'");
            ++m_buffer;
            m_offset = 0;
            continue;
        }
        emptyBuffers = 0;
        const int64_t k = std::min(need, n - m_offset);
        parts.push_back(buf.slice(0, m_offset, m_offset + k));
        m_offset += k;
        need -= k;
    }
    return parts.size() == 1 ? parts.front().contiguous() : torch::cat(parts, 0);
}

} // namespace gwb::engine::features
