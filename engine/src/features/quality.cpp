// What a dictionary is worth on held-out text (explained variance, L0, dead fraction, the loss with
// its reconstruction spliced in), and what each feature reads (top-activating contexts,
// histogram, unembedding read, reading-subspace share).

#include "features/activation_stream.h"
#include "features/feature_util.h"

#include "gwb/engine/hooks.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <stdexcept>

namespace gwb::engine {
namespace {

/// Sum of next-token cross-entropies of `logits` (T x V) against ids[1..T-1].
double crossEntropySum(const FloatArray& logits, const std::vector<int32_t>& ids) {
    const torch::Tensor lp = features::toTensor(logits).log_softmax(-1);
    const int64_t T = static_cast<int64_t>(ids.size());
    if (T < 2) return 0;
    const torch::Tensor next = torch::tensor(std::vector<int64_t>(ids.begin() + 1, ids.end()), torch::kLong);
    return -lp.slice(0, 0, T - 1).gather(1, next.unsqueeze(1)).sum().item<double>();
}

/// The ablation baseline's sums: the site's value at each position, summed over the held-out
/// windows (DictionaryQuality::kAblation: the per-position mean).
struct PositionSums {
    torch::Tensor sum;          ///< positions x width, double
    std::vector<int64_t> count; ///< windows that reach each position
    void add(const FloatArray& values) {
        const torch::Tensor v = features::toTensor(values).to(torch::kDouble); // T x width
        const int64_t T = v.size(0);
        if (!sum.defined()) sum = torch::zeros({0, v.size(1)}, torch::kDouble);
        if (sum.size(0) < T) {
            sum = torch::cat({sum, torch::zeros({T - sum.size(0), v.size(1)}, torch::kDouble)}, 0);
            count.resize(static_cast<size_t>(T), 0);
        }
        sum.slice(0, 0, T) += v;
        for (int64_t t = 0; t < T; ++t)
            ++count[static_cast<size_t>(t)];
    }
};

/// The ablated loss: the summed next-token cross-entropy over `windows` with `site` replaced, from
/// row `from` on (rows t < D of an offset keep theirs), by each position's mean over the OTHER
/// held-out windows (the window's own value left out: the baseline holds nothing of the window
/// it replaces, the expectation of resampling that position from another window). One vector at
/// every position (zeros, or the overall mean) makes every position alike, and a Grassmann block
/// then pairs identical reduced vectors: its planes are rounding noise. The per-position mean
/// keeps positions apart; should the hook check still find a block's pair planes made of nearly
/// parallel vectors, the ablated loss is not defined: NaN, and `note` says why. NaN too with fewer
/// than two windows (no other window to take the baseline from) and when `stop` ends it early.
double ablatedCrossEntropy(const Model& model, const std::string& site, const PositionSums& sums, int64_t from,
                           const std::vector<std::vector<int32_t>>& windows, const std::atomic<bool>* stop,
                           std::string& note) {
    if (windows.size() < 2) {
        note = "the ablation baseline (" + std::string(DictionaryQuality::kAblation) +
               ") needs at least two held-out windows: with one, no other window gives a position's baseline";
        return std::numeric_limits<double>::quiet_NaN();
    }
    const torch::Tensor total = sums.sum.contiguous();
    const double* sum = total.data_ptr<double>();
    const int64_t width = total.size(1), positions = total.size(0);
    const std::vector<int64_t>& count = sums.count;
    SiteHook ablate = [sum, &count, width, positions, from](const FloatArray& v,
                                                            const std::string&) -> std::optional<FloatArray> {
        FloatArray a = v; // v: this window's own value (nothing before the site changed)
        for (int64_t t = std::min<int64_t>(from, v.dim(0)); t < std::min(v.dim(0), positions); ++t) {
            const double others = static_cast<double>(count[static_cast<size_t>(t)] - 1);
            if (others < 1) continue; // unreachable with two or more full windows
            for (int64_t j = 0; j < width; ++j) {
                const size_t i = static_cast<size_t>(t * width + j);
                a.data[i] = static_cast<float>((sum[i] - static_cast<double>(v.data[i])) / others);
            }
        }
        return a;
    };
    double ce = 0;
    for (const auto& ids : windows) {
        if (stop && stop->load()) return std::numeric_limits<double>::quiet_NaN();
        std::vector<std::string> warnings;
        ce += crossEntropySum(
            runWithHooks(model, std::vector<int64_t>(ids.begin(), ids.end()), {{site, ablate}}, &warnings), ids);
        if (!warnings.empty()) {
            note = "the ablation baseline (" + std::string(DictionaryQuality::kAblation) +
                   ") is not defined here: " + warnings.front();
            return std::numeric_limits<double>::quiet_NaN();
        }
    }
    return ce;
}

std::vector<std::vector<int32_t>> limitedWindows(const Model& model, const std::vector<std::string>& files,
                                                 int64_t context, int64_t maxWindows) {
    auto w = features::corpusWindows(model, files, context);
    if (maxWindows > 0 && static_cast<int64_t>(w.size()) > maxWindows) w.resize(static_cast<size_t>(maxWindows));
    return w;
}

/// z of one window's rows (rows from D on for offset sites), CPU float.
torch::Tensor windowFeatures(const features::Sources& sources, const Dictionary& d, const std::vector<int32_t>& ids,
                             torch::Tensor* rowsOut = nullptr) {
    const torch::Tensor rows = features::sourceRows(sources, ids);
    if (rowsOut) *rowsOut = rows;
    return features::encodeRows(d, rows);
}

/// Layer whose mixer reads what `site` writes or is, or -1.
int readingLayerOf(const Model& model, const std::string& site) {
    const ModelConfig& c = model.config();
    if (c.kind != ModelKind::Grassmann) return -1;
    const size_t dot = site.find('.');
    if (dot == std::string::npos || site.find('.', dot + 1) != std::string::npos) return -1;
    const std::string kind = site.substr(0, dot);
    const int l = std::stoi(site.substr(dot + 1));
    const int reader = kind == "resid" ? l : (kind == "mixer" || kind == "ffn") ? l + 1 : -1;
    return reader >= 0 && reader < c.nLayers ? reader : -1;
}

} // namespace

SiteActivations readSiteActivations(const Model& model, const std::string& site, const std::vector<std::string>& files,
                                    int64_t contextSize, int64_t maxRows) {
    torch::NoGradGuard noGrad;
    hookSiteShape(model, site, 4); // names the valid sites for a wrong one
    SiteActivations out;
    std::vector<torch::Tensor> parts;
    int64_t total = 0;
    const int64_t D = features::offsetOfSite(site);
    const auto windows = features::corpusWindows(model, files, contextSize);
    for (size_t w = 0; w < windows.size() && (maxRows <= 0 || total < maxRows); ++w) {
        torch::Tensor rows = features::siteRows(model, site, windows[w]);
        if (maxRows > 0 && total + rows.size(0) > maxRows) rows = rows.slice(0, 0, maxRows - total);
        for (int64_t i = 0; i < rows.size(0); ++i) {
            out.tokens.push_back(windows[w][static_cast<size_t>(D + i)]);
            out.window.push_back(static_cast<int64_t>(w));
            out.position.push_back(D + i);
        }
        total += rows.size(0);
        parts.push_back(rows);
        out.windowIds.push_back(windows[w]);
    }
    out.rows = features::toArray(torch::cat(parts, 0));
    return out;
}

namespace {

/// The figures for each source: its part of x and x^, the loss of its model with its part of x^
/// spliced in and with its site mean-ablated; L0 and the dead fraction are the dictionary's.
std::vector<DictionaryQuality> evaluateSources(const features::Sources& sources, const Dictionary& d,
                                               const std::vector<std::string>& files, int64_t contextSize,
                                               int64_t maxWindows, const std::atomic<bool>* stop) {
    torch::NoGradGuard noGrad;
    const auto windows = limitedWindows(*sources[0].model, files, contextSize, maxWindows);
    const size_t S = sources.size();
    const int64_t D = features::offsetOfSite(sources[0].site); // 0 for a crosscoder (no offset sites)
    const torch::Tensor wEnc = features::toTensor(d.wEnc), bEnc = features::toTensor(d.bEnc),
                        wDec = features::toTensor(d.wDec), bDec = features::toTensor(d.bDec);
    std::vector<DictionaryQuality> q(S);
    std::vector<double> sqErr(S, 0), sqSum(S, 0), ceClean(S, 0), ceSpliced(S, 0), ceAblated(S, 0);
    std::vector<std::vector<int32_t>> scored; // the windows of the first pass, ablated in the second
    std::vector<torch::Tensor> sum(S);
    std::vector<PositionSums> positionSums(S);
    double active = 0;
    int64_t rows = 0, predicted = 0;
    torch::Tensor fired = torch::zeros({d.config.dSae}, torch::kBool);
    for (const auto& ids : windows) {
        if (stop && stop->load()) break;
        const std::vector<int64_t> ids64(ids.begin(), ids.end());
        std::vector<FloatArray> values(S);
        std::vector<torch::Tensor> xs;
        for (size_t m = 0; m < S; ++m) {
            std::map<std::string, SiteHook> read;
            read[sources[m].site] = [&values, m](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
                values[m] = v;
                return std::nullopt;
            };
            ceClean[m] += crossEntropySum(runWithHooks(*sources[m].model, ids64, read), ids);
            positionSums[m].add(values[m]);
            const torch::Tensor all = features::toTensor(values[m]);
            xs.push_back(all.slice(0, std::min<int64_t>(D, all.size(0)), all.size(0)));
        }
        const torch::Tensor x = S == 1 ? xs[0] : torch::cat(xs, 1);
        const torch::Tensor z = features::encodeRows(d, x);
        const torch::Tensor xhat = z.matmul(wDec) + bDec;
        active += (z > 0).sum().item<double>();
        fired |= (z > 0).any(0);
        rows += x.size(0);
        predicted += static_cast<int64_t>(ids.size()) - 1;
        int64_t at = 0;
        for (size_t m = 0; m < S; ++m) {
            const int64_t w = xs[m].size(1);
            const torch::Tensor xm = xs[m].to(torch::kDouble), hm = xhat.slice(1, at, at + w);
            sqErr[m] += (xm - hm.to(torch::kDouble)).pow(2).sum().item<double>();
            sqSum[m] += xm.pow(2).sum().item<double>();
            sum[m] = sum[m].defined() ? sum[m] + xm.sum(0) : xm.sum(0);
            // The site replaced by its part of x^ (rows t < D of an offset keep theirs: they take no part).
            FloatArray spliced = values[m];
            const FloatArray xh = features::toArray(hm.contiguous());
            std::copy(xh.data.begin(), xh.data.end(), spliced.data.begin() + D * values[m].dim(1));
            std::map<std::string, SiteHook> splice;
            splice[sources[m].site] = [&spliced](const FloatArray&, const std::string&) -> std::optional<FloatArray> {
                return spliced;
            };
            ceSpliced[m] += crossEntropySum(runWithHooks(*sources[m].model, ids64, splice), ids);
            at += w;
        }
        scored.push_back(ids);
    }
    // The ablation: each source's site replaced by its per-position mean over the windows scored above.
    std::vector<std::string> notes(S);
    for (size_t m = 0; m < S && rows > 0; ++m)
        ceAblated[m] =
            ablatedCrossEntropy(*sources[m].model, sources[m].site, positionSums[m], D, scored, stop, notes[m]);
    for (size_t m = 0; m < S; ++m) {
        DictionaryQuality& qm = q[m];
        qm.ablationNote = notes[m];
        qm.rows = rows;
        qm.lossTokens = predicted;
        if (rows > 0) {
            const double n = static_cast<double>(rows);
            const double meanSq = (sum[m] / n).pow(2).sum().item<double>();
            const double totalVar = sqSum[m] - n * meanSq;
            qm.explainedVariance = totalVar > 0 ? 1 - sqErr[m] / totalVar : std::numeric_limits<double>::quiet_NaN();
            qm.mse = sqErr[m] / n;
            qm.l0 = active / n;
            qm.deadFraction = 1 - fired.to(torch::kDouble).mean().item<double>();
        }
        if (predicted > 0) {
            const double n = static_cast<double>(predicted);
            qm.lossClean = ceClean[m] / n;
            qm.lossSpliced = ceSpliced[m] / n;
            qm.lossAblated = ceAblated[m] / n;
            qm.lossRecovered = std::isfinite(qm.lossAblated) && qm.lossAblated > qm.lossClean
                                   ? (qm.lossAblated - qm.lossSpliced) / (qm.lossAblated - qm.lossClean)
                                   : std::numeric_limits<double>::quiet_NaN();
        }
    }
    return q;
}

} // namespace

/// A transcoder's figures: y^ from the input site against the target site's y, and the loss with
/// y^ spliced in at the target site (or the target site mean-ablated).
DictionaryQuality evaluateTranscoder(const Model& model, const Dictionary& d, const std::vector<std::string>& files,
                                     int64_t contextSize, int64_t maxWindows, const std::atomic<bool>* stop) {
    torch::NoGradGuard noGrad;
    const auto windows = limitedWindows(model, files, contextSize, maxWindows);
    const std::string& in = d.config.site;
    const std::string& out = d.config.targetSite;
    const torch::Tensor wDec = features::toTensor(d.wDec), bDec = features::toTensor(d.bDec);
    DictionaryQuality q;
    double sqErr = 0, sqSum = 0, active = 0, ceClean = 0, ceSpliced = 0, ceAblated = 0;
    std::vector<std::vector<int32_t>> scored; // the windows of the first pass, ablated in the second
    torch::Tensor sum = torch::zeros({d.config.dOut}, torch::kDouble);
    PositionSums positionSums;
    torch::Tensor fired = torch::zeros({d.config.dSae}, torch::kBool);
    for (const auto& ids : windows) {
        if (stop && stop->load()) break;
        const std::vector<int64_t> ids64(ids.begin(), ids.end());
        FloatArray x, y;
        std::map<std::string, SiteHook> read;
        read[in] = [&x](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            x = v;
            return std::nullopt;
        };
        read[out] = [&y](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            y = v;
            return std::nullopt;
        };
        ceClean += crossEntropySum(runWithHooks(model, ids64, read), ids);
        const torch::Tensor z = features::encodeRows(d, features::toTensor(x));
        const torch::Tensor yhat = z.matmul(wDec) + bDec;
        const torch::Tensor yt = features::toTensor(y).to(torch::kDouble);
        sqErr += (yt - yhat.to(torch::kDouble)).pow(2).sum().item<double>();
        sqSum += yt.pow(2).sum().item<double>();
        sum += yt.sum(0);
        positionSums.add(y);
        active += (z > 0).sum().item<double>();
        fired |= (z > 0).any(0);
        q.rows += yt.size(0);
        const FloatArray spliced = features::toArray(yhat.contiguous());
        std::map<std::string, SiteHook> splice;
        splice[out] = [&spliced](const FloatArray&, const std::string&) -> std::optional<FloatArray> {
            return spliced;
        };
        ceSpliced += crossEntropySum(runWithHooks(model, ids64, splice), ids);
        q.lossTokens += static_cast<int64_t>(ids.size()) - 1;
        scored.push_back(ids);
    }
    // The ablation of the target: each position's mean over the windows scored above.
    if (q.rows > 0) ceAblated = ablatedCrossEntropy(model, out, positionSums, 0, scored, stop, q.ablationNote);
    if (q.rows > 0) {
        const double n = static_cast<double>(q.rows);
        const double totalVar = sqSum - n * (sum / n).pow(2).sum().item<double>();
        q.explainedVariance = totalVar > 0 ? 1 - sqErr / totalVar : std::numeric_limits<double>::quiet_NaN();
        q.mse = sqErr / n;
        q.l0 = active / n;
        q.deadFraction = 1 - fired.to(torch::kDouble).mean().item<double>();
    }
    if (q.lossTokens > 0) {
        const double n = static_cast<double>(q.lossTokens);
        q.lossClean = ceClean / n;
        q.lossSpliced = ceSpliced / n;
        q.lossAblated = ceAblated / n;
        q.lossRecovered = std::isfinite(q.lossAblated) && q.lossAblated > q.lossClean
                              ? (q.lossAblated - q.lossSpliced) / (q.lossAblated - q.lossClean)
                              : std::numeric_limits<double>::quiet_NaN();
    }
    return q;
}

DictionaryQuality evaluateDictionary(const Model& model, const Dictionary& d, const std::vector<std::string>& files,
                                     int64_t contextSize, int64_t maxWindows, const std::atomic<bool>* stop) {
    checkDictionaryFits(d, model);
    if (d.config.transcoder()) return evaluateTranscoder(model, d, files, contextSize, maxWindows, stop);
    return evaluateSources(features::sourcesOf(d, model, nullptr), d, files, contextSize, maxWindows, stop).front();
}

std::vector<DictionaryQuality> evaluateCrosscoder(const Model& first, const Model& second, const Dictionary& d,
                                                  const std::vector<std::string>& files, int64_t contextSize,
                                                  int64_t maxWindows, const std::atomic<bool>* stop) {
    if (!d.config.crosscoder()) throw std::invalid_argument("this dictionary reads one model, not two");
    checkDictionaryFits(d, first, &second);
    return evaluateSources(features::sourcesOf(d, first, &second), d, files, contextSize, maxWindows, stop);
}

std::vector<FeatureSummary> summarizeFeatures(const Model& model, const Dictionary& d,
                                              const std::vector<std::string>& files, const std::vector<int64_t>& wanted,
                                              int64_t top, int64_t before, int64_t after, int64_t contextSize,
                                              int64_t maxWindows, const std::atomic<bool>* stop, const Model* second) {
    torch::NoGradGuard noGrad;
    checkDictionaryFits(d, model, second);
    const features::Sources sources = features::sourcesOf(d, model, second);
    std::vector<int64_t> feats = wanted;
    if (feats.empty())
        for (int64_t f = 0; f < d.config.dSae; ++f)
            feats.push_back(f);
    for (int64_t f : feats)
        if (f < 0 || f >= d.config.dSae)
            throw std::invalid_argument("feature " + std::to_string(f) + " does not exist (the dictionary has 0.." +
                                        std::to_string(d.config.dSae - 1) + ")");
    const auto windows = limitedWindows(model, files, contextSize, maxWindows);
    const int64_t D = features::offsetOfSite(d.config.site);
    const torch::Tensor select = torch::tensor(feats, torch::kLong);

    // One pass: per feature the `top` largest (activation, -row) and every nonzero value.
    struct Entry {
        float value;
        int64_t row; // global row: earlier rows win ties
        int64_t window, position;
        bool operator>(const Entry& o) const { return value != o.value ? value > o.value : row < o.row; }
    };
    using MinHeap = std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;
    std::vector<MinHeap> heaps(feats.size());
    std::vector<std::vector<float>> values(feats.size());
    std::vector<FeatureSummary> out(feats.size());
    int64_t row0 = 0;
    for (size_t w = 0; w < windows.size(); ++w) {
        if (stop && stop->load()) break;
        const torch::Tensor z = windowFeatures(sources, d, windows[w]).index_select(1, select).contiguous();
        const int64_t n = z.size(0), m = z.size(1);
        const float* zp = z.data_ptr<float>();
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < m; ++j) {
                const float v = zp[i * m + j];
                FeatureSummary& s = out[static_cast<size_t>(j)];
                ++s.rows;
                if (!(v > 0)) continue;
                ++s.fired;
                values[static_cast<size_t>(j)].push_back(v);
                MinHeap& h = heaps[static_cast<size_t>(j)];
                const Entry e{v, row0 + i, static_cast<int64_t>(w), D + i};
                if (static_cast<int64_t>(h.size()) < top) {
                    h.push(e);
                } else if (top > 0 && e > h.top()) {
                    h.pop();
                    h.push(e);
                }
            }
        row0 += n;
    }
    // Contexts: each window that holds a top row is run once more.
    std::map<int64_t, std::vector<std::pair<size_t, Entry>>> byWindow;
    for (size_t j = 0; j < feats.size(); ++j) {
        std::vector<Entry> es;
        while (!heaps[j].empty()) {
            es.push_back(heaps[j].top());
            heaps[j].pop();
        }
        std::reverse(es.begin(), es.end());
        out[j].top.resize(es.size());
        for (size_t r = 0; r < es.size(); ++r)
            byWindow[es[r].window].push_back({j * 1000000 + r, es[r]});
    }
    for (const auto& [w, entries] : byWindow) {
        const auto& ids = windows[static_cast<size_t>(w)];
        const torch::Tensor z = windowFeatures(sources, d, ids);
        for (const auto& [key, e] : entries) {
            const size_t j = key / 1000000, r = key % 1000000;
            FeatureContext c;
            c.activation = e.value;
            c.window = w;
            c.position = e.position;
            c.begin = std::max<int64_t>(0, e.position - before);
            const int64_t end = std::min<int64_t>(static_cast<int64_t>(ids.size()), e.position + after + 1);
            c.ids.assign(ids.begin() + c.begin, ids.begin() + end);
            for (int64_t p = c.begin; p < end; ++p)
                c.activations.push_back(p >= D ? z[p - D][feats[j]].item<float>() : 0.0f);
            out[j].top[r] = std::move(c);
        }
    }
    // Histograms, unembedding reads and reading-subspace shares.
    const auto params = model.parameters();
    const ModelConfig& cfg = model.config();
    // The decoder writes into the target site's space (a transcoder's), else into the site's own.
    const std::string& decoderSite = d.config.transcoder() ? d.config.targetSite : d.config.site;
    const std::string kind = decoderSite.substr(0, decoderSite.find('.'));
    // The unembedding read and the reading share use the first model's part of the decoder row.
    const int64_t firstWidth = d.config.crosscoder() ? d.config.firstWidth : d.config.outWidth();
    const bool residual = (kind == "resid" || kind == "mixer" || kind == "ffn") && firstWidth == cfg.dModel;
    const std::vector<double> relative = d.config.crosscoder() ? relativeDecoderNorms(d) : std::vector<double>{};
    const int reader = readingLayerOf(model, decoderSite);
    Eigen::MatrixXd basis;
    if (reader >= 0) {
        const FloatArray& wr = params.at("blocks." + std::to_string(reader) + ".w_red.weight"); // r x d
        Eigen::MatrixXd m(wr.dim(1), wr.dim(0));
        for (int64_t i = 0; i < wr.dim(0); ++i)
            for (int64_t k = 0; k < wr.dim(1); ++k)
                m(k, i) = wr.at2(i, k);
        Eigen::HouseholderQR<Eigen::MatrixXd> qr(m);
        basis = qr.householderQ() * Eigen::MatrixXd::Identity(m.rows(), m.cols());
    }
    const torch::Tensor embed = residual ? features::toTensor(params.at("tok_embed.weight")) : torch::Tensor();
    for (size_t j = 0; j < feats.size(); ++j) {
        FeatureSummary& s = out[j];
        s.feature = feats[j];
        const std::vector<float>& v = values[j];
        s.maxActivation = v.empty() ? 0.0f : *std::max_element(v.begin(), v.end());
        const int bins = 40;
        s.histogramCounts.assign(bins, 0);
        for (int b = 0; b <= bins; ++b)
            s.histogramEdges.push_back(s.maxActivation * b / bins);
        for (float x : v)
            ++s.histogramCounts[static_cast<size_t>(
                std::min<int64_t>(bins - 1, static_cast<int64_t>(x / s.maxActivation * bins)))];
        const float* w = d.wDec.row(feats[j]);
        if (residual) {
            const torch::Tensor dir = torch::from_blob(const_cast<float*>(w), {firstWidth}, torch::kFloat);
            const torch::Tensor logit = embed.matmul(dir);
            const int64_t k = std::min<int64_t>(10, logit.size(0));
            const auto [hv, hi] = logit.topk(k);
            const auto [lv, li] = (-logit).topk(k);
            for (int64_t i = 0; i < k; ++i) {
                s.promoted.push_back({static_cast<int32_t>(hi[i].item<int64_t>()), hv[i].item<float>()});
                s.suppressed.push_back({static_cast<int32_t>(li[i].item<int64_t>()), -lv[i].item<float>()});
            }
        }
        s.readingLayer = reader;
        if (reader >= 0) {
            Eigen::VectorXd x(firstWidth);
            for (int64_t i = 0; i < firstWidth; ++i)
                x(i) = w[i];
            const double n2 = x.squaredNorm();
            s.readingShare = n2 > 0 ? (basis.transpose() * x).squaredNorm() / n2 : std::nan("");
        } else {
            s.readingShare = std::nan("");
        }
        s.relativeNorm = relative.empty() ? std::nan("") : relative[static_cast<size_t>(feats[j])];
    }
    return out;
}

} // namespace gwb::engine
