// Layout files: the compiled-in set, key mappings and detection (layout_file.h); reading one is
// layout_reader.cpp.

#include "import/layout_file.h"

#include "gwb/engine/config_io.h"

#include <algorithm>
#include <sstream>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <set>
#include <stdexcept>

namespace gwb::engine {

std::string detail::layoutLower(std::string s) {
    for (char& ch : s)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

namespace detail {
/// {file name, text} of every resources/layouts/*.json (generated at configure time).
const std::vector<std::pair<std::string, std::string>>& builtinLayoutTexts();
} // namespace detail

namespace {

/// Key present (exact), or a key under the prefix when the pattern ends in '.'.
bool present(const std::vector<std::string>& names, const std::string& pattern) {
    if (!pattern.empty() && pattern.back() == '.')
        return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.rfind(pattern, 0) == 0; });
    return std::find(names.begin(), names.end(), pattern) != names.end();
}

std::string shown(const std::string& pattern) {
    return !pattern.empty() && pattern.back() == '.' ? pattern + "*" : pattern;
}

} // namespace

std::string Layout::blockPrefix(int64_t layer) const {
    std::string s = blocks;
    const size_t at = s.find("{i}");
    return s.replace(at, 3, std::to_string(layer));
}

std::string Layout::defaultOffsets(int64_t nLayers) const {
    const auto it = offsetsByLayers.find(nLayers);
    return it != offsetsByLayers.end() ? it->second : offsetsOtherwise;
}

const KindLayout& Layout::kind(ModelKind k) const {
    const auto it = kinds.find(k);
    if (it == kinds.end()) throw std::runtime_error("the " + name + " layout has no " + kindName(k) + " models");
    return it->second;
}

const std::vector<Layout>& builtinLayouts() {
    static const std::vector<Layout> layouts = [] {
        std::vector<Layout> out;
        for (const auto& [file, text] : detail::builtinLayoutTexts())
            out.push_back(parseLayout(text, "built-in (resources/layouts/" + file + ")"));
        std::sort(out.begin(), out.end(), [](const Layout& a, const Layout& b) { return a.name < b.name; });
        return out;
    }();
    return layouts;
}

const Layout& builtinLayout(const std::string& name) {
    const std::string n = detail::layoutLower(name);
    std::string names;
    for (const Layout& l : builtinLayouts()) {
        if (l.name == n) return l;
        names += ", " + l.name;
    }
    throw std::invalid_argument("unknown layout '" + name + "' (use auto" + names + ", or --layout-file F.json)");
}

void applyLayoutVariant(const Layout& layout, ModelConfig& c) {
    const KindLayout& k = layout.kind(c.kind);
    c.layerNormEps = 1e-5;
    c.activation = k.activation.value_or(Activation::Gelu);
    if (k.norm) c.norm = *k.norm;
    if (k.gate) c.gate = *k.gate;
    if (k.mixerLayerNorm) c.mixerLayerNorm = *k.mixerLayerNorm;
    if (k.empty) c.empty = *k.empty;
    if (k.eps) c.pluckerEps = *k.eps;
    if (k.aggregation) c.aggregation = *k.aggregation;
    if (k.stages) {
        const LayoutStages& st = *k.stages;
        c.stages.reductionNorm = st.reductionNorm;
        c.stages.featureNorm = st.featureNorm;
        c.stages.gateFromInput = st.gateFromInput;
        c.stages.outputProjection = st.outputProjection;
        c.stages.wedgePastFirst = st.wedgePastFirst;
        if (c.reduced >= 2) c.stages.pluckerScale = stageScale(st.pluckerScale, c);
        if (!c.layerOffsets.empty()) c.stages.mixScale = stageScale(st.mixScale, c);
    }
}

double stageScale(const std::string& rule, const ModelConfig& c) {
    if (rule == "1/sqrt(pairs)") return 1.0 / std::sqrt(static_cast<double>(c.reduced * (c.reduced - 1) / 2));
    if (rule == "1/sqrt(2*windows)") {
        if (c.layerOffsets.empty()) throw std::invalid_argument("1/sqrt(2*windows) needs the offsets");
        const size_t w = c.layerOffsets.front().size();
        for (const auto& o : c.layerOffsets)
            if (o.size() != w)
                throw std::invalid_argument("the mixer's scale 1/sqrt(2 |W|) needs one offset count in every layer; "
                                            "these layers have " +
                                            std::to_string(w) + " and " + std::to_string(o.size()));
        return 1.0 / std::sqrt(2.0 * static_cast<double>(w));
    }
    try {
        size_t used = 0;
        const double v = std::stod(rule, &used);
        if (used == rule.size() && v > 0) return v;
    } catch (const std::exception&) {
    }
    throw std::invalid_argument("unknown stage scale '" + rule + "'");
}

std::vector<KeyMapping> layoutMappings(const Layout& layout, ModelKind kind, int64_t nLayers, bool mixerLayerNorm) {
    const KindLayout& k = layout.kind(kind);
    std::vector<KeyMapping> m{{"tok_embed.weight", {layout.tokens}}, {"pos_embed.weight", {layout.positions}}};
    for (int64_t i = 0; i < nLayers; ++i) {
        const std::string ours = "blocks." + std::to_string(i) + ".";
        const std::string theirs = layout.blockPrefix(i);
        for (const auto& [o, t] : k.parameters) {
            if (!mixerLayerNorm && o.rfind("ln_mix.", 0) == 0) continue;
            KeyMapping km{ours + o, {}};
            for (const std::string& name : t)
                km.theirs.push_back(theirs + name);
            m.push_back(std::move(km));
        }
    }
    m.push_back({"ln_final.weight", {layout.finalNorm + ".weight"}});
    m.push_back({"ln_final.bias", {layout.finalNorm + ".bias"}});
    return m;
}

std::string keyWithoutPrefix(const Layout& layout, const std::string& key) {
    const std::string& p = layout.keyPrefix;
    return !p.empty() && key.size() > p.size() && key.compare(0, p.size(), p) == 0 ? key.substr(p.size()) : key;
}

std::vector<std::string> stripKeyPrefix(const Layout& layout, const std::vector<std::string>& names) {
    std::vector<std::string> out;
    out.reserve(names.size());
    for (const std::string& n : names)
        out.push_back(keyWithoutPrefix(layout, n));
    return out;
}

std::vector<LayoutMatch> rankLayouts(const std::vector<Layout>& candidates, const std::vector<std::string>& allNames,
                                     const std::string& folder) {
    std::vector<LayoutMatch> out;
    for (const Layout& l : candidates) {
        const std::vector<std::string> names = stripKeyPrefix(l, allNames);
        LayoutMatch m;
        m.layout = &l;
        std::vector<std::string> fit, misfit;
        for (const std::string& p : l.detectAll)
            (present(names, p) ? fit : misfit).push_back(shown(p) + (present(names, p) ? "" : " absent"));
        for (const std::string& p : l.detectNone)
            if (present(names, p)) misfit.push_back(shown(p) + " present");
        for (const std::string& f : l.detectFiles) {
            const bool there = !folder.empty() && std::filesystem::exists(std::filesystem::path(folder) / f);
            (there ? fit : misfit).push_back(f + (there ? " beside the checkpoint" : " not beside the checkpoint"));
        }
        // The kind probe of block 0.
        std::string probe;
        for (const auto& [kind, k] : l.kinds)
            if (present(names, l.blockPrefix(0) + k.probe)) probe = l.blockPrefix(0) + k.probe;
        if (probe.empty()) {
            std::string probes;
            for (const auto& [kind, k] : l.kinds)
                probes += (probes.empty() ? "" : " or ") + l.blockPrefix(0) + k.probe;
            misfit.push_back(probes + " absent");
        } else {
            fit.push_back(probe);
        }
        // Tensors of theirs the layout expects in block 0 that are present: a finer signal.
        int blockHits = 0;
        for (const auto& [kind, k] : l.kinds)
            for (const auto& [o, t] : k.parameters)
                for (const std::string& name : t)
                    blockHits += present(names, l.blockPrefix(0) + name) ? 1 : 0;
        auto join = [](const std::vector<std::string>& v) {
            std::string s;
            for (size_t i = 0; i < v.size(); ++i)
                s += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
            return s;
        };
        m.reason = join(fit);
        if (misfit.empty()) {
            m.score = static_cast<int>(fit.size()) * 100 + blockHits;
        } else {
            m.score = -static_cast<int>(misfit.size());
            m.failure = join(misfit);
        }
        out.push_back(std::move(m));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const LayoutMatch& a, const LayoutMatch& b) { return a.score > b.score; });
    return out;
}

} // namespace gwb::engine
