// gwb import's rules (see import_rules.h): the family's buffers checked, heads, variant flags and
// the config's computation flags chosen from the layout, a found config and the options, and the
// vocabulary file read.

#include "import/import_rules.h"

#include "import/import_convert.h"
#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_tokenizer.h"
#include "gwb/engine/config_io.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gwb::engine::detail {

/// Checks the family's pair-index buffers. Returns, for each of the file's W_plu columns, our
/// column and sign: the file may list pairs in another order, or as (j, i) (then p flips sign).
/// Throws when the buffers are not a permutation of all pairs of r.
std::vector<std::pair<int64_t, float>> pairColumns(const RawTensor& idxI, const RawTensor& idxJ, int64_t r,
                                                   const std::string& where) {
    const int64_t c = r * (r - 1) / 2;
    const auto ii = idxI.toInt64(), jj = idxJ.toInt64();
    if (static_cast<int64_t>(ii.size()) != c || static_cast<int64_t>(jj.size()) != c)
        throw std::runtime_error(where + ": index buffers hold " + std::to_string(ii.size()) + " and " +
                                 std::to_string(jj.size()) + " pairs, r = " + std::to_string(r) +
                                 " needs C(r,2) = " + std::to_string(c));
    std::vector<std::pair<int64_t, float>> cols(static_cast<size_t>(c));
    std::vector<bool> seen(static_cast<size_t>(c), false);
    for (int64_t k = 0; k < c; ++k) {
        int64_t i = ii[static_cast<size_t>(k)], j = jj[static_cast<size_t>(k)];
        float sign = 1.0f;
        if (i > j) {
            std::swap(i, j);
            sign = -1.0f;
        }
        if (i < 0 || j >= r || i == j)
            throw std::runtime_error(where + ": index buffers hold the invalid pair (" +
                                     std::to_string(ii[static_cast<size_t>(k)]) + ", " +
                                     std::to_string(jj[static_cast<size_t>(k)]) + ")");
        // Our column of pair (i, j) in lexicographic order.
        const int64_t ours = i * r - i * (i + 1) / 2 + (j - i - 1);
        if (seen[static_cast<size_t>(ours)])
            throw std::runtime_error(where + ": index buffers list the pair (" + std::to_string(i) + ", " +
                                     std::to_string(j) + ") twice");
        seen[static_cast<size_t>(ours)] = true;
        cols[static_cast<size_t>(k)] = {ours, sign};
    }
    return cols;
}

/// A causal-mask buffer: [1, 1,] L x L with L >= Lmax, ones on and below the diagonal, zeros
/// above (only the leading Lmax x Lmax block is ever used). Throws naming the buffer otherwise.
void checkCausalMask(const RawTensor& t, int64_t maxLen, const std::string& name) {
    const auto& s = t.shape;
    bool ok = s.size() >= 2 && s[s.size() - 1] == s[s.size() - 2];
    for (size_t i = 0; ok && i + 2 < s.size(); ++i)
        ok = s[i] == 1;
    if (!ok) throw std::runtime_error("'" + name + "' is " + t.describe() + ", not a square causal mask");
    const int64_t n = s.back();
    if (n < maxLen)
        throw std::runtime_error("'" + name + "' is " + t.describe() + " but the position table has " +
                                 std::to_string(maxLen) + " rows: the buffer disagrees with the weights");
    const std::vector<float> v = t.toFloat();
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            const float want = j <= i ? 1.0f : 0.0f;
            if (v[static_cast<size_t>(i * n + j)] != want)
                throw std::runtime_error("'" + name + "' is not lower-triangular ones (entry [" + std::to_string(i) +
                                         ", " + std::to_string(j) + "] is " +
                                         std::to_string(v[static_cast<size_t>(i * n + j)]) +
                                         "): the engine runs causal attention only, so this model cannot be "
                                         "opened exactly");
        }
}

/// Heads: the option, else a found config (the checkpoint's saved arguments, config.json),
/// else model-spec's 4.
int64_t headsFor(const ImportOptions& o, const FoundConfig& found, const KindLayout& k, const std::string& layout,
                 int64_t dModel, ImportReport& report) {
    if (o.nHeads) return *o.nHeads;
    if (const auto h = found.get({"n_heads", "num_heads", "nhead", "n_head", "num_attention_heads"})) {
        int64_t v = 0;
        try {
            v = std::stoll(h->value);
        } catch (const std::exception&) {
            throw std::runtime_error(h->source + " is '" + h->value + "', not a head count: pass --heads");
        }
        if (v < 1 || dModel % v != 0)
            throw std::runtime_error(h->source + " says " + h->value + " heads, but the tensor shapes give d = " +
                                     std::to_string(dModel) + ", which " + h->value +
                                     " heads cannot divide: the config does not belong to these weights "
                                     "(pass --heads to choose)");
        report.notes.push_back("heads: " + std::to_string(v) + " (from " + h->source + ")");
        return v;
    }
    if (k.heads) {
        report.flags.push_back("heads=" + std::to_string(*k.heads) + " (default of the " + layout +
                               " layout; the shapes do not show it; --heads overrides)");
        return *k.heads;
    }
    report.notes.emplace_back("heads: 4 (model-spec default; the shapes do not show it, use --heads to change)");
    return 4;
}

/// Sizes a found config states must equal what the tensor shapes show.
void checkFoundSizes(const FoundConfig& found, const ModelConfig& c, ImportReport& report) {
    struct Size {
        std::initializer_list<const char*> names;
        const char* ours;
        int64_t value;
    };
    const bool g = c.kind == ModelKind::Grassmann;
    // The names the families use (model-spec; Arledge's TrainingConfig and argparse: model_dim,
    // ff_dim, reduced_dim; youdie006: d_low, max_context_len; the CausalGrassmannMixer trainer).
    const Size sizes[] = {
        {{"vocab_size", "n_vocab"}, "V", c.vocabSize},
        {{"d_model", "n_embd", "hidden_size", "model_dim", "embed_dim", "d_embed", "emb_dim"}, "d", c.dModel},
        {{"n_layers", "num_layers", "n_layer", "num_blocks"}, "N", c.nLayers},
        {{"d_ff", "ffn_dim", "intermediate_size", "ff_dim", "dim_feedforward", "mlp_dim", "d_mlp"}, "d_ff", c.dFF},
        {{"max_seq_len", "max_len", "block_size", "context_length", "max_position_embeddings", "max_context_len",
          "n_positions", "n_ctx"},
         "Lmax",
         c.maxLen},
        {{"d_reduce", "reduced", "reduce_dim", "reduced_dim", "d_low", "r"}, "r", g ? c.reduced : -1},
        {{"d_geom"}, "d_geom", g && c.dGeom > 0 ? c.dGeom : -1},
    };
    std::string checked;
    for (const Size& s : sizes) {
        const auto f = found.get(s.names);
        if (!f || s.value < 0) continue;
        int64_t v = 0;
        try {
            v = std::stoll(f->value);
        } catch (const std::exception&) {
            continue;
        }
        if (v != s.value)
            throw std::runtime_error(f->source + " says " + f->value + " but the tensor shapes give " + s.ours + " = " +
                                     std::to_string(s.value) + ": the config does not belong to these weights");
        checked += std::string(checked.empty() ? "" : ", ") + s.ours + "=" + f->value;
    }
    // youdie006 states d_ff as a multiple of d.
    if (const auto f = found.get({"expansion_ratio", "ffn_mult", "mlp_ratio"})) {
        try {
            const double ratio = std::stod(f->value);
            if (std::abs(ratio * static_cast<double>(c.dModel) - static_cast<double>(c.dFF)) > 0.5)
                throw std::runtime_error(f->source + " says " + f->value + ", i.e. d_ff = " + f->value + " x " +
                                         std::to_string(c.dModel) + ", but the tensor shapes give d_ff = " +
                                         std::to_string(c.dFF) + ": the config does not belong to these weights");
            checked += std::string(checked.empty() ? "" : ", ") + "d_ff/d=" + f->value;
        } catch (const std::invalid_argument&) {
        } catch (const std::out_of_range&) {
        }
    }
    if (!checked.empty()) report.notes.push_back("config: sizes " + checked + " agree with the tensor shapes");
}

/// The layout's defaults, then what a found config says, then the command-line overrides. Every
/// flag is reported with where it came from; a flag the checkpoint cannot show and nothing set is
/// reported as a default with the option that overrides it.
void applyVariant(const Layout& layout, const FoundConfig& found, const ImportOptions& o, ModelConfig& c,
                  ImportReport& report) {
    const KindLayout& k = layout.kind(c.kind);
    const bool g = c.kind == ModelKind::Grassmann;
    applyLayoutVariant(layout, c);
    std::map<std::string, std::string> from;
    const std::string dflt = "default of the " + layout.name + " layout";
    auto set = [&](const char* flag, bool given, const std::string& source) {
        if (given) from[flag] = source;
    };
    for (const char* f : {"norm", "gate", "mixer_layer_norm", "empty", "eps", "aggregation"})
        from[f] = k.unseen.count(f) ? dflt + "; " + k.unseen.at(f) : "the " + layout.name + " layout";
    if (const auto f = found.get({"pre_norm"})) {
        if (f->value != "true" && f->value != "false" && f->value != "True" && f->value != "False")
            throw std::runtime_error(f->source + " is '" + f->value + "', not a boolean: pass --norm pre|post");
        c.norm = (f->value == "true" || f->value == "True") ? k.preNorm : (k.norm ? *k.norm : NormPlacement::Post);
        set("norm", true, f->source);
    } else if (const auto n = found.get({"norm", "norm_placement"}); n && (n->value == "pre" || n->value == "post")) {
        c.norm = n->value == "pre" ? NormPlacement::Pre : NormPlacement::Post;
        set("norm", true, n->source);
    }
    const std::string epsKey = k.epsConfigKey.empty() ? "plucker_eps" : k.epsConfigKey;
    if (const auto f = found.get({epsKey.c_str()}); f && g) {
        try {
            c.pluckerEps = std::stod(f->value);
        } catch (const std::exception&) {
            throw std::runtime_error(f->source + " is '" + f->value + "', not a number: pass --eps");
        }
        set("eps", true, f->source);
    }
    if (o.norm) c.norm = *o.norm;
    set("norm", o.norm.has_value(), "--norm");
    if (o.empty) c.empty = *o.empty;
    set("empty", o.empty.has_value(), "--empty");
    if (o.gate) c.gate = *o.gate;
    set("gate", o.gate.has_value(), "--gate");
    if (o.pluckerEps) c.pluckerEps = *o.pluckerEps;
    set("eps", o.pluckerEps.has_value(), "--eps");
    if (o.aggregation && g &&
        (*o.aggregation == Aggregation::PerOffsetMlp) != (k.aggregation == Aggregation::PerOffsetMlp))
        throw std::runtime_error(std::string("--aggregation ") + aggregationName(*o.aggregation) + " cannot describe " +
                                 layout.name +
                                 "'s checkpoints: aggregation per_offset_mlp has its own tensors (an MLP, geo_in and "
                                 "geo_out) in place of W_plu, so it is the layout's choice, not an override");
    if (o.aggregation) c.aggregation = *o.aggregation;
    set("aggregation", o.aggregation.has_value(), "--aggregation");
    if (c.norm == NormPlacement::Post && c.mixerLayerNorm)
        throw std::runtime_error(layout.name + "'s " + kindName(c.kind) +
                                 " blocks carry a mixer LayerNorm, which "
                                 "exists only in the pre arrangement: drop --norm post");
    auto line = [&](const std::string& flag, const std::string& value, const char* option) {
        std::string s = flag + "=" + value + " (from " + from[flag];
        if (from[flag].rfind(dflt, 0) == 0 && option) s += "; " + std::string(option) + " overrides";
        report.flags.push_back(s + ")");
    };
    line("norm", normName(c.norm), "--norm");
    line("mixer_layer_norm", c.mixerLayerNorm ? "true" : "false", nullptr);
    if (g) {
        line("gate", gateName(c.gate), "--gate");
        line("empty", emptyName(c.empty), "--empty");
        std::ostringstream eps;
        eps << c.pluckerEps;
        if (c.aggregation == Aggregation::Mean) // the raw planes are averaged as they are: nothing to clamp
            report.flags.push_back("eps unused (aggregation mean does not normalise the planes)");
        else
            line("eps", eps.str(), "--eps");
        line("aggregation", aggregationName(c.aggregation), "--aggregation");
    }
}

TokenizerPtr loadVocabulary(const ImportOptions& o) {
    const std::string ext = asciiLower(std::filesystem::path(o.vocabPath).extension().string());
    std::ifstream in(o.vocabPath, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open vocabulary '" + o.vocabPath + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    if (ext == ".json" &&
        (!tokenizerJsonFormat(ss.str()).empty() || std::filesystem::path(o.vocabPath).filename() == "tokenizer.json")) {
        try { // Hugging Face's tokenizer.json or Wake2vec's character map, told apart by content
            return makeTokenizerJson(ss.str());
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error("vocabulary '" + o.vocabPath + "': " + e.what());
        }
    }
    if (ext == ".json") {
        std::string merges = o.mergesPath;
        if (merges.empty()) merges = (std::filesystem::path(o.vocabPath).parent_path() / "merges.txt").string();
        std::ifstream m(merges, std::ios::binary);
        if (!m) throw std::runtime_error("GPT-2 BPE needs merges.txt next to '" + o.vocabPath + "' (or --merges)");
        std::stringstream ms;
        ms << m.rdbuf();
        return makeByteLevelBpeTokenizer(ss.str(), ms.str());
    }
    return makeWordPieceTokenizer(ss.str());
}

/// The mixer's steps in the report's words, e.g. "stages: z = LN(W_red x); B = 0.0667 mean_D p(D)
/// (raw); g = LN(W_plu B + b); a = sigmoid(W_gate x); mix = W_out(x + a g 0.25)".
std::string describeStages(const ModelConfig& c) {
    const MixerStages& s = c.stages;
    std::ostringstream o;
    o.precision(4);
    o << "stages: z = " << (s.reductionNorm ? "LN(W_red x)" : "W_red x")
      << "; p(D) = " << (s.wedgePastFirst ? "z_{t-D} ^ z_t" : "z_t ^ z_{t-D}") << "; ";
    std::string g = "W_plu B + b";
    switch (c.aggregation) {
    case Aggregation::Mean:
        o << "B = ";
        if (s.pluckerScale != 1.0) o << s.pluckerScale << " ";
        o << "mean_D p(D) (raw)";
        break;
    case Aggregation::NormalizeThenMean:
        o << "B = mean_D p(D) / max(||p(D)||, eps)";
        break;
    case Aggregation::MeanThenNormalize:
        o << "B = q / sqrt(||q||^2 + eps), q = mean_D p(D)";
        break;
    case Aggregation::PerOffsetMlp:
        o << "no B: each p^(D) = p(D) / max(||p(D)||, eps) through an MLP (C(r,2) -> " << c.dGeom << " -> GELU -> d)";
        g = "mean_D MLP(p^(D))";
        break;
    }
    o << "; g = " << (s.featureNorm ? "LN(" + g + ")" : g) << "; a = sigmoid(W_gate "
      << (s.gateFromInput ? "x" : "[x; g]") << "); mix = " << (s.outputProjection ? "W_out(" : "");
    if (c.gate == GateVariant::Residual) {
        o << "x + a g";
        if (s.mixScale != 1.0) o << " " << s.mixScale;
    } else {
        o << (c.gate == GateVariant::Paper ? "a x + (1 - a) g" : "a g");
    }
    o << (s.outputProjection ? ")" : "") << " (from the layout)";
    return o.str();
}

/// What the family's config.json says about the computation (the layout's "config"): the
/// activation, the LayerNorm eps, and flags with one value gwb honours, any other refused by name.
void applyConfigChecks(const KindLayout& k, const FoundConfig& found, const std::string& layout, ModelConfig& c,
                       ImportReport& report) {
    if (!k.activationKey.empty()) {
        if (const auto f = found.get(k.activationKey)) {
            const auto it = k.activations.find(f->value);
            if (it == k.activations.end()) {
                std::string known;
                for (const auto& [name, a] : k.activations)
                    known += (known.empty() ? "" : ", ") + name;
                throw std::runtime_error(f->source + " is '" + f->value + "': gwb runs " + known +
                                         " only, so this model cannot be opened exactly");
            }
            c.activation = it->second;
            report.flags.push_back(std::string("activation=") + activationName(c.activation) + " (from " + f->source +
                                   " = " + f->value + ")");
        } else {
            report.flags.push_back(std::string("activation=") + activationName(c.activation) + " (default of the " +
                                   layout + " layout; no " + k.activationKey + " found)");
        }
    }
    if (!k.layerNormEpsKey.empty()) {
        if (const auto f = found.get(k.layerNormEpsKey)) {
            try {
                c.layerNormEps = std::stod(f->value);
            } catch (const std::exception&) {
                throw std::runtime_error(f->source + " is '" + f->value + "', not a number");
            }
            if (!(c.layerNormEps > 0))
                throw std::runtime_error(f->source + " is '" + f->value + "', not a positive eps");
            report.flags.push_back("layer_norm_eps=" + f->value + " (from " + f->source + ")");
        }
    }
    for (const auto& [key, rule] : k.required) {
        const auto f = found.get(key);
        if (f && f->value != rule.first)
            throw std::runtime_error(f->source + " is " + f->value + ": " + rule.second +
                                     ", so this model cannot be opened exactly");
    }
}

} // namespace gwb::engine::detail
