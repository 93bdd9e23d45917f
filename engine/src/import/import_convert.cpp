// gwb import, the conversion: one family's tensors -> our named parameters and config, checked
// key by key (import.h states the rules). Phases: the config from the tensor shapes, a found
// config and the options; the parameters through the layout's key table; the vocabulary.

#include "import/import_convert.h"

#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_tokenizer.h"
#include "gwb/engine/config_io.h"
#include "import/import_config.h"
#include "import/layout_file.h"

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
int64_t headsFor(const ImportOptions& o, const FoundConfig& found, const KindLayout& k, const std::string& layout,
                 ImportReport& report) {
    if (o.nHeads) return *o.nHeads;
    if (const auto h = found.get({"n_heads", "num_heads", "nhead", "n_head", "num_attention_heads"})) {
        try {
            const int64_t v = std::stoll(h->value);
            report.notes.push_back("heads: " + std::to_string(v) + " (from " + h->source + ")");
            return v;
        } catch (const std::exception&) {
        }
    }
    if (k.heads) {
        report.flags.push_back("heads=" + std::to_string(*k.heads) + " (default of the " + layout +
                               " layout; the shapes do not show it; --heads overrides)");
        return *k.heads;
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
    if (const auto f = found.get({"plucker_eps"}); f && g) {
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

/// One conversion: the file, its key names, the layout and what was found beside it.
class Conversion {
public:
    Conversion(const std::string& path, TensorFile file, const ImportOptions& o)
        : m_path(path), m_file(std::move(file)), m_o(o) {
        m_found = o.useFoundConfig ? findConfig(configFolder(path), m_file.metadata) : FoundConfig{};
        if (!m_found.files.empty()) m_report.notes.push_back("config: read " + m_found.files);
        m_report.format = m_file.format;
        m_report.metadata = m_file.metadata;
        for (const auto& w : m_file.warnings)
            m_report.notes.push_back(w);
        for (const auto& [n, t] : m_file.tensors)
            m_names.push_back(n);
        chooseLayout();
        m_report.layout = m_layout->name;
        m_report.layoutSource = m_layout->source;
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
    /// Where a config beside the checkpoint lives: its folder, or for GrassLM's
    /// models/NAME/checkpoints/best_model.pt the model folder models/NAME.
    static std::string configFolder(const std::string& path) {
        const std::filesystem::path folder = std::filesystem::path(path).parent_path();
        if (!std::filesystem::exists(folder / "config.json") && folder.filename() == "checkpoints" &&
            std::filesystem::exists(folder.parent_path() / "config.json"))
            return folder.parent_path().string();
        return folder.string();
    }

    /// --layout-file, --layout NAME, or the best-fitting built-in layout (with the runner-up).
    void chooseLayout() {
        if (!m_o.layoutFile.empty()) {
            std::ifstream in(m_o.layoutFile, std::ios::binary);
            if (!in) throw std::runtime_error("cannot open layout file '" + m_o.layoutFile + "'");
            std::stringstream ss;
            ss << in.rdbuf();
            m_own = parseLayout(ss.str(), m_o.layoutFile);
            m_layout = &m_own;
            m_report.detection.push_back("layout " + m_own.name + " from " + m_o.layoutFile + " (--layout-file)");
            return;
        }
        if (asciiLower(m_o.layout) != "auto" && !m_o.layout.empty()) {
            m_layout = &builtinLayout(m_o.layout);
            m_report.detection.push_back("layout " + m_layout->name + " (given with --layout)");
            return;
        }
        const std::vector<LayoutMatch> ranked =
            rankLayouts(builtinLayouts(), m_names, std::filesystem::path(m_path).parent_path().string());
        if (ranked.empty() || ranked.front().score < 0) {
            std::string why;
            for (const LayoutMatch& m : ranked)
                why += "; " + m.layout->name + ": " + m.failure;
            throw std::runtime_error("cannot tell which implementation wrote this checkpoint (no layout fits" + why +
                                     "); pass --layout NAME or --layout-file F.json");
        }
        m_layout = ranked.front().layout;
        m_report.detection.push_back("layout " + m_layout->name + " (auto: " + ranked.front().reason + ")");
        if (ranked.size() > 1) {
            const LayoutMatch& second = ranked[1];
            m_report.detection.push_back("second: " + second.layout->name +
                                         (second.score < 0 ? " (does not fit: " + second.failure + ")"
                                                           : " (fits too, fewer signals: " + second.reason + ")"));
        }
    }

    const RawTensor& get(const std::string& name) const {
        const auto it = m_file.tensors.find(name);
        if (it == m_file.tensors.end())
            throw std::runtime_error("missing key '" + name + "' (" + m_layout->name + " layout)");
        return it->second;
    }
    /// Their tensor names for one of ours (block-relative), or empty.
    const std::vector<std::string>* theirsOf(const KindLayout& k, const std::string& ours) const {
        for (const auto& [o, t] : k.parameters)
            if (o == ours) return &t;
        return nullptr;
    }
    std::vector<int64_t> dims(const std::string& name, size_t rank) const {
        const RawTensor& t = get(name);
        if (t.shape.size() != rank)
            throw std::runtime_error("shape mismatch: '" + name + "' is " + t.describe() + ", expected rank " +
                                     std::to_string(rank));
        return t.shape;
    }

    /// Offsets: --offsets, else the checkpoint's own offset buffers, else a found config, else the
    /// layout's default (or its schedule for an older code generation whose config lacks a key).
    std::vector<std::vector<int>> offsetsFor(const Layout& L, const KindLayout& k, int64_t layers) {
        if (!m_o.offsetSchedule.empty()) {
            m_report.flags.push_back("offsets=" + m_o.offsetSchedule + " (from --offsets)");
            return parseOffsetSchedule(m_o.offsetSchedule, layers);
        }
        if (!k.offsetsBuffer.empty() && m_file.tensors.count(L.blockPrefix(0) + k.offsetsBuffer)) {
            std::vector<std::vector<int>> out;
            for (int64_t l = 0; l < layers; ++l) {
                const std::string name = L.blockPrefix(l) + k.offsetsBuffer;
                std::vector<int> set;
                for (int64_t v : get(name).toInt64()) {
                    if (v < 1 || v > 1 << 20)
                        throw std::runtime_error("'" + name + "' holds " + std::to_string(v) + ", not an offset");
                    set.push_back(static_cast<int>(v));
                }
                std::sort(set.begin(), set.end());
                set.erase(std::unique(set.begin(), set.end()), set.end());
                if (set.empty()) throw std::runtime_error("'" + name + "' holds no offsets");
                out.push_back(set);
            }
            m_report.flags.push_back("offsets from the checkpoint's " + L.blockPrefix(0) + k.offsetsBuffer +
                                     " (and the other layers')");
            return out;
        }
        const auto found = m_found.get({"window_schedule", "window_offsets", "window_sizes", "offsets", "lags"});
        if (found) {
            bool perLayer = L.configOffsetsPerLayer;
            std::string why;
            if (!L.configPerLayerFlag.empty()) {
                if (const auto f = m_found.get(L.configPerLayerFlag); f && (f->value == "true" || f->value == "True")) {
                    perLayer = true;
                    why = ", one per layer as " + f->source + " says";
                }
            }
            const auto n = std::count(found->value.begin(), found->value.end(), ',') + 1;
            if (perLayer && n != layers)
                throw std::runtime_error(found->source + " lists " + std::to_string(n) + " offsets for " +
                                         std::to_string(layers) + " layers (" + L.name +
                                         " gives each layer one; pass --offsets)");
            if (!perLayer) checkEvenMultiplicity(found->value, found->source);
            const std::string spec = (perLayer ? "per_layer:" : "") + found->value;
            try {
                m_report.flags.push_back("offsets=" + spec + " (from " + found->source + why + ")");
                return parseOffsetSchedule(spec, layers);
            } catch (const std::invalid_argument& e) {
                throw std::runtime_error(found->source + ": " + e.what() + " (pass --offsets)");
            }
        }
        if (!L.lacksKey.empty() && !m_found.values.empty() && !m_found.get(L.lacksKey)) {
            m_report.flags.push_back("offsets=" + L.lacksSchedule + " (the found config has no " + L.lacksKey + ": " +
                                     L.lacksWhy + "; --offsets overrides)");
            return parseOffsetSchedule(L.lacksSchedule, layers);
        }
        m_report.flags.push_back("offsets=" + L.defaultOffsets(layers) + " (default of the " + L.name + " layout for " +
                                 std::to_string(layers) + " layers; --offsets overrides)");
        return parseOffsetSchedule(L.defaultOffsets(layers), layers);
    }

    /// A list where an offset repeats weighs it more in the family's average; a set cannot say
    /// that unless every offset repeats equally often.
    static void checkEvenMultiplicity(const std::string& list, const std::string& source) {
        std::map<std::string, int> count;
        std::stringstream ss(list);
        std::string item;
        while (std::getline(ss, item, ','))
            ++count[item];
        std::set<int> multiplicities;
        for (const auto& [v, n] : count)
            multiplicities.insert(n);
        if (multiplicities.size() > 1)
            throw std::runtime_error(source + " lists " + list +
                                     ": offsets repeated unevenly weigh some offsets more, which the engine's "
                                     "offset sets cannot express (pass --offsets to choose a set)");
    }

    /// Kind and sizes from the tensor shapes, the variant from the family, a found config and
    /// the options, the offsets; validated.
    ModelConfig inferConfig() {
        const Layout& L = *m_layout;
        const std::string b0 = L.blockPrefix(0);
        const bool hasBlocks =
            std::any_of(m_names.begin(), m_names.end(), [&](const std::string& n) { return n.rfind(b0, 0) == 0; });
        if (!m_file.tensors.count(L.tokens) || !hasBlocks) {
            std::string hint;
            const std::vector<LayoutMatch> ranked = rankLayouts(builtinLayouts(), m_names);
            if (!ranked.empty() && ranked.front().score >= 0 && ranked.front().layout->name != L.name)
                hint = " (the keys look like the " + ranked.front().layout->name + " layout)";
            throw std::runtime_error("no '" + L.tokens + "' and '" + b0 + "*' keys: not a " + L.name + " checkpoint" +
                                     hint);
        }
        ModelConfig c;
        // Kind from what block 0 holds.
        const bool hasG = L.kinds.count(ModelKind::Grassmann) &&
                          m_file.tensors.count(b0 + L.kinds.at(ModelKind::Grassmann).probe) != 0;
        const bool hasT = L.kinds.count(ModelKind::Transformer) &&
                          m_file.tensors.count(b0 + L.kinds.at(ModelKind::Transformer).probe) != 0;
        auto probe = [&](ModelKind k) {
            return L.kinds.count(k) ? b0 + L.kinds.at(k).probe : std::string("(no ") + kindName(k) + " in the layout)";
        };
        if (hasG == hasT)
            throw std::runtime_error(std::string("cannot tell Grassmann from Transformer: block 0 has ") +
                                     (hasG ? "both '" : "neither '") + probe(ModelKind::Grassmann) + "' " +
                                     (hasG ? "and '" : "nor '") + probe(ModelKind::Transformer) + "'");
        c.kind = hasG ? ModelKind::Grassmann : ModelKind::Transformer;
        if (m_o.expectedKind && *m_o.expectedKind != c.kind)
            throw std::runtime_error(std::string("this is a ") + (hasG ? "Grassmann" : "Transformer") +
                                     " checkpoint (block 0 has '" + probe(c.kind) + "'), not a " +
                                     (hasG ? "Transformer" : "Grassmann") + " one");
        const KindLayout& k = L.kind(c.kind);

        // Sizes from the tensor shapes.
        const auto tok = dims(L.tokens, 2), pos = dims(L.positions, 2);
        c.vocabSize = tok[0];
        c.dModel = tok[1];
        c.maxLen = pos[0];
        int64_t layers = 0;
        std::set<int64_t> seenBlocks;
        const std::string stem = L.blocks.substr(0, L.blocks.find("{i}"));
        for (const auto& n : m_names) {
            if (n.rfind(stem, 0) != 0) continue;
            const std::string rest = n.substr(stem.size());
            size_t digits = 0;
            while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])))
                ++digits;
            if (digits == 0 || digits > 5) continue;
            const int64_t i = std::stoll(rest.substr(0, digits));
            if (n.rfind(L.blockPrefix(i), 0) == 0) seenBlocks.insert(i);
        }
        layers = seenBlocks.empty() ? 0 : *seenBlocks.rbegin() + 1;
        if (layers == 0 || static_cast<int64_t>(seenBlocks.size()) != layers)
            throw std::runtime_error("block indices under '" + stem + "' are not 0.." + std::to_string(layers - 1) +
                                     " without gaps");
        c.nLayers = layers;
        auto rowsOf = [&](const std::string& ours) {
            const std::vector<std::string>* t = theirsOf(k, ours);
            int64_t rows = 0;
            for (const std::string& name : *t)
                rows += dims(b0 + name, 2)[0];
            return rows;
        };
        c.dFF = rowsOf("ffn_in.weight");
        if (c.kind == ModelKind::Grassmann) {
            c.reduced = rowsOf("w_red.weight");
            c.nHeads = 4;
        } else {
            c.nHeads = headsFor(m_o, m_found, k, L.name, m_report);
        }
        checkFoundSizes(m_found, c, m_report);
        applyVariant(L, m_found, m_o, c, m_report);
        c.family = L.name;
        c.name = std::filesystem::path(m_path).stem().string();
        if (c.kind == ModelKind::Grassmann) {
            c.layerOffsets = offsetsFor(L, k, layers);
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
        const Layout& L = *m_layout;
        const KindLayout& k = L.kind(c.kind);
        // Parameters: every mapped key must be present with exactly our shape.
        std::map<std::string, std::vector<int64_t>> wanted;
        for (const auto& s : parameterSpecs(c))
            wanted[s.name] = s.shape;
        std::set<std::string> used;
        std::vector<std::string> missing;
        std::map<std::string, FloatArray> params;
        for (const KeyMapping& m : layoutMappings(L, c.kind, c.nLayers, c.mixerLayerNorm)) {
            const auto want = wanted.find(m.ours);
            if (want == wanted.end()) throw std::logic_error("import: layout table names unknown parameter " + m.ours);
            // One tensor of theirs, or several stacked along the first dimension (q | k | v).
            std::vector<float> data;
            std::vector<int64_t> shape;
            std::string names;
            bool complete = true;
            for (const std::string& theirs : m.theirs) {
                names += (names.empty() ? "'" : " + '") + theirs + "'";
                const auto it = m_file.tensors.find(theirs);
                if (it == m_file.tensors.end()) {
                    missing.push_back(theirs);
                    complete = false;
                    continue;
                }
                used.insert(theirs);
                const std::vector<int64_t>& s = it->second.shape;
                if (shape.empty()) {
                    shape = s;
                } else if (s.empty() || s.size() != shape.size() ||
                           !std::equal(s.begin() + 1, s.end(), shape.begin() + 1)) {
                    throw std::runtime_error("shape mismatch: " + names + " cannot be stacked (" +
                                             it->second.describe() + ")");
                } else {
                    shape[0] += s[0];
                }
                const std::vector<float> v = it->second.toFloat();
                data.insert(data.end(), v.begin(), v.end());
            }
            if (!complete) continue;
            if (shape != want->second) {
                const std::string is =
                    m.theirs.size() == 1 ? m_file.tensors.at(m.theirs[0]).describe() : "stacked " + shapeText(shape);
                throw std::runtime_error("shape mismatch: " + names + " is " + is + ", expected " +
                                         shapeText(want->second) + " (V=" + std::to_string(c.vocabSize) +
                                         ", d=" + std::to_string(c.dModel) + ", r=" + std::to_string(c.reduced) +
                                         ", d_ff=" + std::to_string(c.dFF) + ")");
            }
            params[m.ours] = FloatArray(want->second, std::move(data));
        }
        if (!missing.empty())
            throw std::runtime_error("missing keys (" + L.name + " layout, " + kindName(c.kind) +
                                     " model): " + listNames(missing));

        // Pair-index buffers: checked against our order; another order of the same pairs is
        // folded into W_plu's columns (with a sign flip for pairs stored as (j, i)).
        if (c.kind == ModelKind::Grassmann && !k.idxI.empty()) {
            for (int64_t l = 0; l < c.nLayers; ++l) {
                const std::string p = L.blockPrefix(l);
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
                const std::string name = L.blockPrefix(l) + k.causalMask;
                const auto it = m_file.tensors.find(name);
                if (it == m_file.tensors.end()) continue;
                checkCausalMask(it->second, c.maxLen, name);
                used.insert(name);
            }
        }

        // Offset buffers (read by offsetsFor).
        if (!k.offsetsBuffer.empty())
            for (int64_t l = 0; l < c.nLayers; ++l)
                if (m_file.tensors.count(L.blockPrefix(l) + k.offsetsBuffer))
                    used.insert(L.blockPrefix(l) + k.offsetsBuffer);

        // Tied head: optional, but when present it must be the token table.
        if (const auto it = m_file.tensors.find(L.head); it != m_file.tensors.end()) {
            used.insert(L.head);
            const FloatArray& e = params.at("tok_embed.weight");
            if (it->second.shape != e.shape || it->second.toFloat() != e.data)
                throw std::runtime_error("'" + L.head + "' (" + it->second.describe() +
                                         ") differs from the token embedding: untied heads are not supported");
        }

        std::vector<std::string> unknown;
        for (const auto& n : m_names)
            if (!used.count(n)) unknown.push_back(n);
        if (!unknown.empty()) {
            const ModelKind other = c.kind == ModelKind::Grassmann ? ModelKind::Transformer : ModelKind::Grassmann;
            const bool otherKind = c.kind == ModelKind::Grassmann && L.kinds.count(other) &&
                                   std::any_of(unknown.begin(), unknown.end(), [&](const std::string& n) {
                                       return n.find(L.kinds.at(other).probe) != std::string::npos;
                                   });
            throw std::runtime_error("unknown keys (" + L.name + " layout, " + kindName(c.kind) +
                                     " model): " + listNames(unknown) +
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
        line << m_layout->name << " " << kindName(c.kind) << ": V=" << c.vocabSize << " d=" << c.dModel;
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
    Layout m_own;                     ///< a layout read with --layout-file
    const Layout* m_layout = nullptr; ///< the layout in use
};

} // namespace

ImportedModel detail::convertTensors(const std::string& path, TensorFile file, const ImportOptions& options) {
    return Conversion(path, std::move(file), options).run();
}

} // namespace gwb::engine
