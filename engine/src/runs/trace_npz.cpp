// The trace NPZ's arrays and meta.json (gwb/engine/trace_npz.h), moved here from gwb trace so
// that the command line and the Python package share one list of names.

#include "gwb/engine/trace_npz.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/device.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace gwb::engine {
namespace {

using nlohmann::json;

/// Appends named arrays in order (the NpzWriter's add() spelling, so the list reads as it did).
struct Members {
    std::vector<NpzMember>& out;
    template <typename T> void add(const std::string& name, const Array<T>& a) { out.push_back({name, a}); }
};

/// "l<index>_" (built with += : GCC 12 warns falsely on "l" + std::to_string(l)).
std::string layerPrefix(size_t l) {
    std::string p = "l";
    p += std::to_string(l);
    p += '_';
    return p;
}

FloatArray vecArray(const std::vector<float>& v) {
    return FloatArray({static_cast<int64_t>(v.size())}, v);
}

/// For every byte offset 0..n of `text`: the index of the character (code point) containing it
/// (n maps to the number of characters).
std::vector<int64_t> charOffsets(const std::string& text) {
    std::vector<int64_t> out(text.size() + 1, 0);
    int64_t chars = -1;
    for (size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) ++chars;
        out[i] = std::max<int64_t>(chars, 0);
    }
    out[text.size()] = chars + 1;
    return out;
}

std::string metaJson(const Trace& t, const TraceAnalysis* analysis) {
    json meta;
    meta["model_file"] = t.modelPath;
    meta["model_name"] = t.modelName;
    meta["model_config"] = json::parse(configToJson(t.config));
    meta["device"] = t.device;
    meta["prompt"] = t.prompt;
    meta["dropped_tokens"] = t.droppedTokens;
    const auto chars = charOffsets(t.prompt);
    json tokens = json::array();
    for (const TraceToken& tok : t.tokens) {
        json j = {{"id", tok.id}, {"text", tok.text}, {"byte_begin", tok.begin}, {"byte_end", tok.end}};
        const bool known = tok.begin >= 0 && tok.end >= tok.begin && tok.end <= static_cast<int64_t>(t.prompt.size());
        j["char_begin"] = known ? chars[static_cast<size_t>(tok.begin)] : -1;
        j["char_end"] = known ? (tok.end == tok.begin ? chars[static_cast<size_t>(tok.begin)]
                                                      : chars[static_cast<size_t>(tok.end - 1)] + 1)
                              : -1;
        tokens.push_back(j);
    }
    meta["tokens"] = tokens;
    json defs = {
        {"token_ids", "T  vocabulary ids of the traced tokens"},
        {"surprisal", "T  -log p(x_t | x_<t) in nats; NaN at t = 0"},
        {"logits", "T x V  next-token logits at every position"},
        {"lL_h", "T x d  input state of block L (residual stream)"},
        {"lL_mixer_input", "T x d  what block L's mixer saw (LN1(h) for pre-norm; only written for pre-norm)"},
        {"lL_z", "T x r  reduced vectors z_t = W_red h_t + b_red"},
        {"lL_g", "T x d  geometric feature g_t = W_plu B_t + b_plu"},
        {"lL_gate", "T x d  gate a_t = sigmoid(W_gate [h_t; g_t] + b_gate)"},
        {"lL_q", "H x T x d_head  attention queries (before scaling)"},
        {"lL_k", "H x T x d_head  attention keys"},
        {"lL_attn", "H x T x T  attention probabilities (omitted above the dense limit)"},
        {"final_h", "T x d  output of the last block before the final LayerNorm"},
        {"lL_readout_residual", "d  Plücker residual rho(A_c) of each channel's read-out matrix (readoutResidual)"},
        {"lL_readout_planarity", "d  planarity s_1^2 / sum s_k^2 of A_c (readoutPlanarity)"},
        {"lL_readout_spectrum", "d x floor(r/2)  distinct singular values of A_c, descending"},
        {"lL_readout_top_plane", "d x r x 2  orthonormal basis of A_c's top plane in R^r"},
        {"lL_readout_contribution", "T x d  z_t^T A_c y_t = g_{t,c} - b_c; NaN without a valid offset"},
        {"lL_readout_angles", "T x d x 2  principal angles (rad) between span(z_t, y_t) and A_c's top plane"},
        {"lens_top_ids", "(N+1) x T x K  logit-lens top-K next-token ids per block input and the final state"},
        {"lens_top_logprobs", "(N+1) x T x K  their log-probabilities (nats)"},
        {"lens_next_rank", "(N+1) x T  lens rank (0 = top-1) of the actual next token; -1 at the last"},
        {"lens_next_logprob", "(N+1) x T  lens log-probability (nats) of the actual next token; NaN at the last"}};
    for (const auto& [k, v] : definitions())
        defs[k] = v;
    meta["definitions"] = defs;
    if (analysis) {
        meta["warnings"] = analysis->warnings;
        meta["analysis_parts"] = analysisPartNames(analysis->parts, !analysis->grassmann.empty());
    }
    return meta.dump(2);
}

} // namespace

TraceFile traceFile(const Trace& t, bool withAnalysis, unsigned analysisParts, const LogitLens* lensOf) {
    TraceFile file;
    Members npz{file.arrays};
    std::vector<int32_t> ids;
    for (const auto& tok : t.tokens)
        ids.push_back(tok.id);
    npz.add("token_ids", IntArray({static_cast<int64_t>(ids.size())}, ids));
    npz.add("surprisal", vecArray(t.surprisal));
    if (!t.logits.empty()) npz.add("logits", t.logits);
    for (size_t l = 0; l < t.layers.size(); ++l) {
        const LayerTrace& lt = t.layers[l];
        const std::string p = layerPrefix(l);
        npz.add(p + "h", lt.h);
        if (mixerSeesNormedInput(t.config.norm)) npz.add(p + "mixer_input", lt.mixerInput);
        if (lt.grassmann) {
            npz.add(p + "z", lt.grassmann->z);
            if (!lt.grassmann->g.empty()) npz.add(p + "g", lt.grassmann->g);
            npz.add(p + "gate", lt.grassmann->gate);
        }
        if (lt.attention) {
            npz.add(p + "q", lt.attention->q);
            npz.add(p + "k", lt.attention->k);
            if (!lt.attention->attn.empty()) npz.add(p + "attn", lt.attention->attn);
        }
    }
    npz.add("final_h", t.finalH);
    if (const LogitLens* lens = lensOf ? lensOf : t.lens.get(); lens && !lens->topIds.empty()) {
        npz.add("lens_top_ids", lens->topIds);
        npz.add("lens_top_logprobs", lens->topLogProbs);
        if (!lens->nextRank.empty()) npz.add("lens_next_rank", lens->nextRank);
        if (!lens->nextLogProb.empty()) npz.add("lens_next_logprob", lens->nextLogProb);
    }
    TraceAnalysis analysis;
    if (withAnalysis) {
        AnalysisOptions options;
        options.threads = threads(); // layers in parallel, as many as the engine's threads
        options.parts = analysisParts | kAnalysisCore;
        analysis = analyzeTrace(t, options);
        for (size_t l = 0; l < analysis.grassmann.size(); ++l) {
            const auto& a = analysis.grassmann[l];
            const std::string p = layerPrefix(l);
            npz.add(p + "residual", vecArray(a.residual));
            npz.add(p + "planarity", vecArray(a.planarity));
            npz.add(p + "coherence", vecArray(a.coherence));
            npz.add(p + "pair_norm", a.pairNorm);
            if (analysis.has(kAnalysisLayerAngles)) npz.add(p + "angles_next", a.anglesNext);
            npz.add(p + "influence", a.influence);
            npz.add(p + "mean_gate", vecArray(a.meanGate));
            npz.add(p + "gate_above_half", vecArray(a.gateAboveHalf));
            if (!analysis.has(kAnalysisReadout)) continue;
            npz.add(p + "readout_residual", vecArray(a.readoutResidual));
            npz.add(p + "readout_planarity", vecArray(a.readoutPlanarity));
            npz.add(p + "readout_spectrum", a.readoutSpectrum);
            npz.add(p + "readout_top_plane", a.readoutTopPlane);
            npz.add(p + "readout_contribution", a.readoutContribution);
            npz.add(p + "readout_angles", a.readoutAngles);
        }
        for (size_t l = 0; l < analysis.attention.size(); ++l) {
            const auto& a = analysis.attention[l];
            const std::string p = layerPrefix(l);
            npz.add(p + "entropy", a.entropy);
            npz.add(p + "norm_entropy", a.normEntropy);
            npz.add(p + "sparsity", a.sparsity);
            npz.add(p + "top1", a.top1);
            npz.add(p + "eff_support", a.effSupport);
            npz.add(p + "transport_cost", a.transportCost);
        }
        if (!analysis.promptSubspaceDistance.empty())
            npz.add("prompt_subspace_distance", analysis.promptSubspaceDistance);
        if (!analysis.readingSubspaceDistance.empty())
            npz.add("reading_subspace_distance", analysis.readingSubspaceDistance);
        file.warnings = analysis.warnings;
    }
    file.metaJson = metaJson(t, withAnalysis ? &analysis : nullptr);
    return file;
}

void writeTraceFile(const TraceFile& file, const std::string& path) {
    NpzWriter npz;
    for (const NpzMember& m : file.arrays)
        npz.add(m);
    npz.addFile("meta.json", file.metaJson);
    npz.write(path);
}

} // namespace gwb::engine
