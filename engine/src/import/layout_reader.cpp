// Layout files: reading one and checking it (parseLayout in layout_file.h). The compiled-in set,
// key mappings and detection are layout_file.cpp.

#include "import/layout_file.h"

#include "gwb/engine/config_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gwb::engine {

namespace {

using json = nlohmann::json;

/// Our block tensors of each kind (module names; each has .weight and .bias).
const std::vector<std::string>& ourModules(ModelKind kind) {
    static const std::vector<std::string> g{"ln1", "w_red", "w_plu", "w_gate", "ln2", "ffn_in", "ffn_out"};
    static const std::vector<std::string> t{"ln1", "qkv", "out_proj", "ln2", "ffn_in", "ffn_out"};
    return kind == ModelKind::Grassmann ? g : t;
}

class Reader {
public:
    explicit Reader(std::string source) : m_source(std::move(source)) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("layout " + m_source + ": " + what);
    }
    std::string text(const json& o, const char* key, bool required = true) const {
        if (!o.contains(key)) {
            if (required) fail(std::string("missing \"") + key + "\"");
            return "";
        }
        if (!o.at(key).is_string()) fail(std::string("\"") + key + "\" must be a string");
        return o.at(key).get<std::string>();
    }
    std::vector<std::string> texts(const json& v, const std::string& what) const {
        std::vector<std::string> out;
        if (v.is_string()) return {v.get<std::string>()};
        if (!v.is_array() || v.empty()) fail(what + " must be a string or a non-empty list of strings");
        for (const json& e : v) {
            if (!e.is_string()) fail(what + " must be a string or a non-empty list of strings");
            out.push_back(e.get<std::string>());
        }
        return out;
    }

    LayoutStages stages(const json& v) const {
        if (!v.is_object()) fail("variant \"stages\" must be an object");
        LayoutStages st;
        for (auto it = v.begin(); it != v.end(); ++it) {
            const std::string f = it.key();
            const json& val = it.value();
            auto flag = [&](bool& out) {
                if (!val.is_boolean()) fail("stage \"" + f + "\" must be true or false");
                out = val.get<bool>();
            };
            auto scale = [&](std::string& out) {
                if (val.is_number()) {
                    if (!(val.get<double>() > 0)) fail("stage \"" + f + "\" must be a positive number");
                    std::ostringstream s;
                    s.precision(17);
                    s << val.get<double>();
                    out = s.str();
                } else if (val.is_string() && (val.get<std::string>() == "1/sqrt(pairs)" ||
                                               val.get<std::string>() == "1/sqrt(2*windows)")) {
                    out = val.get<std::string>();
                } else {
                    fail("stage \"" + f + "\" must be a positive number, \"1/sqrt(pairs)\" or \"1/sqrt(2*windows)\"");
                }
            };
            if (f == "reduction_norm")
                flag(st.reductionNorm);
            else if (f == "feature_norm")
                flag(st.featureNorm);
            else if (f == "output_projection")
                flag(st.outputProjection);
            else if (f == "wedge_order") {
                if (!val.is_string() ||
                    (val.get<std::string>() != "current_past" && val.get<std::string>() != "past_current"))
                    fail("stage \"wedge_order\" must be \"current_past\" or \"past_current\"");
                st.wedgePastFirst = val.get<std::string>() == "past_current";
            } else if (f == "gate_input") {
                if (!val.is_string() || (val.get<std::string>() != "x" && val.get<std::string>() != "x_and_g"))
                    fail("stage \"gate_input\" must be \"x\" or \"x_and_g\"");
                st.gateFromInput = val.get<std::string>() == "x";
            } else if (f == "plucker_scale")
                scale(st.pluckerScale);
            else if (f == "mix_scale")
                scale(st.mixScale);
            else
                fail("unknown stage '" + f +
                     "' (reduction_norm, plucker_scale, feature_norm, gate_input, mix_scale, output_projection, "
                     "wedge_order)");
        }
        return st;
    }

    KindLayout kind(const json& k, ModelKind which) const {
        const std::string kn = kindName(which);
        if (!k.is_object()) fail("\"kinds\"." + kn + " must be an object");
        KindLayout out;
        out.probe = text(k, "probe");
        if (!k.contains("parameters") || !k.at("parameters").is_object())
            fail("\"kinds\"." + kn + " needs a \"parameters\" object (our module -> theirs)");
        std::set<std::string> modules;
        for (auto it = k.at("parameters").begin(); it != k.at("parameters").end(); ++it) {
            const std::string ours = it.key();
            const auto& allowed = ourModules(which);
            const bool optional =
                ours == "ln_mix" ||
                (which == ModelKind::Grassmann &&
                 (ours == "ln_red" || ours == "ln_geo" || ours == "w_out" || ours == "geo_in" || ours == "geo_out"));
            if (!optional && std::find(allowed.begin(), allowed.end(), ours) == allowed.end())
                fail("\"kinds\"." + kn + ".parameters names '" + ours + "', which a " + kn + " block does not have");
            modules.insert(ours);
            const json& v = it.value();
            if (v.is_string()) {
                out.parameters.push_back({ours + ".weight", {v.get<std::string>() + ".weight"}});
                out.parameters.push_back({ours + ".bias", {v.get<std::string>() + ".bias"}});
            } else if (v.is_object()) {
                for (const char* part : {"weight", "bias"}) {
                    if (!v.contains(part)) fail("\"kinds\"." + kn + ".parameters." + ours + " needs \"" + part + "\"");
                    out.parameters.push_back({ours + "." + part, texts(v.at(part), ours + "." + part)});
                }
            } else {
                fail("\"kinds\"." + kn + ".parameters." + ours + " must be a module name or {\"weight\", \"bias\"}");
            }
        }
        // Each tensor of theirs feeds one of ours.
        std::map<std::string, std::string> seen;
        for (const auto& [ours, theirs] : out.parameters)
            for (const std::string& t : theirs) {
                const auto [it, fresh] = seen.emplace(t, ours);
                if (!fresh)
                    fail("\"kinds\"." + kn + " maps '" + t + "' twice (to " + it->second + " and " + ours + ")");
            }
        if (k.contains("pair_indices")) {
            const auto p = texts(k.at("pair_indices"), "pair_indices");
            if (p.size() != 2) fail("\"pair_indices\" lists the two buffers idx_i and idx_j");
            out.idxI = p[0];
            out.idxJ = p[1];
        }
        out.causalMask = text(k, "causal_mask", false);
        if (k.contains("variant")) {
            const json& v = k.at("variant");
            if (!v.is_object()) fail("\"variant\" must be an object");
            for (auto it = v.begin(); it != v.end(); ++it) {
                const std::string f = it.key();
                const json& val = it.value();
                auto str = [&] {
                    if (!val.is_string()) fail("variant \"" + f + "\" must be a string");
                    return val.get<std::string>();
                };
                if (f == "norm") {
                    try {
                        out.norm = normFromName(str());
                    } catch (const std::invalid_argument& e) {
                        fail(std::string("variant ") + e.what());
                    }
                } else if (f == "aggregation") {
                    try {
                        out.aggregation = aggregationFromName(str());
                    } catch (const std::invalid_argument& e) {
                        fail(std::string("variant ") + e.what());
                    }
                } else if (f == "gate") {
                    const std::string s = str();
                    if (s != "paper" && s != "geometry_only" && s != "residual")
                        fail("variant gate must be paper, geometry_only or residual (got '" + s + "')");
                    out.gate = s == "paper"           ? GateVariant::Paper
                               : s == "geometry_only" ? GateVariant::GeometryOnly
                                                      : GateVariant::Residual;
                } else if (f == "stages") {
                    out.stages = stages(val);
                } else if (f == "empty") {
                    const std::string s = str();
                    if (s != "zero" && s != "bias") fail("variant empty must be zero or bias (got '" + s + "')");
                    out.empty = s == "zero" ? EmptyRule::Zero : EmptyRule::Bias;
                } else if (f == "mixer_layer_norm") {
                    if (!val.is_boolean()) fail("variant mixer_layer_norm must be true or false");
                    out.mixerLayerNorm = val.get<bool>();
                } else if (f == "eps") {
                    if (!val.is_number() || val.get<double>() <= 0) fail("variant eps must be a positive number");
                    out.eps = val.get<double>();
                } else if (f == "activation") {
                    try {
                        out.activation = activationFromName(str());
                    } catch (const std::invalid_argument& e) {
                        fail(std::string("variant ") + e.what());
                    }
                } else {
                    fail("unknown variant flag '" + f +
                         "' (norm, gate, empty, mixer_layer_norm, eps, aggregation, stages, activation)");
                }
            }
        }
        if (which == ModelKind::Transformer && (out.gate || out.empty || out.eps || out.aggregation || out.stages))
            fail("a Transformer has no gate, empty rule, eps, aggregation or stages variant");
        // Every tensor of our block is mapped: the per-offset MLP (geo_in, geo_out) in place of
        // W_plu for aggregation per_offset_mlp.
        const bool mlp = out.aggregation == Aggregation::PerOffsetMlp;
        std::vector<std::string> required;
        for (const std::string& m : ourModules(which))
            if (m != "w_plu" || !mlp) required.push_back(m);
        if (mlp) {
            required.push_back("geo_in");
            required.push_back("geo_out");
        } else {
            for (const char* m : {"geo_in", "geo_out"})
                if (modules.count(m))
                    fail(std::string("parameters maps ") + m +
                         ", which only aggregation per_offset_mlp has (variant aggregation)");
        }
        if (mlp && modules.count("w_plu"))
            fail("parameters maps w_plu, which aggregation per_offset_mlp does not have");
        std::vector<std::string> missing;
        for (const std::string& m : required)
            if (!modules.count(m)) missing.push_back(m);
        if (!missing.empty()) {
            std::string list;
            for (const auto& m : missing)
                list += (list.empty() ? "" : ", ") + m;
            fail("\"kinds\"." + kn + ".parameters does not cover every tensor of a block: " + list + " missing");
        }
        // A stage's parameters are mapped exactly when the stage is on.
        const LayoutStages st = out.stages.value_or(LayoutStages{});
        for (const auto& [module, on] : {std::pair<std::string, bool>{"ln_red", st.reductionNorm},
                                         {"ln_geo", st.featureNorm},
                                         {"w_out", st.outputProjection}})
            if (on != (modules.count(module) != 0))
                fail(on ? "variant stages turn on the stage of " + module + " but parameters has no " + module
                        : "parameters maps " + module + " but no variant stage uses it");
        if (k.contains("heads")) {
            if (!k.at("heads").is_number_integer() || k.at("heads").get<int64_t>() < 1)
                fail("\"heads\" must be a positive integer");
            out.heads = k.at("heads").get<int64_t>();
        }
        out.offsetsBuffer = text(k, "offsets_buffer", false);
        out.epsConfigKey = text(k, "eps_config_key", false);
        if (which == ModelKind::Transformer && !out.epsConfigKey.empty())
            fail("a Transformer has no planes: \"eps_config_key\" applies to Grassmann models only");
        if (k.contains("pre_norm")) {
            try {
                out.preNorm = normFromName(text(k, "pre_norm"));
            } catch (const std::invalid_argument& e) {
                fail(std::string("\"pre_norm\": ") + e.what());
            }
        }
        const bool mixLn = out.mixerLayerNorm.value_or(false);
        if (mixLn != (modules.count("ln_mix") != 0))
            fail(mixLn ? "variant mixer_layer_norm is true but parameters has no ln_mix"
                       : "parameters maps ln_mix but variant mixer_layer_norm is not true");
        if (mixLn && out.norm.value_or(NormPlacement::Post) != NormPlacement::Pre)
            fail("a mixer LayerNorm exists only in the pre arrangement (variant norm pre)");
        if (k.contains("unseen")) {
            const json& u = k.at("unseen");
            if (!u.is_object()) fail("\"unseen\" must be an object (flag -> why the checkpoint cannot show it)");
            for (auto it = u.begin(); it != u.end(); ++it) {
                if (!it.value().is_string()) fail("\"unseen\"." + it.key() + " must be a string");
                out.unseen[it.key()] = it.value().get<std::string>();
            }
        }
        if (k.contains("transposed")) {
            for (const std::string& m : texts(k.at("transposed"), "\"transposed\""))
                if (!modules.count(m))
                    fail("\"transposed\" names '" + m + "', which \"parameters\" does not map");
                else
                    out.transposed.insert(m);
        }
        if (k.contains("ignored_buffers")) {
            const json& b = k.at("ignored_buffers");
            if (!b.is_object()) fail("\"ignored_buffers\" must be an object (block-relative buffer -> why)");
            for (auto it = b.begin(); it != b.end(); ++it) {
                if (!it.value().is_string()) fail("\"ignored_buffers\"." + it.key() + " must be a string");
                out.ignoredBuffers[it.key()] = it.value().get<std::string>();
            }
        }
        if (k.contains("config")) readConfigChecks(k.at("config"), out);
        return out;
    }

    /// A kind's "config": {"activation": {"key", "values": {theirs: ours}}, "layer_norm_eps": key,
    /// "require": {key: {"value", "why"}}}.
    void readConfigChecks(const json& c, KindLayout& out) const {
        if (!c.is_object()) fail("\"config\" must be an object");
        for (auto it = c.begin(); it != c.end(); ++it)
            if (it.key() != "activation" && it.key() != "layer_norm_eps" && it.key() != "require")
                fail("\"config\" field '" + it.key() + "' is unknown (activation, layer_norm_eps, require)");
        if (c.contains("activation")) {
            const json& a = c.at("activation");
            if (!a.is_object() || !a.contains("values") || !a.at("values").is_object() || a.at("values").empty())
                fail("\"config\".activation must be {\"key\", \"values\": {their name: gelu | gelu_tanh}}");
            out.activationKey = text(a, "key");
            for (auto it = a.at("values").begin(); it != a.at("values").end(); ++it) {
                if (!it.value().is_string()) fail("\"config\".activation.values." + it.key() + " must be a string");
                try {
                    out.activations[it.key()] = activationFromName(it.value().get<std::string>());
                } catch (const std::invalid_argument& e) {
                    fail(std::string("\"config\".activation: ") + e.what());
                }
            }
        }
        out.layerNormEpsKey = text(c, "layer_norm_eps", false);
        if (c.contains("require")) {
            const json& r = c.at("require");
            if (!r.is_object()) fail("\"config\".require must map a found key to {\"value\", \"why\"}");
            for (auto it = r.begin(); it != r.end(); ++it) {
                if (!it.value().is_object()) fail("\"config\".require." + it.key() + " must be {\"value\", \"why\"}");
                out.required[it.key()] = {text(it.value(), "value"), text(it.value(), "why")};
            }
        }
    }

    ConfigRule configRule(const json& r) const {
        static const std::set<std::string> fields{"when",     "when_lacks", "ignore", "offsets",
                                                  "pre_norm", "caution",    "why"};
        if (!r.is_object()) fail("each of \"config_rules\" must be an object");
        for (auto it = r.begin(); it != r.end(); ++it)
            if (!fields.count(it.key()))
                fail("config rule field '" + it.key() +
                     "' is unknown (when, when_lacks, ignore, offsets, pre_norm, caution, why)");
        ConfigRule out;
        if (r.contains("when")) {
            const json& w = r.at("when");
            if (!w.is_object() || w.empty()) fail("config rule \"when\" must map found keys to values");
            for (auto it = w.begin(); it != w.end(); ++it) {
                if (!it.value().is_string())
                    fail("config rule \"when\"." + it.key() + " must be a string (\"*\": present)");
                out.when[it.key()] = it.value().get<std::string>();
            }
        }
        if (r.contains("when_lacks")) out.whenLacks = texts(r.at("when_lacks"), "config rule \"when_lacks\"");
        if (out.when.empty() && out.whenLacks.empty()) fail("a config rule needs \"when\" or \"when_lacks\"");
        if (r.contains("ignore")) out.ignore = texts(r.at("ignore"), "config rule \"ignore\"");
        out.offsets = text(r, "offsets", false);
        if (r.contains("offsets")) { // one set for every layer: "1,2,4,8,12,16"
            bool ok = !out.offsets.empty() && out.offsets.front() != ',' && out.offsets.back() != ',' &&
                      out.offsets.find(",,") == std::string::npos &&
                      out.offsets.find_first_not_of("0123456789,") == std::string::npos;
            for (size_t at = 0; ok && at < out.offsets.size(); at = out.offsets.find(',', at) + 1) {
                const size_t end = std::min(out.offsets.find(',', at), out.offsets.size());
                ok = end - at <= 6 && out.offsets[at] != '0';
                if (out.offsets.find(',', at) == std::string::npos) break;
            }
            if (!ok) fail("config rule \"offsets\" must be one set of positive offsets, e.g. \"1,2,4,8,12,16\"");
        }
        if (r.contains("pre_norm")) {
            const json& p = r.at("pre_norm");
            if (!p.is_object() || p.empty()) fail("config rule \"pre_norm\" must map a kind to an arrangement");
            for (auto it = p.begin(); it != p.end(); ++it) {
                if (it.key() != "grassmann" && it.key() != "transformer")
                    fail("config rule \"pre_norm\" names unknown kind '" + it.key() + "' (grassmann, transformer)");
                if (!it.value().is_string()) fail("config rule \"pre_norm\"." + it.key() + " must be a string");
                try {
                    out.preNorm[it.key() == "grassmann" ? ModelKind::Grassmann : ModelKind::Transformer] =
                        normFromName(it.value().get<std::string>());
                } catch (const std::invalid_argument& e) {
                    fail(std::string("config rule \"pre_norm\": ") + e.what());
                }
            }
        }
        if (r.contains("caution")) {
            if (!r.at("caution").is_boolean()) fail("config rule \"caution\" must be true or false");
            out.caution = r.at("caution").get<bool>();
        }
        if (out.ignore.empty() && out.offsets.empty() && out.preNorm.empty() && !out.caution)
            fail("a config rule needs something to do: \"ignore\", \"offsets\", \"pre_norm\" or \"caution\"");
        out.why = text(r, "why");
        if (out.why.empty()) fail("a config rule needs \"why\" (what the family's code does, for the report)");
        return out;
    }

    Layout layout(const json& j) const {
        if (!j.is_object()) fail("the top level must be a JSON object");
        if (text(j, "format") != "gwb-layout") fail("\"format\" must be \"gwb-layout\"");
        if (!j.contains("version") || !j.at("version").is_number_integer() || j.at("version").get<int>() != 1)
            fail("\"version\" must be 1");
        Layout l;
        l.name = detail::layoutLower(text(j, "name"));
        if (l.name.empty() || l.name == "auto") fail("\"name\" must be a name other than auto");
        for (char ch : l.name)
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-')
                fail("\"name\" may hold letters, digits, _ and - only");
        l.title = text(j, "title", false);
        l.facts = text(j, "facts", false);
        l.source = m_source;
        if (!j.contains("detect") || !j.at("detect").is_object()) fail("missing \"detect\" {\"all\": [...]}");
        const json& d = j.at("detect");
        if (!d.contains("all")) fail("\"detect\" needs \"all\": the keys every checkpoint of the family has");
        l.detectAll = texts(d.at("all"), "detect.all");
        if (d.contains("none")) l.detectNone = texts(d.at("none"), "detect.none");
        if (d.contains("files")) l.detectFiles = texts(d.at("files"), "detect.files");
        if (!j.contains("embedding") || !j.at("embedding").is_object())
            fail("missing \"embedding\" {\"tokens\", \"positions\"}");
        l.tokens = text(j.at("embedding"), "tokens");
        l.positions = text(j.at("embedding"), "positions");
        l.blocks = text(j, "blocks");
        if (l.blocks.find("{i}") == std::string::npos) fail("\"blocks\" must contain {i} (e.g. \"blocks.{i}.\")");
        l.finalNorm = text(j, "final_norm");
        if (j.contains("head")) l.head = text(j, "head");
        l.keyPrefix = text(j, "key_prefix", false);
        if (!l.keyPrefix.empty() && l.keyPrefix.back() != '.') fail("\"key_prefix\" must end in '.'");
        if (j.contains("offsets")) {
            const json& o = j.at("offsets");
            if (!o.is_object()) fail("\"offsets\" must be an object");
            if (o.contains("otherwise")) l.offsetsOtherwise = text(o, "otherwise");
            if (o.contains("by_layers")) {
                if (!o.at("by_layers").is_object()) fail("\"offsets\".by_layers must map a layer count to a schedule");
                for (auto it = o.at("by_layers").begin(); it != o.at("by_layers").end(); ++it) {
                    int64_t n = 0;
                    try {
                        n = std::stoll(it.key());
                    } catch (const std::exception&) {
                        fail("\"offsets\".by_layers key '" + it.key() + "' is not a layer count");
                    }
                    if (!it.value().is_string()) fail("\"offsets\".by_layers values are schedule strings");
                    l.offsetsByLayers[n] = it.value().get<std::string>();
                }
            }
            if (o.contains("config_per_layer_flag")) l.configPerLayerFlag = text(o, "config_per_layer_flag");
            if (o.contains("when_config_lacks")) {
                const json& w = o.at("when_config_lacks");
                if (!w.is_object()) fail("\"offsets\".when_config_lacks must be {\"key\", \"schedule\", \"why\"}");
                l.lacksKey = text(w, "key");
                l.lacksSchedule = text(w, "schedule");
                l.lacksWhy = text(w, "why", false);
            }
            if (o.contains("config")) {
                const std::string c = text(o, "config");
                if (c != "set" && c != "per_layer" && c != "ignored")
                    fail("\"offsets\".config must be set, per_layer or ignored (how a found schedule reads)");
                l.configOffsetsPerLayer = c == "per_layer";
                if (c == "ignored") {
                    l.configOffsetsIgnoredWhy = text(o, "config_ignored_why", false);
                    if (l.configOffsetsIgnoredWhy.empty())
                        fail("\"offsets\".config ignored needs \"config_ignored_why\" (what the family's code runs)");
                }
            }
        }
        if (j.contains("config_rules")) {
            const json& rules = j.at("config_rules");
            if (!rules.is_array()) fail("\"config_rules\" must be a list of rules");
            for (const json& r : rules)
                l.configRules.push_back(configRule(r));
        }
        if (!j.contains("kinds") || !j.at("kinds").is_object() || j.at("kinds").empty())
            fail("missing \"kinds\" {\"grassmann\": ..., \"transformer\": ...}");
        for (auto it = j.at("kinds").begin(); it != j.at("kinds").end(); ++it) {
            if (it.key() != "grassmann" && it.key() != "transformer")
                fail("unknown kind '" + it.key() + "' (grassmann, transformer)");
            const ModelKind k = it.key() == "grassmann" ? ModelKind::Grassmann : ModelKind::Transformer;
            l.kinds[k] = kind(it.value(), k);
        }
        // The embeddings, final norm and head are tensors of theirs too: none may be mapped twice.
        std::set<std::string> top{l.tokens, l.positions, l.finalNorm + ".weight", l.finalNorm + ".bias"};
        if (top.size() != 4) fail("the embeddings and the final norm must be four different tensors");
        return l;
    }

private:
    std::string m_source;
};

} // namespace

Layout parseLayout(const std::string& text, const std::string& source) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e999
        throw std::runtime_error("layout " + source + " is not valid JSON: " + e.what());
    }
    return Reader(source).layout(j);
}

} // namespace gwb::engine
