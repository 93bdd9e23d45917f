#pragma once
// Text files into windows of token ids, a site's rows read from them with a hook, and the
// training stream: windows in an order drawn from the seed, a buffer of them at a time with its
// rows shuffled, batches taken in turn (engine-internal).

#include "gwb/engine/features.h"
#include "gwb/engine/model.h"

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gwb::engine::features {

/// Each file tokenized whole and cut into windows of `context` tokens (stride `context`, windows
/// of fewer than 2 tokens dropped). Throws std::invalid_argument naming a file that cannot be
/// read, is not UTF-8 or is too short, and when no file gives a window.
std::vector<std::vector<int32_t>> corpusWindows(const Model& model, const std::vector<std::string>& files,
                                                int64_t context);

/// The site's rows for one window (T x d, CPU float): offset sites without rows t < D.
torch::Tensor siteRows(const Model& model, const std::string& site, const std::vector<int32_t>& ids);

/// Where a dictionary reads: one site of one model, or (a crosscoder) one site of each of two
/// models over the same tokens, their rows side by side.
struct Source {
    const Model* model;
    std::string site;
};
using Sources = std::vector<Source>;
/// The sources' rows for one window, concatenated along the row (T x (d_1 + d_2)).
torch::Tensor sourceRows(const Sources& sources, const std::vector<int32_t>& ids);
/// The sources of a dictionary: its site of `model`, and for a crosscoder its second site of `second`
/// (std::invalid_argument when the second model is missing or does not share the tokenizer).
Sources sourcesOf(const Dictionary& dictionary, const Model& model, const Model* second);

/// Deterministic generator for the stream and the initialisation (the same on every platform:
/// std's distributions are not).
class Rng {
public:
    explicit Rng(uint64_t seed) : m_engine(seed) {}
    uint64_t next() { return m_engine(); }
    /// Uniform in [0, n).
    uint64_t below(uint64_t n) { return next() % n; }
    double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
    double normal();

private:
    std::mt19937_64 m_engine;
    bool m_haveSpare = false;
    double m_spare = 0;
};

/// Fisher-Yates with Rng::below.
void shuffleIndices(std::vector<int64_t>& v, Rng& rng);

class ActivationStream {
public:
    ActivationStream(Sources sources, std::vector<std::vector<int32_t>> windows, int64_t bufferWindows, uint64_t seed);
    /// Rows of buffer b (windows b*W .. (b+1)*W - 1 of the seed's endless window order, rows
    /// shuffled with a generator of its own): the same tensor for the same b, whenever asked.
    torch::Tensor buffer(int64_t b);
    /// The next `rows` rows from (buffer, offset), moving the position on.
    torch::Tensor take(int64_t rows);
    int64_t bufferIndex() const { return m_buffer; }
    int64_t offset() const { return m_offset; }
    void seek(int64_t buffer, int64_t offset) {
        m_buffer = buffer;
        m_offset = offset;
    }
    double harvestSeconds() const { return m_harvestSeconds; }

private:
    int64_t windowAt(int64_t sequenceIndex);
    Sources m_sources;
    std::vector<std::vector<int32_t>> m_windows;
    int64_t m_bufferWindows;
    uint64_t m_seed;
    std::vector<std::vector<int64_t>> m_epochOrder; ///< per epoch, drawn on first use
    int64_t m_buffer = 0, m_offset = 0;
    int64_t m_cachedIndex = -1;
    torch::Tensor m_cached;
    double m_harvestSeconds = 0;
};

} // namespace gwb::engine::features
