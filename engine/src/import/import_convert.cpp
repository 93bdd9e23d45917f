// gwb import, the conversion: one family's tensors -> our named parameters and config, checked
// key by key (import.h states the rules). Phases: the config from the tensor shapes, a found
// config and the options; the parameters through the layout's key table; the vocabulary.

#include "import/import_convert.h"

#include "tokenizers/bpe_tokenizer.h"
#include "gwb/engine/config_io.h"
#include "import/import_config.h"
#include "import/import_layouts.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {

std::string detail::asciiLower(std::string s) {
    for (char& ch : s)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

namespace {

using detail::asciiLower;

/// "a, b, c and 7 more" for messages.
std::string listNames(const std::vector<std::string>& names, size_t shown = 8) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < shown; ++i) {
        if (i) s += ", ";
        s += names[i];
    }
    if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
    return s;
}

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
int64_t headsFor(const ImportOptions& o, const FoundConfig& found, ImportReport& report) {
    if (o.nHeads) return *o.nHeads;
    if (const auto h = found.get({"n_heads", "num_heads", "nhead", "n_head", "num_attention_heads"})) {
        try {
            const int64_t v = std::stoll(h->value);
            report.notes.push_back("heads: " + std::to_string(v) + " (from " + h->source + ")");
            return v;
        } catch (const std::exception&) {
        }
    }
    report.notes.push_back("heads: 4 (model-spec default; the shapes do not show it, use --heads to change)");
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
    const Size sizes[] = {
        {{"vocab_size"}, "V", c.vocabSize},
        {{"d_model", "n_embd", "hidden_size"}, "d", c.dModel},
        {{"n_layers", "num_layers", "n_layer"}, "N", c.nLayers},
        {{"d_ff", "ffn_dim", "intermediate_size"}, "d_ff", c.dFF},
        {{"max_seq_len", "max_len", "block_size", "context_length", "max_position_embeddings"}, "Lmax", c.maxLen},
        {{"d_reduce", "reduced", "reduce_dim"}, "r", g ? c.reduced : -1},
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
    if (!checked.empty()) report.notes.push_back("config: sizes " + checked + " agree with the tensor shapes");
}

/// Family defaults, then what a found config says, then the command-line overrides. Every
/// setting taken from a config or left undecided is reported.
void applyVariant(ImportLayout layout, const FoundConfig& found, const ImportOptions& o, ModelConfig& c,
                  ImportReport& report) {
    applyLayoutVariant(layout, c);
    const bool g = c.kind == ModelKind::Grassmann;
    bool normKnown = layout != ImportLayout::KaneNorman; // kanenorman's pre_norm is not in its keys
    if (const auto f = found.get({"pre_norm"})) {
        if (f->value != "true" && f->value != "false" && f->value != "True" && f->value != "False")
            throw std::runtime_error(f->source + " is '" + f->value + "', not a boolean: pass --norm pre|post");
        c.norm = (f->value == "true" || f->value == "True") ? NormPlacement::Pre : NormPlacement::Post;
        normKnown = true;
        report.notes.push_back(std::string("config: norm=") + normName(c.norm) + " (from " + f->source + ")");
    } else if (const auto n = found.get({"norm", "norm_placement"}); n && (n->value == "pre" || n->value == "post")) {
        c.norm = n->value == "pre" ? NormPlacement::Pre : NormPlacement::Post;
        normKnown = true;
        report.notes.push_back("config: norm=" + n->value + " (from " + n->source + ")");
    }
    if (const auto f = found.get({"plucker_eps"}); f && g) {
        try {
            c.pluckerEps = std::stod(f->value);
            report.notes.push_back("config: eps=" + f->value + " (from " + f->source + ")");
        } catch (const std::exception&) {
            throw std::runtime_error(f->source + " is '" + f->value + "', not a number: pass --eps");
        }
    }
    if (o.norm) {
        c.norm = *o.norm;
        normKnown = true;
    }
    if (o.empty) c.empty = *o.empty;
    if (o.gate) c.gate = *o.gate;
    if (o.pluckerEps) c.pluckerEps = *o.pluckerEps;
    if (c.norm == NormPlacement::Post && c.mixerLayerNorm)
        throw std::runtime_error("alphaxiv's Grassmann blocks carry a mixer LayerNorm, which exists only in the pre "
                                 "arrangement: drop --norm post");
    if (!normKnown)
        report.notes.push_back("norm: post (kanenorman's default; its state dict cannot show the pre_norm flag: "
                               "pass --norm pre for a model trained with pre_norm=True)");
}

TokenizerPtr loadVocabulary(const ImportOptions& o) {
    const std::string ext = asciiLower(std::filesystem::path(o.vocabPath).extension().string());
    std::ifstream in(o.vocabPath, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open vocabulary '" + o.vocabPath + "'");
    std::stringstream ss;
    ss << in.rdbuf();
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

/// One conversion: the file, its key names, the layout and what was found beside it.
class Conversion {
public:
    Conversion(const std::string& path, TensorFile file, const ImportOptions& o)
        : m_path(path), m_file(std::move(file)), m_o(o) {
        m_found = o.useFoundConfig ? findConfig(std::filesystem::path(path).parent_path().string(), m_file.metadata)
                                   : FoundConfig{};
        if (!m_found.files.empty()) m_report.notes.push_back("config: read " + m_found.files);
        m_report.format = m_file.format;
        m_report.metadata = m_file.metadata;
        for (const auto& w : m_file.warnings)
            m_report.notes.push_back(w);
        for (const auto& [n, t] : m_file.tensors)
            m_names.push_back(n);
        m_layout = o.layout == ImportLayout::Auto ? detectLayout(m_names) : o.layout;
        m_report.layout = m_layout;
    }

    ImportedModel run() {
        const ModelConfig c = inferConfig();
        const std::map<std::string, FloatArray> params = mapParameters(c);
        const TokenizerPtr tokenizer = vocabulary(c);
        m_report.notes.insert(m_report.notes.begin(), summary(c));
        Model model = Model::fromParameters(c, params, tokenizer, m_o.device);
        return {std::move(model), std::move(m_report)};
    }

private:
    const RawTensor& get(const std::string& name) const {
        const auto it = m_file.tensors.find(name);
        if (it == m_file.tensors.end())
            throw std::runtime_error("missing key '" + name + "' (" + layoutName(m_layout) + " layout)");
        return it->second;
    }
    std::vector<int64_t> dims(const std::string& name, size_t rank) const {
        const RawTensor& t = get(name);
        if (t.shape.size() != rank)
            throw std::runtime_error("shape mismatch: '" + name + "' is " + t.describe() + ", expected rank " +
                                     std::to_string(rank));
        return t.shape;
    }

    /// Kind and sizes from the tensor shapes, the variant from the family, a found config and
    /// the options, the offsets; validated.
    ModelConfig inferConfig() {
        const LayoutKeys& k = layoutKeys(m_layout);
        const bool hasBlocks = std::any_of(m_names.begin(), m_names.end(),
                                           [&](const std::string& n) { return n.rfind(k.blockPrefix + "0.", 0) == 0; });
        if (!m_file.tensors.count(k.tokEmbed) || !hasBlocks) {
            std::string hint;
            try {
                hint = std::string(" (the keys look like the ") + layoutName(detectLayout(m_names)) + " layout)";
            } catch (const std::runtime_error&) {
            }
            throw std::runtime_error("no '" + k.tokEmbed + "' and '" + k.blockPrefix + "0.*' keys: not a " +
                                     layoutName(m_layout) + " checkpoint" + hint);
        }
        ModelConfig c;
        // Kind from what block 0 holds.
        const std::string b0 = k.blockPrefix + "0.";
        const bool hasG = m_file.tensors.count(b0 + k.grassmannProbe) != 0;
        const bool hasT = m_file.tensors.count(b0 + k.transformerProbe) != 0;
        if (hasG == hasT)
            throw std::runtime_error(std::string("cannot tell Grassmann from Transformer: block 0 has ") +
                                     (hasG ? "both '" : "neither '") + b0 + k.grassmannProbe + "' " +
                                     (hasG ? "and '" : "nor '") + b0 + k.transformerProbe + "'");
        c.kind = hasG ? ModelKind::Grassmann : ModelKind::Transformer;
        if (m_o.expectedKind && *m_o.expectedKind != c.kind)
            throw std::runtime_error(std::string("this is a ") + (hasG ? "Grassmann" : "Transformer") +
                                     " checkpoint (block 0 has '" + b0 +
                                     (hasG ? k.grassmannProbe : k.transformerProbe) + "'), not a " +
                                     (hasG ? "Transformer" : "Grassmann") + " one");

        // Sizes from the tensor shapes.
        const auto tok = dims(k.tokEmbed, 2), pos = dims(k.posEmbed, 2);
        c.vocabSize = tok[0];
        c.dModel = tok[1];
        c.maxLen = pos[0];
        int64_t layers = 0;
        std::set<int64_t> seenBlocks;
        for (const auto& n : m_names) {
            if (n.rfind(k.blockPrefix, 0) != 0) continue;
            const std::string rest = n.substr(k.blockPrefix.size());
            const size_t dot = rest.find('.');
            try {
                size_t used = 0;
                const int64_t i = std::stoll(rest.substr(0, dot), &used);
                if (used == dot && i >= 0 && i < 100000) seenBlocks.insert(i);
            } catch (const std::exception&) {
            }
        }
        layers = seenBlocks.empty() ? 0 : *seenBlocks.rbegin() + 1;
        if (layers == 0 || static_cast<int64_t>(seenBlocks.size()) != layers)
            throw std::runtime_error("block indices under '" + k.blockPrefix + "' are not 0.." +
                                     std::to_string(layers - 1) + " without gaps");
        c.nLayers = layers;
        c.dFF = dims(b0 + k.ffnInWeight, 2)[0];
        if (c.kind == ModelKind::Grassmann) {
            c.reduced = dims(b0 + k.reduceWeight, 2)[0];
            c.nHeads = 4;
        } else {
            c.nHeads = headsFor(m_o, m_found, m_report);
        }
        checkFoundSizes(m_found, c, m_report);
        applyVariant(m_layout, m_found, m_o, c, m_report);
        c.family = layoutName(m_layout);
        c.name = std::filesystem::path(m_path).stem().string();
        if (c.kind == ModelKind::Grassmann) {
            const auto foundOffsets = m_found.get({"window_schedule", "window_offsets", "offsets", "lags"});
            if (!m_o.offsetSchedule.empty()) {
                c.layerOffsets = parseOffsetSchedule(m_o.offsetSchedule, layers);
            } else if (foundOffsets) {
                // GrassLM spreads its list over the layers, one offset each; the others use the set.
                const std::string spec = (m_layout == ImportLayout::GrassLM ? "per_layer:" : "") + foundOffsets->value;
                try {
                    c.layerOffsets = parseOffsetSchedule(spec, layers);
                } catch (const std::invalid_argument& e) {
                    throw std::runtime_error(foundOffsets->source + ": " + e.what() + " (pass --offsets)");
                }
                m_report.notes.push_back("config: offsets " + spec + " (from " + foundOffsets->source + ")");
            } else {
                c.layerOffsets = defaultLayoutOffsets(m_layout, layers);
            }
        } else {
            c.layerOffsets.clear();
            if (!m_o.offsetSchedule.empty())
                m_report.notes.push_back("--offsets ignored: a Transformer has no offsets");
        }
        try {
            validateConfig(c);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(std::string("the inferred configuration is invalid: ") + e.what());
        }

        return c;
    }

    /// Our parameters through the layout's key table: every key present with exactly our shape,
    /// pair-index and causal-mask buffers checked, a tied head checked, no key left over.
    std::map<std::string, FloatArray> mapParameters(const ModelConfig& c) {
        const LayoutKeys& k = layoutKeys(m_layout);
        // Parameters: every mapped key must be present with exactly our shape.
        std::map<std::string, std::vector<int64_t>> wanted;
        for (const auto& s : parameterSpecs(c))
            wanted[s.name] = s.shape;
        std::set<std::string> used;
        std::vector<std::string> missing;
        std::map<std::string, FloatArray> params;
        for (const KeyMapping& m : layoutMappings(m_layout, c.kind, c.nLayers)) {
            const auto it = m_file.tensors.find(m.theirs);
            if (it == m_file.tensors.end()) {
                missing.push_back(m.theirs);
                continue;
            }
            const auto want = wanted.find(m.ours);
            if (want == wanted.end()) throw std::logic_error("import: layout table names unknown parameter " + m.ours);
            if (it->second.shape != want->second)
                throw std::runtime_error("shape mismatch: '" + m.theirs + "' is " + it->second.describe() +
                                         ", expected " + shapeText(want->second) +
                                         " (V=" + std::to_string(c.vocabSize) + ", d=" + std::to_string(c.dModel) +
                                         ", r=" + std::to_string(c.reduced) + ", d_ff=" + std::to_string(c.dFF) + ")");
            used.insert(m.theirs);
            params[m.ours] = FloatArray(want->second, it->second.toFloat());
        }
        if (!missing.empty())
            throw std::runtime_error("missing keys (" + std::string(layoutName(m_layout)) + " layout, " +
                                     kindName(c.kind) + " model): " + listNames(missing));

        // Pair-index buffers: checked against our order; another order of the same pairs is
        // folded into W_plu's columns (with a sign flip for pairs stored as (j, i)).
        if (c.kind == ModelKind::Grassmann && !k.idxI.empty()) {
            for (int64_t l = 0; l < c.nLayers; ++l) {
                const std::string p = k.blockPrefix + std::to_string(l) + ".";
                const bool hi = m_file.tensors.count(p + k.idxI) != 0, hj = m_file.tensors.count(p + k.idxJ) != 0;
                if (!hi && !hj) continue;
                if (hi != hj)
                    throw std::runtime_error("missing key '" + p + (hi ? k.idxJ : k.idxI) +
                                             "' (its partner is present)");
                const auto cols = pairColumns(get(p + k.idxI), get(p + k.idxJ), c.reduced, p + k.idxI);
                used.insert(p + k.idxI);
                used.insert(p + k.idxJ);
                bool identity = true;
                for (size_t q = 0; q < cols.size(); ++q)
                    identity &= cols[q].first == static_cast<int64_t>(q) && cols[q].second > 0;
                if (identity) continue;
                FloatArray& w = params.at("blocks." + std::to_string(l) + ".w_plu.weight"); // d x C
                const FloatArray src = w;
                const int64_t cc = static_cast<int64_t>(cols.size());
                for (int64_t row = 0; row < c.dModel; ++row)
                    for (int64_t q = 0; q < cc; ++q)
                        w.data[static_cast<size_t>(row * cc + cols[static_cast<size_t>(q)].first)] =
                            cols[static_cast<size_t>(q)].second * src.data[static_cast<size_t>(row * cc + q)];
                m_report.notes.push_back("layer " + std::to_string(l) +
                                         ": pair order differs from ours; W_plu columns reordered");
            }
        }

        // Causal-mask buffers: must be the Lmax x Lmax lower-triangular ones our attention applies.
        if (c.kind == ModelKind::Transformer && !k.causalMask.empty()) {
            for (int64_t l = 0; l < c.nLayers; ++l) {
                const std::string name = k.blockPrefix + std::to_string(l) + "." + k.causalMask;
                const auto it = m_file.tensors.find(name);
                if (it == m_file.tensors.end()) continue;
                checkCausalMask(it->second, c.maxLen, name);
                used.insert(name);
            }
        }

        // Tied head: optional, but when present it must be the token table.
        if (const auto it = m_file.tensors.find(k.lmHead); it != m_file.tensors.end()) {
            used.insert(k.lmHead);
            const FloatArray& e = params.at("tok_embed.weight");
            if (it->second.shape != e.shape || it->second.toFloat() != e.data)
                throw std::runtime_error("'" + k.lmHead + "' (" + it->second.describe() +
                                         ") differs from the token embedding: untied heads are not supported");
        }

        std::vector<std::string> unknown;
        for (const auto& n : m_names)
            if (!used.count(n)) unknown.push_back(n);
        if (!unknown.empty()) {
            const bool otherKind =
                c.kind == ModelKind::Grassmann
                    ? std::any_of(unknown.begin(), unknown.end(),
                                  [&](const std::string& n) { return n.find(k.transformerProbe) != std::string::npos; })
                    : false;
            throw std::runtime_error("unknown keys (" + std::string(layoutName(m_layout)) + " layout, " +
                                     kindName(c.kind) + " model): " + listNames(unknown) +
                                     (otherKind ? " (it mixes Grassmann and attention blocks)" : ""));
        }

        return params;
    }

    /// The vocabulary given with --vocab (its size must be the embedding's), or a note.
    TokenizerPtr vocabulary(const ModelConfig& c) {
        TokenizerPtr tokenizer;
        if (!m_o.vocabPath.empty()) {
            tokenizer = loadVocabulary(m_o);
            if (tokenizer->vocabSize() != c.vocabSize)
                throw std::runtime_error(
                    "the vocabulary '" + m_o.vocabPath + "' has " + std::to_string(tokenizer->vocabSize()) +
                    " entries but the embedding table has " + std::to_string(c.vocabSize) + " rows");
        } else {
            m_report.notes.push_back(
                "no tokenizer attached (pass --vocab vocab.txt; the families use bert-base-uncased)");
        }

        return tokenizer;
    }

    /// One line: what was inferred.
    std::string summary(const ModelConfig& c) const {
        std::ostringstream line; // one-line summary of what was inferred
        line << layoutName(m_layout) << " " << kindName(c.kind) << ": V=" << c.vocabSize << " d=" << c.dModel;
        if (c.kind == ModelKind::Grassmann) line << " r=" << c.reduced;
        line << " N=" << c.nLayers << " d_ff=" << c.dFF << " Lmax=" << c.maxLen << " norm=" << normName(c.norm)
             << (c.mixerLayerNorm ? " mixer-LN" : "");
        if (c.kind == ModelKind::Grassmann)
            line << " gate=" << gateName(c.gate) << " empty=" << emptyName(c.empty) << " eps=" << c.pluckerEps;
        if (!c.layerOffsets.empty()) {
            line << " offsets=";
            for (size_t l = 0; l < c.layerOffsets.size(); ++l) {
                line << (l ? " {" : "{");
                for (size_t i = 0; i < c.layerOffsets[l].size(); ++i)
                    line << (i ? "," : "") << c.layerOffsets[l][i];
                line << "}";
            }
        }
        return line.str();
    }

    std::string m_path;
    TensorFile m_file;
    const ImportOptions& m_o;
    FoundConfig m_found;
    ImportReport m_report;
    std::vector<std::string> m_names;
    ImportLayout m_layout = ImportLayout::Auto;
};

} // namespace

ImportedModel detail::convertTensors(const std::string& path, TensorFile file, const ImportOptions& options) {
    return Conversion(path, std::move(file), options).run();
}

} // namespace gwb::engine
