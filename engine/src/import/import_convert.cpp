// gwb import, the conversion: one family's tensors -> our named parameters and config, checked
// key by key (import.h states the rules). Phases: the config from the tensor shapes, a found
// config and the options; the parameters through the layout's key table (import_parameters.cpp);
// the vocabulary.

#include "import/import_convert.h"

#include "tokenizers/bpe_tokenizer.h"
#include "tokenizers/hf_tokenizer.h"
#include "gwb/engine/config_io.h"
#include "import/import_config.h"
#include "import/import_rules.h"
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

using detail::applyConfigChecks;
using detail::applyVariant;
using detail::asciiLower;
using detail::checkFoundSizes;
using detail::describeStages;
using detail::headsFor;
using detail::loadVocabulary;

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
        stripKeyPrefix();
        applyConfigRules();
        m_report.layout = m_layout->name;
        m_report.layoutSource = m_layout->source;
    }

    ImportedModel run() {
        const ModelConfig c = inferConfig();
        const std::map<std::string, FloatArray> params = detail::mapParameters(*m_layout, m_file.tensors, c, m_report);
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

    /// Keys under the layout's key_prefix (Hugging Face's transformer.*) lose it, the head keeps
    /// its name: from here on the names are the layout's.
    void stripKeyPrefix() {
        const std::string& p = m_layout->keyPrefix;
        if (p.empty()) return;
        std::map<std::string, RawTensor> renamed;
        int stripped = 0;
        for (auto& [name, t] : m_file.tensors) {
            const std::string bare = keyWithoutPrefix(*m_layout, name);
            stripped += bare != name;
            if (!renamed.emplace(bare, std::move(t)).second)
                throw std::runtime_error("'" + name + "' and '" + bare + "' are both present: one tensor named twice");
        }
        m_file.tensors = std::move(renamed);
        m_names.clear();
        for (const auto& [n, t] : m_file.tensors)
            m_names.push_back(n);
        if (stripped)
            m_report.notes.push_back("keys: the prefix '" + p + "' dropped from " + std::to_string(stripped) +
                                     " names");
    }

    /// The layout's config rules that the found config meets: fields the family's code does not
    /// read are reported and dropped (never applied), and the offsets and pre_norm meaning the
    /// code uses take their place. The layout in use becomes a copy with those changes.
    void applyConfigRules() {
        m_effective = *m_layout;
        for (const ConfigRule& r : m_layout->configRules) {
            bool match = true;
            std::string condition;
            for (const auto& [key, value] : r.when) {
                const auto f = m_found.get(key);
                match = match && f && (value == "*" || f->value == value);
                if (f) condition += (condition.empty() ? "" : ", ") + f->source + " = " + f->value;
            }
            if (!r.whenLacks.empty()) {
                match = match && !m_found.values.empty();
                for (const std::string& key : r.whenLacks) {
                    match = match && !m_found.get(key);
                    condition += (condition.empty() ? "no " : ", no ") + key + " in the found config";
                }
            }
            if (!match) continue;
            m_report.notes.push_back(std::string(r.caution ? "caution, " : "") + "config rule of the " +
                                     m_layout->name + " layout (" + condition + "): " + r.why);
            for (const std::string& key : r.ignore) {
                const auto f = m_found.get(key);
                if (!f) continue;
                m_report.notes.push_back("config: " + f->source + " says " + f->value +
                                         ": not applied, the family's code does not read it here");
                m_found.values.erase(key);
            }
            if (!r.offsets.empty()) {
                m_ruleOffsets = r.offsets;
                m_ruleWhy = r.why;
            }
            for (const auto& [kind, arrangement] : r.preNorm)
                if (const auto it = m_effective.kinds.find(kind); it != m_effective.kinds.end())
                    it->second.preNorm = arrangement;
        }
        m_layout = &m_effective;
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
        if (!m_ruleOffsets.empty()) {
            m_report.flags.push_back("offsets=" + m_ruleOffsets + " (what " + L.name +
                                     "'s code runs here: " + m_ruleWhy + "; --offsets overrides)");
            return parseOffsetSchedule(m_ruleOffsets, layers);
        }
        const auto found = m_found.get({"window_schedule", "window_offsets", "window_sizes", "offsets", "lags"});
        if (found && !L.configOffsetsIgnoredWhy.empty()) {
            // The family's code never reads this list: compare it with what the code runs and say so.
            const std::string runs = L.defaultOffsets(layers);
            std::vector<std::vector<int>> stated;
            try {
                stated = parseOffsetSchedule("per_layer:" + found->value, layers);
            } catch (const std::invalid_argument&) {
            }
            const std::vector<std::vector<int>> used = parseOffsetSchedule(runs, layers);
            if (stated == used) {
                m_report.notes.push_back("offsets: " + found->source + " [" + found->value + "] agrees with what " +
                                         L.name + " runs for " + std::to_string(layers) + " layers");
            } else {
                m_report.notes.push_back("offsets: " + found->source + " says [" + found->value + "], but " +
                                         L.configOffsetsIgnoredWhy + "; used " + runs +
                                         " (--offsets per_layer:" + found->value + " applies the file's list)");
            }
            m_report.flags.push_back("offsets=" + runs + " (what " + L.name + "'s code runs for " +
                                     std::to_string(layers) + " layers; --offsets overrides)");
            return used;
        }
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
        auto rowsOf = [&](const std::string& ours) { // our output width (theirs is input x output when transposed)
            const std::vector<std::string>* t = theirsOf(k, ours);
            const bool transposed = k.transposed.count(ours.substr(0, ours.find('.'))) != 0;
            int64_t rows = 0;
            for (const std::string& name : *t)
                rows += dims(b0 + name, 2)[transposed ? 1 : 0];
            return rows;
        };
        c.dFF = rowsOf("ffn_in.weight");
        if (c.kind == ModelKind::Grassmann) {
            c.reduced = rowsOf("w_red.weight");
            if (k.aggregation == Aggregation::PerOffsetMlp) c.dGeom = rowsOf("geo_in.weight");
            c.nHeads = 4;
        } else {
            c.nHeads = headsFor(m_o, m_found, k, L.name, c.dModel, m_report);
        }
        checkFoundSizes(m_found, c, m_report);
        applyVariant(L, m_found, m_o, c, m_report);
        applyConfigChecks(k, m_found, L.name, c, m_report);
        c.family = L.name;
        c.name = std::filesystem::path(m_path).stem().string();
        // save_pretrained's fixed file names: the folder names the model.
        if (c.name == "model" || c.name == "pytorch_model") {
            const std::filesystem::path folder = std::filesystem::absolute(m_path).parent_path();
            if (!folder.filename().empty()) c.name = folder.filename().string();
        }
        if (c.kind == ModelKind::Grassmann) {
            c.layerOffsets = offsetsFor(L, k, layers);
            if (k.stages) { // the mixer's scales that depend on the offsets (1/sqrt(2 |W|))
                try {
                    c.stages.mixScale = stageScale(k.stages->mixScale, c);
                } catch (const std::invalid_argument& e) {
                    throw std::runtime_error(L.name + ": " + e.what());
                }
            }
            if (k.stages || c.aggregation == Aggregation::PerOffsetMlp) m_report.flags.push_back(describeStages(c));
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
                "no tokenizer attached: none where the family keeps it; pass --vocab (tokenizer.json, vocab.txt, "
                "or vocab.json with merges.txt beside it)");
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
        if (c.kind == ModelKind::Transformer) line << " heads=" << c.nHeads;
        if (c.activation != Activation::Gelu) line << " activation=" << activationName(c.activation);
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
    Layout m_effective;               ///< the chosen layout with the config rules that apply
    std::string m_ruleOffsets;        ///< offsets a config rule says the family's code runs
    std::string m_ruleWhy;            ///< that rule's why
    const Layout* m_layout = nullptr; ///< the layout in use
};

} // namespace

ImportedModel detail::convertTensors(const std::string& path, TensorFile file, const ImportOptions& options) {
    return Conversion(path, std::move(file), options).run();
}

} // namespace gwb::engine
