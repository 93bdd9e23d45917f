// attributeGraph (gwb/engine/graph_run.h): rows of the adjacency from backward passes of the frozen
// replacement batched over targets, features chosen by influence when there are too many, the
// graph assembled in circuit-tracer's node order, and each pruned edge split across the mixer units
// it passes through.

#include "gwb/engine/graph_run.h"

#include "graph/replacement.h"
#include "graph/row_runner.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/sites.h"
#include "gwb/engine/tokenizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>
#include <stdexcept>

namespace gwb::engine {

using graph::Layout;
using graph::Replacement;
using graph::RowRunner;
using graph::Target;

namespace {

void checkStop(const GraphRequest& request, double fraction, const std::string& stage) {
    if ((request.stop && request.stop->load()) || (request.progress && !request.progress(fraction, stage)))
        throw std::runtime_error("the attribution graph was stopped");
}

/// The logit nodes: the most probable tokens up to `mass` cumulative probability, at most `most`.
std::vector<int64_t> topLogits(const torch::Tensor& logits, int most, double mass, std::vector<double>& probs) {
    const torch::Tensor p = torch::softmax(logits, 0);
    const auto sorted = p.sort(0, /*descending=*/true);
    const torch::Tensor values = std::get<0>(sorted), order = std::get<1>(sorted);
    std::vector<int64_t> tokens;
    double total = 0;
    for (int64_t i = 0; i < std::min<int64_t>(std::max(most, 1), p.size(0)); ++i) {
        tokens.push_back(order[i].item<int64_t>());
        probs.push_back(values[i].item<double>());
        total += probs.back();
        if (total >= mass) break;
    }
    return tokens;
}

/// The logit nodes' directions (K x d) of request.targets in the replacement's unembedding space;
/// throws std::invalid_argument for a token outside the vocabulary or a direction of the wrong size.
torch::Tensor targetDirections(const graph::Replacement& R, const std::vector<GraphTarget>& targets) {
    const int64_t V = R.unembed.size(0), d = R.unembed.size(1);
    const torch::Tensor mean = R.unembed.mean(0);
    std::vector<torch::Tensor> dirs;
    for (const GraphTarget& t : targets) {
        const std::string name = t.label.empty() ? std::string("a target") : "the target '" + t.label + "'";
        if (!t.direction.empty()) {
            if (static_cast<int64_t>(t.direction.size()) != d)
                throw std::invalid_argument(name + " has a direction of " + std::to_string(t.direction.size()) +
                                            " values; the unembedding space has " + std::to_string(d));
            for (double x : t.direction)
                if (!std::isfinite(x)) throw std::invalid_argument(name + " has a direction that is not finite");
            dirs.push_back(torch::tensor(t.direction, torch::kDouble).to(R.options));
            continue;
        }
        if (t.tokens.empty() || t.tokens.size() != t.weights.size())
            throw std::invalid_argument(name + " needs tokens with one weight each, or a direction");
        torch::Tensor dir = torch::zeros({d}, R.options);
        for (size_t i = 0; i < t.tokens.size(); ++i) {
            if (t.tokens[i] < 0 || t.tokens[i] >= V)
                throw std::invalid_argument(name + ": token id " + std::to_string(t.tokens[i]) +
                                            " is outside the vocabulary (0.." + std::to_string(V - 1) + ")");
            dir = dir + t.weights[i] * (R.unembed[t.tokens[i]] - mean);
        }
        dirs.push_back(dir);
    }
    return torch::stack(dirs, 0);
}

/// A computed row over the full layout, kept in float32 by chunks of kChunk columns, only the chunks
/// with a non-zero (a target reads earlier blocks and positions only, and the layout is block-major,
/// then position-major, so a long prompt's rows are mostly whole chunks of zeros), with its sums over
/// every column in float64.
constexpr size_t kChunk = 512;
struct RowData {
    std::vector<uint32_t> chunks; ///< the chunks kept, ascending
    std::vector<float> values;    ///< kChunk per chunk kept (the last chunk of the layout may run past its end)
    double sum = 0, absSum = 0;

    explicit RowData(const std::vector<double>& row) {
        for (size_t c = 0; c * kChunk < row.size(); ++c) {
            const size_t begin = c * kChunk, end = std::min(row.size(), begin + kChunk);
            if (!std::all_of(row.begin() + static_cast<std::ptrdiff_t>(begin),
                             row.begin() + static_cast<std::ptrdiff_t>(end), [](double v) { return v == 0; }))
                chunks.push_back(static_cast<uint32_t>(c));
        }
        values.assign(chunks.size() * kChunk, 0.0f); // exactly: a long prompt keeps thousands of rows
        for (size_t k = 0; k < chunks.size(); ++k) {
            const size_t begin = chunks[k] * kChunk, end = std::min(row.size(), begin + kChunk);
            for (size_t j = begin; j < end; ++j) {
                values[k * kChunk + (j - begin)] = static_cast<float>(row[j]);
                sum += row[j];
                absSum += std::abs(row[j]);
            }
        }
    }
    /// f(column, value) for every kept column.
    template <class F> void forEach(size_t columns, F&& f) const {
        for (size_t k = 0; k < chunks.size(); ++k) {
            const size_t begin = chunks[k] * kChunk, end = std::min(columns, begin + kChunk);
            const float* v = values.data() + k * kChunk;
            for (size_t j = begin; j < end; ++j)
                f(j, v[j - begin]);
        }
    }
};

/// Influence of every node on the logits over the rows computed so far (circuit-tracer's
/// compute_influence on the |row|-normalised adjacency): sum over k >= 1 of w A^k.
std::vector<double> partialInfluence(const std::map<int64_t, RowData>& rows, const std::vector<double>& w) {
    const size_t n = w.size();
    std::vector<double> influence(n, 0.0), cur = w;
    for (int iter = 0; iter < 1000; ++iter) {
        std::vector<double> next(n, 0.0);
        bool any = false;
        for (const auto& [node, row] : rows) {
            const double x = cur[static_cast<size_t>(node)] / std::max(row.absSum, 1e-10);
            if (x == 0) continue;
            row.forEach(n, [&](size_t j, float v) { next[j] += x * std::abs(v); });
        }
        for (size_t j = 0; j < n; ++j) {
            influence[j] += next[j];
            any = any || next[j] != 0;
        }
        if (!any) break;
        cur.swap(next);
    }
    return influence;
}

/// The graph; with `pruningOut`, also its pruning with the request's thresholds (made once, the
/// one the loadings are split over).
AttributionGraph attributeWith(const Model& model, const TranscoderSet& transcoders, const GraphRequest& request,
                               GraphPruning* pruningOut) {
    validateGraphRequest(request);
    // Pieces typed for a contrast: resolved in this model's vocabulary, then the target's graph.
    if (request.targets.empty() && !request.answer.empty()) {
        GraphRequest withTarget = request;
        withTarget.targets = {contrastTarget(model, pieceId(model, request.answer, "the answer piece"),
                                             pieceId(model, request.wrong, "the wrong piece"))};
        withTarget.answer.clear();
        withTarget.wrong.clear();
        return attributeWith(model, transcoders, withTarget, pruningOut);
    }
    const auto started = std::chrono::steady_clock::now();
    for (const Dictionary& d : transcoders.layers)
        checkDictionaryFits(d, model);
    torch::InferenceMode off(false);
    Replacement R(model, transcoders, request.ids, request.doublePrecision ? torch::kDouble : torch::kFloat);
    checkStop(request, 0.05, "replacement");
    const int L = R.layers;
    const int64_t T = R.T;

    AttributionGraph g;
    g.modelName = model.displayName();
    g.architecture = R.grassmann ? "grassmann" : "transformer";
    g.prompt = request.prompt;
    g.ids = request.ids;
    g.layers = L;
    if (const TokenizerPtr tok = model.tokenizer())
        for (int32_t id : request.ids)
            g.pieces.push_back(tok->pieceText(id));
    for (int l = 0; l < L; ++l) {
        std::vector<std::string> names;
        for (int u = 0; u < R.units(l); ++u)
            names.push_back(R.grassmann ? siteName(SiteKind::Offset, l, R.params(l).offsets[static_cast<size_t>(u)])
                                        : siteName(SiteKind::Head, l, u));
        g.units.push_back(std::move(names));
    }
    g.maxLogitError = (R.replacementLogits - R.modelLogits).abs().max().item<double>();
    const double logitScale = std::max(1.0, R.modelLogits.abs().max().item<double>());
    if (g.maxLogitError > 1e-3 * logitScale)
        throw std::invalid_argument("the frozen replacement does not reproduce the model's logits (they differ by up "
                                    "to " +
                                    std::to_string(g.maxLogitError) + "): this model's variant is not covered");

    // The logit nodes: the top logits, or the targets asked for (a contrast, a direction).
    std::vector<double> probs;
    const bool custom = !request.targets.empty();
    const std::vector<int64_t> logitTokens =
        custom ? std::vector<int64_t>() : topLogits(R.modelLogits, request.maxLogits, request.logitProbability, probs);
    for (const GraphTarget& t : request.targets)
        probs.push_back(t.weight);
    const auto K = static_cast<int64_t>(custom ? request.targets.size() : logitTokens.size());
    const Layout full{R.activeCount, L * T, T, K};
    RowRunner runner =
        custom ? RowRunner(R, targetDirections(R, request.targets), full) : RowRunner(R, logitTokens, full);

    // Each node's value, and the constant part of the affine replacement (every source at 0).
    const std::vector<double> value = runner.recordedValues();
    const std::vector<double> bias = runner.values(runner.zeroSources());

    // Targets: the logits first, then features (every one, or by influence within the budget).
    std::map<int64_t, RowData> rows; // full node -> its row over the full layout
    std::vector<Target> featureTargets;
    for (int l = 0; l < L; ++l) {
        const torch::Tensor pos = R.frozen(l).actPos.to(torch::kCPU).contiguous();
        for (int64_t i = 0; i < pos.numel(); ++i)
            featureTargets.push_back(
                Target{l, i, false, R.featureStart[static_cast<size_t>(l)] + i, pos.data_ptr<int64_t>()[i]});
    }
    std::vector<Target> logitTargets;
    for (int64_t k = 0; k < K; ++k)
        logitTargets.push_back(Target{L, k, true, full.logitStart() + k, T - 1});
    const int64_t budget = std::min<int64_t>(std::max<int64_t>(request.maxFeatureNodes, 0), full.features);
    // A backward pass holds about twenty B x T x d tensors a block: long prompts take fewer targets a
    // pass (faster too: at 1,024 tokens 8 a pass ran in 0.7 of the time of 32, in 0.6 of the memory).
    const int64_t batch = std::clamp<int64_t>(request.batch * 256 / std::max<int64_t>(T, 1),
                                              std::max<int64_t>(1, std::min<int64_t>(4, request.batch)),
                                              std::max<int64_t>(request.batch, 1));
    const int64_t totalRows = K + budget;
    auto computeRows = [&](std::vector<Target> targets) {
        // Batches of one block and nearby positions: each runs only the blocks and positions it needs.
        std::stable_sort(targets.begin(), targets.end(), [](const Target& a, const Target& b) {
            return std::tie(a.layer, a.position) < std::tie(b.layer, b.position);
        });
        const auto B = static_cast<size_t>(batch);
        for (size_t at = 0; at < targets.size(); at += B) {
            const std::vector<Target> batch(targets.begin() + static_cast<std::ptrdiff_t>(at),
                                            targets.begin() +
                                                static_cast<std::ptrdiff_t>(std::min(targets.size(), at + B)));
            const std::vector<std::vector<double>> out = runner.rows(batch);
            for (size_t b = 0; b < batch.size(); ++b)
                rows.insert_or_assign(batch[b].node, RowData(out[b]));
            checkStop(request, 0.05 + 0.8 * static_cast<double>(rows.size()) / static_cast<double>(totalRows), "rows");
        }
    };
    computeRows(logitTargets);
    std::vector<uint8_t> chosen(static_cast<size_t>(full.features), 0);
    if (budget >= full.features) {
        computeRows(featureTargets);
        std::fill(chosen.begin(), chosen.end(), 1);
    } else {
        std::vector<double> w(static_cast<size_t>(full.count()), 0.0);
        for (int64_t k = 0; k < K; ++k)
            w[static_cast<size_t>(full.logitStart() + k)] = probs[static_cast<size_t>(k)];
        int64_t visited = 0;
        // Influence is recomputed between rounds: about eight rounds, and at least four batches each.
        const int64_t chunk = std::max<int64_t>(4 * batch, (budget + 7) / 8);
        while (visited < budget) {
            const std::vector<double> influence = partialInfluence(rows, w);
            std::vector<int64_t> order;
            for (int64_t f = 0; f < full.features; ++f)
                if (!chosen[static_cast<size_t>(f)]) order.push_back(f);
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                return influence[static_cast<size_t>(a)] > influence[static_cast<size_t>(b)];
            });
            order.resize(
                static_cast<size_t>(std::min<int64_t>({chunk, budget - visited, static_cast<int64_t>(order.size())})));
            if (order.empty()) break;
            std::vector<Target> next;
            for (int64_t f : order) {
                chosen[static_cast<size_t>(f)] = 1;
                next.push_back(featureTargets[static_cast<size_t>(f)]);
            }
            visited += static_cast<int64_t>(order.size());
            computeRows(next);
        }
    }

    runner.releasePass();

    // The graph in circuit-tracer's order, with the chosen features only.
    std::vector<int64_t> colMap(static_cast<size_t>(full.count()), -1);
    int64_t nf = 0;
    for (int64_t f = 0; f < full.features; ++f)
        if (chosen[static_cast<size_t>(f)]) colMap[static_cast<size_t>(f)] = nf++;
    for (int64_t j = full.features; j < full.count(); ++j)
        colMap[static_cast<size_t>(j)] = nf + (j - full.features);
    g.features = nf;
    g.errors = full.errors;
    g.tokens = T;
    g.logits = K;
    g.activeFeatures = full.features;
    const int64_t n = nf + full.errors + T + K;
    g.nodes.resize(static_cast<size_t>(n));
    for (const Target& t : featureTargets) {
        const int64_t at = colMap[static_cast<size_t>(t.node)];
        if (at < 0) continue;
        const graph::Frozen& F = R.frozen(t.layer);
        GraphNode& node = g.nodes[static_cast<size_t>(at)];
        node.kind = GraphNodeKind::Feature;
        node.layer = t.layer;
        node.position = F.actPos[t.local].item<int64_t>();
        node.index = F.actFeat[t.local].item<int64_t>();
        node.value = value[static_cast<size_t>(t.node)];
    }
    for (int l = 0; l < L; ++l) {
        const torch::Tensor norms = R.base.err[static_cast<size_t>(l)][0].norm(2, {-1}).to(torch::kCPU, torch::kDouble);
        for (int64_t t = 0; t < T; ++t) {
            GraphNode& node = g.nodes[static_cast<size_t>(nf + l * T + t)];
            node.kind = GraphNodeKind::Error;
            node.layer = l;
            node.position = t;
            node.index = -1;
            node.value = norms[t].item<double>();
        }
    }
    const torch::Tensor embNorms = R.base.emb[0].norm(2, {-1}).to(torch::kCPU, torch::kDouble);
    for (int64_t t = 0; t < T; ++t) {
        GraphNode& node = g.nodes[static_cast<size_t>(nf + full.errors + t)];
        node.kind = GraphNodeKind::Token;
        node.layer = -1;
        node.position = t;
        node.index = request.ids[static_cast<size_t>(t)];
        node.value = embNorms[t].item<double>();
        if (t < static_cast<int64_t>(g.pieces.size())) node.label = g.pieces[static_cast<size_t>(t)];
    }
    for (int64_t k = 0; k < K; ++k) {
        GraphNode& node = g.nodes[static_cast<size_t>(nf + full.errors + T + k)];
        node.kind = GraphNodeKind::Logit;
        node.layer = L;
        node.position = T - 1;
        node.value = value[static_cast<size_t>(full.logitStart() + k)];
        node.probability = probs[static_cast<size_t>(k)];
        if (custom) { // circuit-tracer's virtual index of a custom target: past the vocabulary
            node.index = R.unembed.size(0) + k;
            node.label = request.targets[static_cast<size_t>(k)].label;
            continue;
        }
        node.index = logitTokens[static_cast<size_t>(k)];
        if (const TokenizerPtr tok = model.tokenizer()) node.label = tok->pieceText(static_cast<int32_t>(node.index));
    }
    // Rows: the chosen features' (in node order), then the logits'.
    std::vector<int64_t> rowFull;
    for (int64_t f = 0; f < full.features; ++f)
        if (chosen[static_cast<size_t>(f)]) rowFull.push_back(f);
    for (int64_t k = 0; k < K; ++k)
        rowFull.push_back(full.logitStart() + k);
    g.rows = FloatArray::zeros({static_cast<int64_t>(rowFull.size()), n});
    for (size_t r = 0; r < rowFull.size(); ++r) {
        const int64_t node = rowFull[r];
        const RowData& row = rows.at(node);
        const double sum = row.sum; // over every active feature, chosen or not
        row.forEach(static_cast<size_t>(full.count()), [&](size_t j, float v) {
            const int64_t at = colMap[j];
            if (at >= 0) g.rows.data[r * static_cast<size_t>(n) + static_cast<size_t>(at)] = v;
        });
        const double v = value[static_cast<size_t>(node)], b = bias[static_cast<size_t>(node)];
        g.rowNodes.push_back(colMap[static_cast<size_t>(node)]);
        g.bias.push_back(b);
        g.completeness.push_back(std::abs(v - sum - b) / std::max(std::abs(v), 1e-6));
    }
    rows.clear(); // the full layout's rows are in g.rows now: free them before the scores and pruning

    if (request.loadings || pruningOut) {
        GraphScores scores;
        GraphPruning pruning = pruneGraph(g, request.nodeThreshold, request.edgeThreshold, &scores);
        g.scores = scores;
        if (request.loadings)
            g.loadings = graph::edgeLoadings(runner, g, rowFull, colMap, pruning, batch,
                                             [&](double f) { checkStop(request, 0.85 + 0.15 * f, "loadings"); });
        if (pruningOut) *pruningOut = std::move(pruning);
    } else {
        g.scores = graphScores(g);
    }
    checkStop(request, 1.0, "done");
    g.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return g;
}

} // namespace

AttributionGraph attributeGraph(const Model& model, const TranscoderSet& transcoders, const GraphRequest& request) {
    return attributeWith(model, transcoders, request, nullptr);
}

PrunedGraph attributeAndPrune(const Model& model, const TranscoderSet& transcoders, const GraphRequest& request) {
    PrunedGraph out;
    out.graph = attributeWith(model, transcoders, request, &out.pruning);
    return out;
}

} // namespace gwb::engine

namespace gwb::engine {

GraphPair runGraphModels(const ModelOpener& open, const GraphModels& models, const std::vector<int32_t> ids[2],
                         const GraphRequest& request, const RunProgress& progress) {
    GraphPair pair;
    std::vector<int> which;
    for (int m = 0; m < 2; ++m)
        if (!models.paths[m].empty() && !models.transcoders[m].empty() && !ids[m].empty()) which.push_back(m);
    std::atomic<bool> cancelled{false};
    for (size_t i = 0; i < which.size(); ++i) {
        const int m = which[i];
        pair.ran[m] = true;
        pair.transcoders[m] = models.transcoders[m];
        GraphRequest r = request;
        r.ids = ids[m];
        r.progress = [&, i](double f, const std::string& stage) {
            if (request.progress && !request.progress(f, stage)) return false;
            if (progress && !progress((static_cast<double>(i) + f) / static_cast<double>(which.size()))) {
                cancelled = true;
                return false;
            }
            return true;
        };
        try {
            const Model model = open(models.paths[m], models.device);
            const TranscoderSet set = loadTranscoderSet(models.transcoders[m], &model);
            PrunedGraph pruned = attributeAndPrune(model, set, r);
            pair.graphs[m] = std::move(pruned.graph);
            pair.pruning[m] = std::move(pruned.pruning);
        } catch (const std::exception& e) {
            if (cancelled || (request.stop && request.stop->load())) throw std::runtime_error(kCancelledKeepsPrevious);
            pair.errors[m] = e.what();
        }
    }
    return pair;
}

GraphTarget contrastTarget(const Model& model, int64_t answer, int64_t wrong) {
    GraphTarget t;
    const TokenizerPtr tok = model.tokenizer();
    auto piece = [&](int64_t id) { return tok ? tok->pieceText(static_cast<int32_t>(id)) : std::to_string(id); };
    t.label = "logit(" + piece(answer) + ") - logit(" + piece(wrong) + ")";
    t.tokens = {answer, wrong};
    t.weights = {1.0, -1.0};
    return t;
}

GraphTarget tokenTarget(const Model& model, int64_t token) {
    GraphTarget t;
    const TokenizerPtr tok = model.tokenizer();
    t.label = "logit(" + (tok ? tok->pieceText(static_cast<int32_t>(token)) : std::to_string(token)) + ")";
    t.tokens = {token};
    t.weights = {1.0};
    return t;
}

struct GraphProbe::Impl {
    std::unique_ptr<Replacement> R;
    std::unique_ptr<RowRunner> runner;
    std::vector<Target> targets;
};

GraphProbe::GraphProbe(const Model& model, const TranscoderSet& transcoders, const std::vector<int32_t>& ids,
                       bool doublePrecision)
    : m_impl(new Impl) {
    torch::InferenceMode off(false);
    m_impl->R =
        std::make_unique<Replacement>(model, transcoders, ids, doublePrecision ? torch::kDouble : torch::kFloat);
    std::vector<double> probs;
    const GraphRequest defaults; // the logit nodes attributeGraph chooses by default
    const std::vector<int64_t> tokens =
        topLogits(m_impl->R->modelLogits, defaults.maxLogits, defaults.logitProbability, probs);
    const Layout layout{m_impl->R->activeCount, m_impl->R->layers * m_impl->R->T, m_impl->R->T,
                        static_cast<int64_t>(tokens.size())};
    m_impl->runner = std::make_unique<RowRunner>(*m_impl->R, tokens, layout);
}

GraphProbe::~GraphProbe() {
    delete m_impl;
}

std::vector<double> GraphProbe::values(int64_t source, double scale, int routeLayer, int routeUnit) const {
    torch::InferenceMode off(false);
    Replacement& R = *m_impl->R;
    const Layout& lay = m_impl->runner->layout();
    graph::Sources s;
    s.emb = R.base.emb.clone();
    for (int l = 0; l < R.layers; ++l) {
        s.act.push_back(R.base.act[static_cast<size_t>(l)].clone());
        s.err.push_back(R.base.err[static_cast<size_t>(l)].clone());
    }
    if (source >= 0) {
        torch::NoGradGuard noGrad;
        if (source < lay.features) {
            int l = R.layers - 1;
            while (R.featureStart[static_cast<size_t>(l)] > source)
                --l;
            s.act[static_cast<size_t>(l)][0][source - R.featureStart[static_cast<size_t>(l)]] *= 1 + scale;
        } else if (source < lay.tokenStart()) {
            const int64_t e = source - lay.errorStart();
            s.err[static_cast<size_t>(e / R.T)][0][e % R.T] *= 1 + scale;
        } else if (source < lay.logitStart()) {
            s.emb[0][source - lay.tokenStart()] *= 1 + scale;
        } else {
            throw std::invalid_argument("GraphProbe: a logit is not a source");
        }
    }
    if (routeLayer < 0) return m_impl->runner->values(s);
    if (routeLayer >= R.layers || routeUnit < 0 || routeUnit > R.units(routeLayer))
        throw std::invalid_argument("GraphProbe: no such route");
    graph::Route route{routeLayer, torch::zeros({1, R.units(routeLayer) + 1}, R.options)};
    route.mask[0][routeUnit] = 1.0;
    return m_impl->runner->values(s, &route);
}

std::pair<std::vector<double>, std::vector<double>> GraphProbe::logits() const {
    auto vec = [](const torch::Tensor& t) {
        const torch::Tensor c = t.contiguous();
        return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
    };
    return {vec(m_impl->R->modelLogits), vec(m_impl->R->replacementLogits)};
}

} // namespace gwb::engine
