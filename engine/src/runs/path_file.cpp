#include "gwb/engine/path_file.h"

#include "gwb/engine/config.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patch_input.h"
#include "gwb/engine/patch_pairs_run.h"

#include "pairs_meta.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace gwb::engine {

namespace {

using nlohmann::json;

const char* kDefinitions[][2] = {
    {"components",
     "Grassmann layer l: offset.l.D (offset D's normalised Plucker vectors), mixer.l (g after the empty rule), "
     "gate.l (a), ffn.l (the FFN output); Transformer layer l: head.l.H (the head's context slice, the input of "
     "out_proj), mixer.l (the attention output after out_proj), ffn.l. Norms and skip paths (residual additions, the "
     "gate's products) are not components: they are always recomputed."},
    {"logits",
     "direct effect of sender S: the corrupted prompt runs with S at its clean value; what in S's own sublayer "
     "depends on S is recomputed from it (offset -> B_t -> g -> gate and mix; mixer -> gate and mix; gate -> mix; "
     "head -> out_proj); every other component keeps its value from the plain corrupted run (every other layer's "
     "offsets, mixer, gate and heads, and every FFN, S's own layer's included). The metric of that run."},
    {"resid.M",
     "effect of S through block input h^M (M > S's layer): h^M is recorded in the run above; the corrupted prompt "
     "then runs normally with only h^M replaced by it; the metric of that run. NaN at or before S's layer."},
    {"metric", "senders x receivers  logit[answer] - logit[wrong] at the metric position"},
    {"effect",
     "senders x receivers  (metric - corrupt_metric) / (clean_metric - corrupt_metric); NaN where undefined, and "
     "everywhere when |clean_metric - corrupt_metric| < min_difference (effect_defined false, effect_note why): "
     "then metric - corrupt_metric, the raw effect in logits, is what is defined"}};

const char* kLinearDefinition =
    "direct logit attribution at the metric position of a pre-norm model: h^N_m = embed + every block's "
    "writes, read through the final LayerNorm with its scale sigma frozen at the corrupted run's value: "
    "term = write . P(gamma * (E[answer] - E[wrong])) / sigma (P subtracts the mean); linear_corrupt: "
    "the corrupted run's terms, which sum with linear_bias = beta . (E[answer] - E[wrong]) to "
    "corrupt_metric; linear_clean: the clean run's writes read the same way; linear_delta = clean - "
    "corrupt. Terms: embed; Grassmann offset.l.D = the gate's share of offset D's read-out ((1 - a) W_plu "
    "p_D / |W_m|), mixer_bias.l = (1 - a) b_plu, gate_skip.l = a LN1(h); attention head.l.H = out_proj's "
    "columns of head H times its context row, attn_bias.l; ln_mix_bias.l (mixer writes pass LN_mix with "
    "its scale frozen too); ffn.l. linear_channel_*: blocks x d, the offsets' terms of each block split "
    "by read-out channel (row c of W_plu)";

json definitions() {
    json defs;
    for (const auto& d : kDefinitions)
        defs[d[0]] = d[1];
    return defs;
}

void writeNpz(const std::string& path, const std::vector<NpzMember>& arrays, const std::string& meta) {
    NpzWriter npz;
    for (const NpzMember& m : arrays)
        npz.add(m);
    npz.addFile("meta.json", meta);
    npz.write(path);
}

} // namespace

std::vector<NpzMember> pathArrays(const PathResult& r, const LinearResult* lin) {
    const auto S = static_cast<int64_t>(r.senderLabels.size()), R = static_cast<int64_t>(r.receiverLabels.size());
    std::vector<NpzMember> out;
    out.push_back(NpzMember{"metric", Array<double>({S, R}, r.metric)});
    out.push_back(NpzMember{"effect", Array<double>({S, R}, r.effect)});
    out.push_back(NpzMember{"clean_metric", Array<double>({}, {r.cleanMetric})});
    out.push_back(NpzMember{"corrupt_metric", Array<double>({}, {r.corruptMetric})});
    if (lin) {
        const auto K = static_cast<int64_t>(lin->labels.size());
        std::vector<double> delta(lin->clean.size());
        for (size_t i = 0; i < delta.size(); ++i)
            delta[i] = lin->clean[i] - lin->corrupt[i];
        out.push_back(NpzMember{"linear_corrupt", Array<double>({K}, lin->corrupt)});
        out.push_back(NpzMember{"linear_clean", Array<double>({K}, lin->clean)});
        out.push_back(NpzMember{"linear_delta", Array<double>({K}, delta)});
        out.push_back(NpzMember{"linear_bias", Array<double>({}, {lin->bias})});
        if (lin->channels > 0) {
            const int64_t N = static_cast<int64_t>(lin->channelCorrupt.size()) / lin->channels;
            out.push_back(NpzMember{"linear_channel_corrupt", Array<double>({N, lin->channels}, lin->channelCorrupt)});
            out.push_back(NpzMember{"linear_channel_clean", Array<double>({N, lin->channels}, lin->channelClean)});
        }
    }
    return out;
}

std::string pathMetaJson(const Model& m, const PathRequest& q, const PathResult& r, const PathFileContext& ctx,
                         const LinearResult* lin) {
    json meta;
    meta["model_file"] = ctx.modelFile;
    meta["model_name"] = m.displayName();
    meta["model_kind"] = m.config().kind == ModelKind::Grassmann ? "grassmann" : "transformer";
    meta["sender_labels"] = r.senderLabels;
    meta["receiver_labels"] = r.receiverLabels;
    meta["clean_prompt"] = ctx.cleanPrompt;
    meta["corrupt_prompt"] = ctx.corruptPrompt;
    meta["metric_position"] = r.metricPosition;
    meta["sender_position"] = q.senderPosition;
    meta["answer"] = {{"typed", ctx.answer}, {"piece", pieceTexts(m, {q.answer}).front()}, {"id", q.answer}};
    meta["wrong"] = {{"typed", ctx.wrong}, {"piece", pieceTexts(m, {q.wrong}).front()}, {"id", q.wrong}};
    meta["clean_metric"] = r.cleanMetric;
    meta["corrupt_metric"] = r.corruptMetric;
    meta["effect_defined"] = r.effectDefined;
    meta["min_difference"] = r.minDifference;
    if (!r.effectNote.empty()) meta["effect_note"] = r.effectNote;
    meta["definitions"] = definitions();
    if (lin) {
        meta["linear_labels"] = lin->labels;
        meta["definitions"]["linear"] = kLinearDefinition;
    }
    return meta.dump(2);
}

void writePathFile(const std::string& path, const Model& m, const PathRequest& q, const PathResult& r,
                   const PathFileContext& ctx, const LinearResult* lin) {
    writeNpz(path, pathArrays(r, lin), pathMetaJson(m, q, r, ctx, lin));
}

PathPairsResult computePathPairs(const Model& m, const PairsFile& file, const PathRequest& shape, int bootstrap,
                                 uint64_t seed, const std::function<bool(double)>& progress) {
    PathPairsResult out;
    out.skipped = file.skipped;
    out.fileLines = file.lines;
    out.bootstrap = bootstrap;
    out.seed = seed;
    std::vector<PathResult> results;
    json pairsMeta = json::array();
    const auto n = static_cast<double>(std::max<size_t>(file.pairs.size(), 1));
    for (size_t i = 0; i < file.pairs.size(); ++i) {
        const PatchPair& pair = file.pairs[i];
        try {
            const PatchRequest req = pairRequest(m, pair, "resid", "patch", -1);
            PathRequest q = shape;
            q.clean = req.clean;
            q.corrupt = req.corrupt;
            q.answer = req.answer;
            q.wrong = req.wrong;
            q.position = req.position;
            results.push_back(
                pathPatching(m, q, [&](double f) { return !progress || progress((static_cast<double>(i) + f) / n); }));
            out.lines.push_back(pair.line);
            json entry = pairJson(m, pair, req);
            entry["metric_position"] = results.back().metricPosition;
            entry["clean_metric"] = results.back().cleanMetric;
            entry["corrupt_metric"] = results.back().corruptMetric;
            pairsMeta.push_back(std::move(entry));
        } catch (const std::invalid_argument& e) {
            out.skipped.push_back({pair.line, e.what()});
        }
    }
    sortSkippedOrRefuse(out.skipped, results.size());
    const PathResult& first = results.front();
    out.senderLabels = first.senderLabels;
    out.receiverLabels = first.receiverLabels;
    out.pairs = static_cast<int64_t>(results.size());
    for (const PathResult& r : results) {
        out.metric.insert(out.metric.end(), r.metric.begin(), r.metric.end());
        out.effect.insert(out.effect.end(), r.effect.begin(), r.effect.end());
        out.cleanMetric.push_back(r.cleanMetric);
        out.corruptMetric.push_back(r.corruptMetric);
    }
    const auto cells = static_cast<int64_t>(out.senderLabels.size() * out.receiverLabels.size());
    out.estimates = estimatePairs(out.metric, out.cleanMetric, out.corruptMetric, true, out.pairs, cells,
                                  shape.minDifference, bootstrap, seed);
    out.pairsJson = pairsMeta.dump();
    if (progress) progress(1.0);
    return out;
}

std::vector<NpzMember> pathPairsArrays(const PathPairsResult& r) {
    const int64_t P = r.pairs, S = static_cast<int64_t>(r.senderLabels.size()),
                  R = static_cast<int64_t>(r.receiverLabels.size());
    const PairsEstimates& e = r.estimates;
    std::vector<double> raw(r.metric.size());
    for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < S * R; ++i) {
            const size_t k = static_cast<size_t>(p * S * R + i);
            raw[k] = r.metric[k] - r.corruptMetric[static_cast<size_t>(p)];
        }
    const DifferenceSummary& d = e.difference;
    return {NpzMember{"metric", Array<double>({P, S, R}, r.metric)},
            NpzMember{"effect", Array<double>({P, S, R}, r.effect)},
            NpzMember{"raw_effect", Array<double>({P, S, R}, raw)},
            NpzMember{"clean_metric", Array<double>({P}, r.cleanMetric)},
            NpzMember{"corrupt_metric", Array<double>({P}, r.corruptMetric)},
            NpzMember{"line", Array<int64_t>({P}, r.lines)},
            NpzMember{"effect_mean", Array<double>({S, R}, e.ratio)},
            NpzMember{"effect_ci_low", Array<double>({S, R}, e.ratioLow)},
            NpzMember{"effect_ci_high", Array<double>({S, R}, e.ratioHigh)},
            NpzMember{"effect_n", Array<int64_t>({S, R}, e.n)},
            NpzMember{"raw_mean", Array<double>({S, R}, e.raw)},
            NpzMember{"raw_ci_low", Array<double>({S, R}, e.rawLow)},
            NpzMember{"raw_ci_high", Array<double>({S, R}, e.rawHigh)},
            NpzMember{"mean_of_ratios", Array<double>({S, R}, e.meanOfRatios)},
            NpzMember{"mean_of_ratios_n", Array<int64_t>({S, R}, e.meanOfRatiosN)},
            NpzMember{"mean_of_ratios_left_out", Array<int64_t>({S, R}, e.leftOut)},
            NpzMember{"difference", Array<double>({4}, {d.mean, d.low, d.high, d.shareInDirection})},
            NpzMember{"p_value", Array<double>({S, R}, e.pValue)},
            NpzMember{"holm_marked", Array<uint8_t>({S, R}, e.marked)}};
}

std::string pathPairsMetaJson(const Model& m, const PathPairsResult& r, const std::string& modelFile,
                              const std::string& pairsFile) {
    json meta;
    meta["model_file"] = modelFile;
    meta["model_name"] = m.displayName();
    meta["sender_labels"] = r.senderLabels;
    meta["receiver_labels"] = r.receiverLabels;
    meta["pairs_file"] = pairsFile;
    meta["pairs"] = json::parse(r.pairsJson.empty() ? "[]" : r.pairsJson);
    json sk = json::array();
    for (const SkippedLine& s : r.skipped)
        sk.push_back({{"line", s.line}, {"reason", s.reason}});
    meta["skipped"] = sk;
    meta["bootstrap"] = r.bootstrap;
    meta["seed"] = r.seed;
    json defs = definitions();
    const PairsEstimates& e = r.estimates;
    defs["raw_effect"] = "pairs x senders x receivers  metric - corrupt_metric, logits";
    defs["effect_mean"] = "senders x receivers  ratio of means: sum over pairs of (metric - corrupt_metric) / sum of "
                          "(clean_metric - corrupt_metric); NaN where the mean denominator is below min_difference";
    defs["effect_ci_low"] = "senders x receivers  2.5th percentile of the ratio over paired bootstrap resamples of the "
                            "pairs (effect_claims.h's bootstrapDraw)";
    defs["effect_ci_high"] = "senders x receivers  97.5th percentile of the same";
    defs["effect_n"] = "senders x receivers  pairs that define the cell";
    defs["raw_mean"] = "senders x receivers  mean raw_effect (logits); raw_ci_low/high its interval";
    defs["mean_of_ratios"] = "senders x receivers  mean of per-pair effects over the pairs with |clean - corrupted| "
                             ">= min_difference; mean_of_ratios_n used, mean_of_ratios_left_out left out";
    defs["difference"] = "4  clean - corrupted over the pairs: mean, its 95% paired-bootstrap interval, share > 0";
    defs["p_value"] = "senders x receivers  two-sided one-sample t-test of raw_effect against 0";
    defs["holm_marked"] = "senders x receivers  1 where Holm's procedure over the tested cells rejects at 0.05; all 0 "
                          "where the pairs show no effect to localise";
    meta["definitions"] = defs;
    meta["min_difference"] = e.threshold;
    meta["estimator"] = std::string(PairsEstimates::kEstimator) + ": " + PairsEstimates::kEstimatorFormula;
    meta["correction"] = "Holm over " + std::to_string(e.tested) + " tested cells at family-wise level 0.05; " +
                         std::to_string(e.markedCount) + " marked";
    meta["verdict"] = e.difference.verdict;
    meta["effect_to_localise"] = e.difference.effect;
    return meta.dump(2);
}

void writePathPairsFile(const std::string& path, const Model& m, const PathPairsResult& r, const std::string& modelFile,
                        const std::string& pairsFile) {
    writeNpz(path, pathPairsArrays(r), pathPairsMetaJson(m, r, modelFile, pairsFile));
}

} // namespace gwb::engine
