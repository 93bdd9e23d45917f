// Geometry analyses of a Trace (workbench-spec.md section 1, model-spec steps 3-6), built on
// gwb_geometry's batched entry points so nothing here loops over tokens per quantity twice.
#include "gwb/engine/analysis.h"

#include "analysis_util.h"
#include "readout_disk_cache.h"

#include "gwb/geometry/attention_metrics.h"
#include "gwb/geometry/batch.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/product.h"
#include "gwb/geometry/subspace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <thread>

namespace gwb::engine {

namespace geo = gwb::geometry;
using analysis_detail::analyzeReadout;
using analysis_detail::gShare;
using analysis_detail::kNaNf;
using analysis_detail::markReadoutUndefined;
using analysis_detail::matrixOf;
using analysis_detail::mlpInfluence;
using analysis_detail::parallelFor;
using analysis_detail::planeInfluence;
using analysis_detail::Progress;
using analysis_detail::toFloatArray;

namespace {
constexpr int64_t kChunk = 256; ///< tokens per progress step / GEMM block

void checkGrassmann(const GrassmannLayerTrace& g, int64_t T, size_t l, bool mlp) {
    const std::string at = "analyzeTrace: layer " + std::to_string(l) + ": ";
    if (g.offsets.empty()) throw std::invalid_argument(at + "empty offset set");
    if (g.z.rank() != 2 || g.z.dim(0) != T || g.z.dim(1) < 2)
        throw std::invalid_argument(at + "z must be T x r with T = " + std::to_string(T) + ", r >= 2");
    const int64_t r = g.z.dim(1);
    if (g.gate.rank() != 2 || g.gate.dim(0) != T) throw std::invalid_argument(at + "gate must be T x d");
    const int64_t d = g.gate.dim(1);
    if (g.wRed.rank() != 2 || g.wRed.dim(0) != r || g.wRed.dim(1) != d)
        throw std::invalid_argument(at + "wRed must be r x d = " + std::to_string(r) + " x " + std::to_string(d));
    const int64_t C = geo::pairCount(r);
    if (mlp) { // aggregation per_offset_mlp: the MLP in place of W_plu
        const int64_t h = g.wGeoIn.rank() == 2 ? g.wGeoIn.dim(0) : 0;
        if (g.wGeoIn.rank() != 2 || h < 1 || g.wGeoIn.dim(1) != C || static_cast<int64_t>(g.bGeoIn.data.size()) != h ||
            g.wGeoOut.rank() != 2 || g.wGeoOut.dim(0) != d || g.wGeoOut.dim(1) != h ||
            static_cast<int64_t>(g.bGeoOut.data.size()) != d)
            throw std::invalid_argument(at +
                                        "the per-offset MLP must be wGeoIn d_geom x C(r,2) (C = " + std::to_string(C) +
                                        "), wGeoOut d x d_geom (d = " + std::to_string(d) + ") with their biases");
        return;
    }
    if (g.wPlu.rank() != 2 || g.wPlu.dim(0) != d || g.wPlu.dim(1) != C)
        throw std::invalid_argument(at + "wPlu must be d x C(r,2) = " + std::to_string(d) + " x " + std::to_string(C));
}

/// One Grassmann layer's core and read-out parts (as `parts` asks; anglesNext needs the next
/// layer). The core part's warnings go to `warnings`, the read-out's to `readoutWarnings`.
GrassmannLayerAnalysis analyzeGrassmannLayer(const GrassmannLayerTrace& g, int64_t T, double eps,
                                             const ModelConfig& cfg, size_t l, Progress& progress,
                                             std::vector<std::string>& warnings,
                                             std::vector<std::string>& readoutWarnings, AnalysisCache* cache,
                                             unsigned parts) {
    const bool core = (parts & kAnalysisCore) != 0, readout = (parts & kAnalysisReadout) != 0;
    GrassmannLayerAnalysis out;
    out.offsets = g.offsets;
    const auto O = static_cast<int64_t>(g.offsets.size());
    const int64_t d = g.gate.dim(1);
    const geo::RowMatrixXd z = matrixOf(g.z, "z");
    const std::string at = "layer " + std::to_string(l) + ": ";

    // B_t, its residual and planarity.
    // B_t as the model forms it (for aggregation mean: the scaled raw planes, not unit ones).
    // (per_offset_mlp forms no B_t: its planes' mean is only used for the pair norms below.)
    const geo::PlaneMean mode = cfg.aggregation == Aggregation::MeanThenNormalize ? geo::PlaneMean::MeanThenNormalize
                                : cfg.aggregation == Aggregation::Mean            ? geo::PlaneMean::Raw
                                                                                  : geo::PlaneMean::NormalizeThenMean;
    const double scale = cfg.aggregation == Aggregation::Mean ? cfg.stages.pluckerScale : 1.0;
    const bool normalized = mode == geo::PlaneMean::NormalizeThenMean;
    const bool mlp = cfg.aggregation == Aggregation::PerOffsetMlp;
    auto aggregate = [&](int64_t t0, int64_t t1) {
        geo::AggregatedBivectors a = geo::aggregateBivectors(z, g.offsets, eps, mode, scale, t0, t1);
        if (cfg.stages.wedgePastFirst) a.b = -a.b; // the model's planes are z_{t-D} ^ z_t
        return a;
    };
    // Where nothing after its checks reads B_t (one offset and no read-out part: GrassLM's layers
    // as the window first analyses them), B_t is formed a chunk of tokens at a time: the whole
    // T x C(r,2) would be 100 MB a layer at 4,096 tokens of r = 80, freshly paged in every time.
    const bool chunked = core && !readout && !mlp && O == 1;
    geo::AggregatedBivectors agg;
    if (chunked) {
        agg.norms.resize(T, O);
        agg.validCount.assign(static_cast<size_t>(T), 0);
    } else {
        agg = aggregate(0, T);
    }
    const geo::RowMatrixXd gate = matrixOf(g.gate, "gate");
    std::optional<geo::RowMatrixXd> contribution; // W_plu B_t, when the influence pass gives it
    if (!core) {
        if (readout && !mlp) { // the contributions as the core pass computes them, so both give the same
            if (!normalized) { // the core pass does not give them either: one GEMM on B_t
                analyzeReadout(g, z, agg, nullptr, out, progress, readoutWarnings, at, cache);
                return out;
            }
            GrassmannLayerAnalysis scratch;
            scratch.influence = FloatArray::zeros({T, O});
            int64_t ignored = 0;
            static const ProgressFn kSilent;
            Progress quiet(kSilent, 0);
            planeInfluence(g, z, gate, agg, normalized, cfg, eps, scratch, ignored, quiet, contribution);
            analyzeReadout(g, z, agg, contribution ? &*contribution : nullptr, out, progress, readoutWarnings, at,
                           cache);
        } else if (readout) {
            markReadoutUndefined(out, T, d, z.cols(), progress, readoutWarnings, at);
        }
        return out;
    }
    out.residual.assign(static_cast<size_t>(T), kNaNf);
    out.planarity.assign(static_cast<size_t>(T), kNaNf);
    out.coherence.assign(static_cast<size_t>(T), kNaNf);
    for (int64_t t0 = 0; t0 < T && !mlp; t0 += kChunk) {
        const int64_t n = std::min(kChunk, T - t0);
        geo::AggregatedBivectors part;
        if (chunked) {
            part = aggregate(t0, t0 + n);
            agg.norms.middleRows(t0, n) = part.norms;
            std::copy(part.validCount.begin(), part.validCount.end(), agg.validCount.begin() + t0);
            agg.degenerate += part.degenerate;
        }
        const geo::RowMatrixXd& b = chunked ? part.b : agg.b;
        const int64_t row0 = chunked ? 0 : t0; // token t0 + i is row row0 + i of b
        const geo::ResidualsAndPlanarities checks = geo::residualAndPlanarityBatch(b.middleRows(row0, n));
        for (int64_t i = 0; i < n; ++i) {
            if (agg.validCount[static_cast<size_t>(t0 + i)] == 0) continue;
            out.residual[static_cast<size_t>(t0 + i)] = static_cast<float>(checks.residual[i]);
            out.planarity[static_cast<size_t>(t0 + i)] = static_cast<float>(checks.planarity[i]);
            out.coherence[static_cast<size_t>(t0 + i)] = static_cast<float>(b.row(row0 + i).norm());
        }
        progress.advance(n);
    }
    out.pairNorm = toFloatArray(agg.norms);
    if (agg.degenerate > 0)
        warnings.push_back(at + std::to_string(agg.degenerate) +
                           " (t, D) pairs with ||z_t ^ z_{t-D}|| <= eps (parallel or zero reduced vectors)");
    if (mlp) {
        warnings.push_back(at + "B_t is not defined (residual, planarity, coherence left NaN): the mixer maps each "
                                "offset's plane through an MLP and averages the outputs, so no mean plane is formed");
        progress.advance(T);
    }

    // Influence: each offset's share of g, weighed by g's share of the mix.
    out.influence = FloatArray::zeros({T, O});
    int64_t zeroRows = 0;
    if (mlp)
        mlpInfluence(g, z, gate, cfg, eps, out, zeroRows, progress);
    else if (O == 1 && !readout) // the read-out part would take its contributions from the projections
        singleOffsetInfluence(agg, gate, cfg, out, zeroRows, progress);
    else
        planeInfluence(g, z, gate, agg, normalized, cfg, eps, out, zeroRows, progress, contribution);
    if (zeroRows > 0)
        warnings.push_back(at + std::to_string(zeroRows) + " tokens whose influence row is all zero (left NaN)");
    if (cfg.stages.featureNorm) { // g = LN_geo(...): the offsets' shares of g do not add up
        std::fill(out.influence.data.begin(), out.influence.data.end(), kNaNf);
        warnings.push_back(at + "influence is not defined: the mixer normalises g (g = LN(" +
                           (mlp ? "mean_D MLP(p^(D))" : "W_plu B + b") + ")), so no share of g belongs to one offset");
    }

    if (readout && mlp)
        markReadoutUndefined(out, T, d, z.cols(), progress, readoutWarnings, at);
    else if (readout)
        analyzeReadout(g, z, agg, contribution ? &*contribution : nullptr, out, progress, readoutWarnings, at, cache);

    out.meanGate.resize(static_cast<size_t>(T));
    out.gateAboveHalf.resize(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) {
        out.meanGate[static_cast<size_t>(t)] = static_cast<float>(gate.row(t).mean());
        out.gateAboveHalf[static_cast<size_t>(t)] =
            static_cast<float>((gate.row(t).array() > 0.5).count()) / static_cast<float>(d);
    }
    return out;
}

AttentionLayerAnalysis analyzeAttentionLayer(const AttentionLayerTrace& a, int64_t T, size_t l, Progress& progress) {
    const std::string at = "analyzeTrace: layer " + std::to_string(l) + ": ";
    if (a.q.rank() != 3 || a.k.shape != a.q.shape || a.q.dim(1) != T || a.q.dim(0) < 1)
        throw std::invalid_argument(at + "q and k must both be H x T x d_head with T = " + std::to_string(T));
    if (!a.attn.empty() &&
        (a.attn.rank() != 3 || a.attn.dim(0) != a.q.dim(0) || a.attn.dim(1) != T || a.attn.dim(2) != T))
        throw std::invalid_argument(at + "attn must be H x T x T");
    const int64_t H = a.q.dim(0), dh = a.q.dim(2);
    AttentionLayerAnalysis out;
    for (FloatArray* f :
         {&out.entropy, &out.normEntropy, &out.sparsity, &out.top1, &out.effSupport, &out.transportCost})
        *f = FloatArray::zeros({H, T});
    const double root = std::sqrt(static_cast<double>(dh));
    geo::RowMatrixXf scores; // a long prompt's block of scores, and its row scaled in double
    std::vector<double> scaled;
    if (a.attn.empty()) {
        scores.resize(std::min(kChunk, T), T);
        scaled.resize(static_cast<size_t>(T));
    }
    for (int64_t h = 0; h < H; ++h) {
        const Eigen::Map<const geo::RowMatrixXf> q(a.q.data.data() + h * T * dh, T, dh);
        const Eigen::Map<const geo::RowMatrixXf> k(a.k.data.data() + h * T * dh, T, dh);
        for (int64_t t0 = 0; t0 < T; t0 += kChunk) {
            const int64_t n = std::min(kChunk, T - t0);
            auto put = [&](int64_t t, const geo::RowMetrics& m) {
                const auto idx = static_cast<size_t>(h * T + t);
                out.entropy.data[idx] = static_cast<float>(m.entropy);
                out.normEntropy.data[idx] = static_cast<float>(m.normEntropy);
                out.sparsity.data[idx] = static_cast<float>(m.sparsity);
                out.top1.data[idx] = static_cast<float>(m.top1);
                out.effSupport.data[idx] = static_cast<float>(m.effSupport);
                out.transportCost.data[idx] = static_cast<float>(m.transportCost);
            };
            if (a.attn.empty()) {
                // A long prompt (no dense probabilities): each row's metrics straight from its
                // scores (one product per block into a buffer kept across blocks, one exp per
                // entry); the cost -q_t . k_j is the scaled scores' negative times sqrt(d_head).
                scores.topLeftCorner(n, t0 + n).noalias() = q.middleRows(t0, n) * k.topRows(t0 + n).transpose();
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t t = t0 + i;
                    for (int64_t j = 0; j <= t; ++j)
                        scaled[static_cast<size_t>(j)] = static_cast<double>(scores(i, j)) / root;
                    geo::RowMetrics m = geo::softmaxRowMetrics(std::span<const double>(scaled.data(), t + 1));
                    m.transportCost *= root;
                    put(t, m);
                }
            } else {
                // Scores q_t . k_j of the block's rows against keys 0..t0+n-1 (causal part only used).
                const geo::RowMatrixXf s = q.middleRows(t0, n) * k.topRows(t0 + n).transpose();
                std::vector<double> cost;
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t t = t0 + i;
                    const std::vector<float> row = attentionRow(a, h, t);
                    cost.resize(static_cast<size_t>(t + 1));
                    for (int64_t j = 0; j <= t; ++j)
                        cost[static_cast<size_t>(j)] = -static_cast<double>(s(i, j));
                    put(t, geo::rowMetrics(row, cost));
                }
            }
            progress.advance(n);
        }
    }
    return out;
}

/// Angles between layer l's and layer l+1's lifted pair planes; NaN where undefined. The layer
/// pairs run on `workers` threads; each pair lifts both of its layers, so memory stays at two
/// T x d arrays per thread however deep the model is. Warnings come in layer order.
void fillAnglesNext(const std::vector<LayerTrace>& layers, std::vector<GrassmannLayerAnalysis>& out, int64_t T,
                    Progress& progress, std::vector<std::string>& warnings, int workers, AnalysisCache* cache) {
    const size_t N = layers.size();
    std::vector<std::string> rankWarning(N), pairWarning(N);
    // Each layer's pseudo-inverse once (weight-only, cached), then the lifted rows
    // pinv(W_red^l) z^l_t (T x d) per pair of layers.
    std::vector<std::shared_ptr<const geo::PlaneLifter>> lifters(N);
    parallelFor(N, workers,
                [&](size_t l) { lifters[l] = analysis_detail::cachedLifter(cache, layers[l].grassmann->wRed); });
    auto lift = [&](size_t l, std::string& warning) {
        const GrassmannLayerTrace& g = *layers[l].grassmann;
        const geo::PlaneLifter& lifter = *lifters[l];
        if (lifter.rankDeficient())
            warning = "layer " + std::to_string(l) + ": W_red has rank " + std::to_string(lifter.rank()) +
                      " < r = " + std::to_string(g.wRed.dim(0)) + " (pseudo-inverse drops directions)";
        return lifter.liftRows(matrixOf(g.z, "z"));
    };
    for (size_t l = 0; l < N; ++l) {
        const auto O = static_cast<int64_t>(out[l].offsets.size());
        out[l].anglesNext = FloatArray({T, O, 2}, std::vector<float>(static_cast<size_t>(T * O * 2), kNaNf));
    }
    if (N == 1) lift(0, rankWarning[0]);
    parallelFor(N > 0 ? N - 1 : 0, workers, [&](size_t l) {
        std::string ignored; // layer l's own warning comes from pair l - 1 (or below, for layer 0)
        const geo::RowMatrixXd current = lift(l, l == 0 ? rankWarning[0] : ignored);
        const geo::RowMatrixXd next = lift(l + 1, rankWarning[l + 1]);
        if (current.cols() == next.cols()) {
            const geo::PlaneAnglesBatch pa = geo::pairPlaneAnglesBatch(current, next, out[l].offsets);
            out[l].anglesNext = toFloatArray(pa.angles);
            out[l].anglesNext.shape = {T, static_cast<int64_t>(out[l].offsets.size()), 2};
            if (pa.degenerate > 0)
                pairWarning[l] = "layer " + std::to_string(l) + ": " + std::to_string(pa.degenerate) +
                                 " (t, D) with a degenerate lifted plane in this or the next layer (angles NaN)";
        }
        progress.advance(T);
    });
    progress.advance(T); // the last layer has no next layer
    // The order a single pass gives: layer 0's rank, then per pair the next layer's rank and the pair's.
    auto add = [&](const std::string& w) {
        if (!w.empty()) warnings.push_back(w);
    };
    if (N > 0) add(rankWarning[0]);
    for (size_t l = 0; l + 1 < N; ++l) {
        add(rankWarning[l + 1]);
        add(pairWarning[l]);
    }
}

/// N x N geodesic distances between orthonormal bases; rank-0 bases give NaN. The distance is
/// symmetric and 0 from a subspace to itself, so only the pairs i < j are computed (on `workers`
/// threads).
FloatArray distanceMatrix(const std::vector<geo::Basis>& bases, int workers) {
    const auto N = static_cast<int64_t>(bases.size());
    FloatArray out = FloatArray::zeros({N, N});
    std::vector<std::pair<int64_t, int64_t>> pairs;
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = i; j < N; ++j)
            pairs.emplace_back(i, j);
    parallelFor(pairs.size(), workers, [&](size_t p) {
        const auto [i, j] = pairs[p];
        const geo::Basis& a = bases[static_cast<size_t>(i)];
        const geo::Basis& b = bases[static_cast<size_t>(j)];
        float v = kNaNf;
        if (a.rank > 0 && b.rank > 0)
            v = i == j ? 0.0f : static_cast<float>(geo::geodesicDistance(geo::principalAnglesOrthonormal(a.q, b.q)));
        out.data[static_cast<size_t>(i * N + j)] = v;
        out.data[static_cast<size_t>(j * N + i)] = v;
    });
    return out;
}
} // namespace

TraceAnalysis analyzeTrace(const Trace& trace, const AnalysisOptions& options, const ProgressFn& progressFn) {
    const int64_t T = trace.length();
    const size_t N = trace.layers.size();
    if (T <= 0) throw std::invalid_argument("analyzeTrace: trace has no tokens");
    if (N == 0) throw std::invalid_argument("analyzeTrace: trace has no layers");
    if (options.promptSubspaceK < 1) throw std::invalid_argument("analyzeTrace: promptSubspaceK must be >= 1");
    const bool grassmann = trace.layers.front().grassmann.has_value();
    for (size_t l = 0; l < N; ++l) {
        const LayerTrace& L = trace.layers[l];
        if (L.grassmann.has_value() != grassmann || L.attention.has_value() == grassmann)
            throw std::invalid_argument("analyzeTrace: layer " + std::to_string(l) +
                                        " is not of the same kind as layer 0 (need all Grassmann or all attention)");
        if (grassmann) checkGrassmann(*L.grassmann, T, l, trace.config.aggregation == Aggregation::PerOffsetMlp);
        if (L.h.rank() != 2 || L.h.dim(0) != T)
            throw std::invalid_argument("analyzeTrace: layer " + std::to_string(l) + ": h must be T x d");
    }
    // A Transformer's analysis has one part; a Grassmann one the parts asked for.
    const unsigned parts = grassmann ? (options.parts & kAnalysisAll) : static_cast<unsigned>(kAnalysisAll);
    const bool core = (parts & kAnalysisCore) != 0, promptPart = (parts & kAnalysisPromptSubspaces) != 0;

    // Work units: tokens per stage, so the callback can report smoothly and cancel promptly.
    int64_t total = 0;
    for (const LayerTrace& L : trace.layers) {
        if (!grassmann) {
            total += L.attention->q.dim(0) * T + 1;
            continue;
        }
        total += (core ? 2 * T : 0) + (promptPart ? 1 : 0) + ((parts & kAnalysisReadout) ? T : 0) +
                 ((parts & kAnalysisLayerAngles) ? T : 0) + ((parts & kAnalysisReadingSubspaces) ? 1 : 0);
    }
    Progress progress(progressFn, total);

    TraceAnalysis out;
    out.parts = parts;
    out.promptSubspaceK = options.promptSubspaceK;
    const double eps = trace.config.pluckerEps > 0 ? trace.config.pluckerEps : 1e-8;
    const int workers =
        options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    // Warnings in part order (core, read-out, angles, reading and prompt subspaces), each part's in layer order,
    // whatever the threads or the stages they were computed in (completeAnalysis keeps this order).
    auto warn = [&out](const std::string& w, unsigned part) {
        out.warnings.push_back(w);
        out.warningParts.push_back(part);
    };
    // Layers are independent here: each is analysed on its own thread, with its own warnings, which
    // are joined in layer order afterwards so the result is the same for any number of threads.
    if (grassmann)
        out.grassmann.resize(N);
    else
        out.attention.resize(N);
    std::vector<std::vector<std::string>> layerWarnings(N), readoutWarnings(N), promptWarnings(N);
    std::vector<geo::Basis> prompt(N);
    const bool layerPart = core || (parts & kAnalysisReadout);
    if (layerPart || promptPart)
        parallelFor(N, workers, [&](size_t l) {
            try {
                if (layerPart && grassmann)
                    out.grassmann[l] =
                        analyzeGrassmannLayer(*trace.layers[l].grassmann, T, eps, trace.config, l, progress,
                                              layerWarnings[l], readoutWarnings[l], options.cache.get(), parts);
                else if (layerPart)
                    out.attention[l] = analyzeAttentionLayer(*trace.layers[l].attention, T, l, progress);
            } catch (const std::invalid_argument& e) {
                // Say which layer's data was bad (e.g. NaN in z).
                throw std::invalid_argument("analyzeTrace: layer " + std::to_string(l) + ": " + e.what());
            }
            if (!promptPart) return;
            // The layer's prompt subspace (both kinds).
            const geo::RowMatrixXd h = matrixOf(trace.layers[l].h, "h");
            const int64_t k = std::min<int64_t>(options.promptSubspaceK, h.cols());
            prompt[l] = geo::principalSubspace(h, k, options.centerPromptSubspace);
            if (prompt[l].rankDeficient)
                promptWarnings[l].push_back(
                    "layer " + std::to_string(l) + ": prompt subspace has rank " + std::to_string(prompt[l].rank) +
                    " < k = " + std::to_string(options.promptSubspaceK) + " (too few distinct states)");
            progress.advance(1);
        });
    if (grassmann && !(core || (parts & kAnalysisReadout)))
        for (size_t l = 0; l < N; ++l)
            out.grassmann[l].offsets = trace.layers[l].grassmann->offsets;
    for (const std::vector<std::string>& w : layerWarnings)
        for (const std::string& line : w)
            warn(line, kAnalysisCore);
    for (const std::vector<std::string>& w : readoutWarnings)
        for (const std::string& line : w)
            warn(line, kAnalysisReadout);
    if (grassmann && (parts & kAnalysisLayerAngles) && trace.config.stages.reductionNorm) {
        // z = LN(W_red x): pinv(W_red) z is not what the layer read, so lifted planes (and the angles
        // between layers' planes) are not defined for this mixer.
        for (auto& a : out.grassmann) {
            const auto O = static_cast<int64_t>(a.offsets.size());
            a.anglesNext = FloatArray({T, O, 2}, std::vector<float>(static_cast<size_t>(T * O * 2), kNaNf));
        }
        progress.advance(static_cast<int64_t>(N) * T);
        warn("angles between the layers' lifted planes are not defined: the mixer normalises z "
             "(z = LN(W_red x)), so pinv(W_red) z is not the reading of the residual stream",
             kAnalysisLayerAngles);
    } else if (grassmann && (parts & kAnalysisLayerAngles)) {
        std::vector<std::string> angleWarnings;
        fillAnglesNext(trace.layers, out.grassmann, T, progress, angleWarnings, workers, options.cache.get());
        for (const std::string& w : angleWarnings)
            warn(w, kAnalysisLayerAngles);
    }

    // Prompt subspace distances (both kinds) and reading subspaces (Grassmann).
    if (promptPart) out.promptSubspaceDistance = distanceMatrix(prompt, workers);
    if (grassmann && (parts & kAnalysisReadingSubspaces)) {
        // Weight-only: kept on disk under a hash of every layer's W_red, as the read-out planes are.
        std::vector<const FloatArray*> wRed;
        for (size_t l = 0; l < N; ++l)
            wRed.push_back(&trace.layers[l].grassmann->wRed);
        std::optional<analysis_detail::ReadingSubspaces> reading = analysis_detail::loadReadingSubspaces(wRed);
        if (!reading) {
            std::vector<geo::Basis> bases;
            reading.emplace();
            for (size_t l = 0; l < N; ++l) {
                bases.push_back(geo::rowSpace(matrixOf(*wRed[l], "wRed")));
                reading->ranks.push_back(bases.back().rank);
                reading->widths.push_back(bases.back().requested);
            }
            reading->distance = distanceMatrix(bases, workers);
            analysis_detail::saveReadingSubspaces(wRed, *reading);
        }
        for (size_t l = 0; l < N; ++l) {
            if (reading->ranks[l] < reading->widths[l])
                warn("layer " + std::to_string(l) + ": W_red has rank " + std::to_string(reading->ranks[l]) +
                         " (reading subspace smaller than r)",
                     kAnalysisReadingSubspaces);
            progress.advance(1);
        }
        out.readingSubspaceDistance = std::move(reading->distance);
    }
    for (const std::vector<std::string>& w : promptWarnings) // the last part: completeAnalysis's order
        for (const std::string& line : w)
            warn(line, kAnalysisPromptSubspaces);
    return out;
}

TraceAnalysis completeAnalysis(const Trace& trace, const TraceAnalysis& partial, const AnalysisOptions& options,
                               const ProgressFn& progress) {
    const unsigned missing = kAnalysisAll & ~partial.parts;
    if (missing == 0) return partial;
    AnalysisOptions rest = options;
    rest.parts = missing;
    rest.promptSubspaceK = partial.promptSubspaceK;
    TraceAnalysis extra = analyzeTrace(trace, rest, progress);
    TraceAnalysis out = partial;
    if (out.grassmann.size() != extra.grassmann.size())
        throw std::invalid_argument("completeAnalysis: the partial analysis is not of this trace (" +
                                    std::to_string(out.grassmann.size()) + " Grassmann layers, the trace has " +
                                    std::to_string(extra.grassmann.size()) + ")");
    for (size_t l = 0; l < out.grassmann.size(); ++l) {
        GrassmannLayerAnalysis& a = out.grassmann[l];
        GrassmannLayerAnalysis& b = extra.grassmann[l];
        if (missing & kAnalysisCore) {
            a.offsets = b.offsets;
            a.residual = std::move(b.residual);
            a.planarity = std::move(b.planarity);
            a.coherence = std::move(b.coherence);
            a.pairNorm = std::move(b.pairNorm);
            a.influence = std::move(b.influence);
            a.meanGate = std::move(b.meanGate);
            a.gateAboveHalf = std::move(b.gateAboveHalf);
        }
        if (missing & kAnalysisReadout) {
            a.readoutResidual = std::move(b.readoutResidual);
            a.readoutPlanarity = std::move(b.readoutPlanarity);
            a.readoutSpectrum = std::move(b.readoutSpectrum);
            a.readoutTopPlane = std::move(b.readoutTopPlane);
            a.readoutContribution = std::move(b.readoutContribution);
            a.readoutAngles = std::move(b.readoutAngles);
        }
        if (missing & kAnalysisLayerAngles) a.anglesNext = std::move(b.anglesNext);
    }
    if (missing & kAnalysisCore) out.attention = std::move(extra.attention);
    if (missing & kAnalysisPromptSubspaces) out.promptSubspaceDistance = std::move(extra.promptSubspaceDistance);
    if (missing & kAnalysisReadingSubspaces) out.readingSubspaceDistance = std::move(extra.readingSubspaceDistance);
    // Warnings in part order, as one analyzeTrace gives them.
    std::vector<std::pair<unsigned, std::string>> all;
    for (const TraceAnalysis* a : {&out, &extra}) // a warning without a part is the core part's
        for (size_t i = 0; i < a->warnings.size(); ++i)
            all.emplace_back(i < a->warningParts.size() ? a->warningParts[i] : kAnalysisCore, a->warnings[i]);
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    out.warnings.clear();
    out.warningParts.clear();
    for (auto& [part, w] : all) {
        out.warningParts.push_back(part);
        out.warnings.push_back(std::move(w));
    }
    out.parts = kAnalysisAll;
    return out;
}

std::vector<std::string> analysisPartNames(unsigned parts, bool grassmann) {
    std::vector<std::string> out;
    if (!grassmann) {
        if (parts & kAnalysisCore) out.emplace_back("attention-row metrics");
        if (parts & kAnalysisPromptSubspaces) out.emplace_back("prompt subspaces");
        return out;
    }
    if (parts & kAnalysisCore) out.emplace_back("planes, influence and gates");
    if (parts & kAnalysisReadout) out.emplace_back("read-out planes");
    if (parts & kAnalysisLayerAngles) out.emplace_back("angles between layers");
    if (parts & kAnalysisReadingSubspaces) out.emplace_back("reading subspaces");
    if (parts & kAnalysisPromptSubspaces) out.emplace_back("prompt subspaces");
    return out;
}

} // namespace gwb::engine
