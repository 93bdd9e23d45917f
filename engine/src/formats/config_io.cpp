// ModelConfig JSON reading/writing, validation, and parameter counts from the config alone.

#include "gwb/engine/config_io.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {

using nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& field, const std::string& what) {
    throw std::invalid_argument("model config: field '" + field + "' " + what);
}

int64_t getInt(const json& j, const char* key, int64_t fallback) {
    if (!j.contains(key)) return fallback;
    const json& v = j.at(key);
    if (!v.is_number_integer()) fail(key, "must be an integer");
    return v.get<int64_t>();
}

double getDouble(const json& j, const char* key, double fallback) {
    if (!j.contains(key)) return fallback;
    const json& v = j.at(key);
    if (!v.is_number()) fail(key, "must be a number");
    return v.get<double>();
}

std::string getString(const json& j, const char* key, const std::string& fallback) {
    if (!j.contains(key)) return fallback;
    const json& v = j.at(key);
    if (!v.is_string()) fail(key, "must be a string");
    return v.get<std::string>();
}

std::vector<int> intList(const json& v, const std::string& field) {
    if (!v.is_array()) fail(field, "must be an array of integers");
    std::vector<int> out;
    for (const json& e : v) {
        if (!e.is_number_integer()) fail(field, "must contain only integers");
        const int64_t x = e.get<int64_t>();
        if (x < 1 || x > 1000000) fail(field, "contains offset " + std::to_string(x) + " (must be >= 1)");
        out.push_back(static_cast<int>(x));
    }
    return out;
}

std::vector<std::vector<int>> parseOffsets(const json& j, int64_t nLayers) {
    if (!j.contains("offsets")) return std::vector<std::vector<int>>(static_cast<size_t>(nLayers), defaultOffsets());
    const json& o = j.at("offsets");
    if (o.is_array()) // shorthand: the same set for every layer
        return std::vector<std::vector<int>>(static_cast<size_t>(nLayers), intList(o, "offsets"));
    if (!o.is_object()) fail("offsets", "must be an object {\"schedule\": ...} or an array");
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key() != "schedule" && it.key() != "set" && it.key() != "list" && it.key() != "layers")
            fail("offsets." + it.key(), "is not a known key (schedule, set, list, layers)");
    const std::string schedule = getString(o, "schedule", "all");
    std::vector<std::vector<int>> layers;
    if (schedule == "all") {
        const std::vector<int> set = o.contains("set") ? intList(o.at("set"), "offsets.set") : defaultOffsets();
        layers.assign(static_cast<size_t>(nLayers), set);
    } else if (schedule == "per_layer") {
        if (!o.contains("list")) fail("offsets.list", "is required for schedule per_layer");
        const std::vector<int> list = intList(o.at("list"), "offsets.list");
        if (static_cast<int64_t>(list.size()) != nLayers)
            fail("offsets.list",
                 "has " + std::to_string(list.size()) + " entries but n_layers is " + std::to_string(nLayers));
        for (int d : list)
            layers.push_back({d});
    } else if (schedule == "explicit") {
        if (!o.contains("layers") || !o.at("layers").is_array())
            fail("offsets.layers", "is required (array of arrays) for schedule explicit");
        int i = 0;
        for (const json& l : o.at("layers"))
            layers.push_back(intList(l, "offsets.layers[" + std::to_string(i++) + "]"));
    } else {
        fail("offsets.schedule", "must be all, per_layer or explicit (got '" + schedule + "')");
    }
    return layers;
}

} // namespace

std::vector<int> defaultOffsets() {
    return {1, 2, 4, 8, 12, 16};
}

const char* kindName(ModelKind kind) {
    return kind == ModelKind::Grassmann ? "grassmann" : "transformer";
}
const char* normName(NormPlacement norm) {
    switch (norm) {
    case NormPlacement::Post:
        return "post";
    case NormPlacement::Pre:
        return "pre";
    case NormPlacement::PostMix:
        return "post_mix";
    case NormPlacement::PreMix:
        return "pre_mix";
    }
    return "?";
}

const char* aggregationName(Aggregation a) {
    switch (a) {
    case Aggregation::NormalizeThenMean:
        return "normalize_then_mean";
    case Aggregation::MeanThenNormalize:
        return "mean_then_normalize";
    case Aggregation::Mean:
        return "mean";
    case Aggregation::PerOffsetMlp:
        return "per_offset_mlp";
    }
    return "?";
}

NormPlacement normFromName(const std::string& name) {
    for (NormPlacement n : {NormPlacement::Post, NormPlacement::Pre, NormPlacement::PostMix, NormPlacement::PreMix})
        if (name == normName(n)) return n;
    throw std::invalid_argument("norm must be post, pre, post_mix or pre_mix (got '" + name + "')");
}

Aggregation aggregationFromName(const std::string& name) {
    for (Aggregation a :
         {Aggregation::NormalizeThenMean, Aggregation::MeanThenNormalize, Aggregation::Mean, Aggregation::PerOffsetMlp})
        if (name == aggregationName(a)) return a;
    throw std::invalid_argument(
        "aggregation must be normalize_then_mean, mean_then_normalize, mean or per_offset_mlp (got '" + name + "')");
}

bool mixerSeesNormedInput(NormPlacement norm) {
    return norm == NormPlacement::Pre || norm == NormPlacement::PreMix;
}
const char* gateName(GateVariant gate) {
    switch (gate) {
    case GateVariant::Paper:
        return "paper";
    case GateVariant::GeometryOnly:
        return "geometry_only";
    case GateVariant::Residual:
        return "residual";
    }
    return "?";
}
const char* emptyName(EmptyRule empty) {
    return empty == EmptyRule::Zero ? "zero" : "bias";
}
const char* activationName(Activation a) {
    return a == Activation::Gelu ? "gelu" : "gelu_tanh";
}
Activation activationFromName(const std::string& name) {
    if (name == "gelu") return Activation::Gelu;
    if (name == "gelu_tanh") return Activation::GeluTanh;
    throw std::invalid_argument("activation must be \"gelu\" (exact, erf) or \"gelu_tanh\" (got '" + name + "')");
}

void validateConfig(const ModelConfig& c) {
    auto positive = [](int64_t v, const char* f) {
        if (v < 1) fail(f, "must be >= 1 (got " + std::to_string(v) + ")");
    };
    positive(c.vocabSize, "vocab_size");
    positive(c.dModel, "d_model");
    positive(c.nLayers, "n_layers");
    positive(c.dFF, "d_ff");
    positive(c.maxLen, "max_len");
    if (c.layerNormEps <= 0) fail("layer_norm_eps", "must be > 0");
    if (c.dropout < 0 || c.dropout >= 1) fail("dropout", "must be in [0, 1)");
    if (c.mixerLayerNorm && c.norm != NormPlacement::Pre) fail("mixer_layer_norm", "requires norm \"pre\"");
    const bool noSkip = c.norm == NormPlacement::PostMix || c.norm == NormPlacement::PreMix;
    if (noSkip && (c.kind != ModelKind::Grassmann || c.gate != GateVariant::Paper))
        fail("norm", std::string("\"") + normName(c.norm) + "\" exists for Grassmann blocks with the paper gate");
    if (c.aggregation != Aggregation::NormalizeThenMean && c.kind != ModelKind::Grassmann)
        fail("aggregation", "applies to Grassmann models only");
    if (c.kind == ModelKind::Transformer) {
        if (c.stages.any()) fail("mixer_stages", "applies to Grassmann models only");
        if (c.dGeom != 0) fail("d_geom", "applies to Grassmann models only");
        if (c.gate == GateVariant::Residual) fail("gate", "\"residual\" applies to Grassmann models only");
        positive(c.nHeads, "n_heads");
        if (c.dModel % c.nHeads != 0) fail("n_heads", "must divide d_model (" + std::to_string(c.dModel) + ")");
        return;
    }
    const MixerStages& st = c.stages;
    if (!(st.pluckerScale > 0) || !std::isfinite(st.pluckerScale))
        fail("mixer_stages.plucker_scale", "must be a finite number > 0");
    if (st.pluckerScale != 1.0 && c.aggregation != Aggregation::Mean)
        fail("mixer_stages.plucker_scale", "applies to aggregation \"mean\" only (a normalised plane has no scale)");
    if (!(st.mixScale > 0) || !std::isfinite(st.mixScale))
        fail("mixer_stages.mix_scale", "must be a finite number > 0");
    if (st.mixScale != 1.0 && c.gate != GateVariant::Residual)
        fail("mixer_stages.mix_scale", "applies to gate \"residual\" only");
    if (c.gate == GateVariant::Residual && c.norm != NormPlacement::Pre)
        fail("gate", "\"residual\" (x + a g s, added to h) requires norm \"pre\"");
    if (c.aggregation == Aggregation::PerOffsetMlp) {
        if (c.dGeom < 1) fail("d_geom", "must be >= 1 for aggregation \"per_offset_mlp\"");
        if (c.empty == EmptyRule::Bias)
            fail("empty", "\"bias\" (g = b_plu) has no meaning for aggregation \"per_offset_mlp\" (there is no W_plu)");
    } else if (c.dGeom != 0) {
        fail("d_geom", "applies to aggregation \"per_offset_mlp\" only");
    }
    if (c.reduced < 2 || c.reduced > c.dModel)
        fail("reduced", "must be in [2, d_model] (got " + std::to_string(c.reduced) + ")");
    if (c.pluckerEps <= 0) fail("plucker_eps", "must be > 0");
    if (static_cast<int64_t>(c.layerOffsets.size()) != c.nLayers)
        fail("offsets", "has " + std::to_string(c.layerOffsets.size()) + " layer sets but n_layers is " +
                            std::to_string(c.nLayers));
    for (size_t l = 0; l < c.layerOffsets.size(); ++l) {
        const auto& set = c.layerOffsets[l];
        const std::string f = "offsets (layer " + std::to_string(l) + ")";
        if (set.empty()) fail(f, "is empty");
        for (size_t i = 0; i < set.size(); ++i) {
            if (set[i] < 1) fail(f, "contains " + std::to_string(set[i]) + " (offsets must be >= 1)");
            if (i > 0 && set[i] <= set[i - 1]) fail(f, "must be strictly ascending without repeats");
        }
    }
}

namespace {
/// "mixer_stages": {"reduction_norm", "plucker_scale", "feature_norm", "gate_input" ("x" or
/// "x_and_g"), "mix_scale", "output_projection"}, each optional (absent: the paper's step).
MixerStages parseStages(const json& j) {
    if (!j.is_object()) fail("mixer_stages", "must be a JSON object");
    static const std::set<std::string> known = {"reduction_norm", "plucker_scale",     "feature_norm", "gate_input",
                                                "mix_scale",      "output_projection", "wedge_order"};
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!known.count(it.key())) fail("mixer_stages." + it.key(), "is not a known mixer stage");
    MixerStages st;
    auto flag = [&](const char* key, bool& out) {
        if (!j.contains(key)) return;
        if (!j.at(key).is_boolean()) fail(std::string("mixer_stages.") + key, "must be true or false");
        out = j.at(key).get<bool>();
    };
    auto number = [&](const char* key, double& out) {
        if (!j.contains(key)) return;
        if (!j.at(key).is_number()) fail(std::string("mixer_stages.") + key, "must be a number");
        out = j.at(key).get<double>();
    };
    flag("reduction_norm", st.reductionNorm);
    flag("feature_norm", st.featureNorm);
    flag("output_projection", st.outputProjection);
    number("plucker_scale", st.pluckerScale);
    number("mix_scale", st.mixScale);
    if (j.contains("gate_input")) {
        const json& g = j.at("gate_input");
        if (!g.is_string() || (g.get<std::string>() != "x" && g.get<std::string>() != "x_and_g"))
            fail("mixer_stages.gate_input", "must be \"x\" or \"x_and_g\"");
        st.gateFromInput = g.get<std::string>() == "x";
    }
    if (j.contains("wedge_order")) {
        const json& w = j.at("wedge_order");
        if (!w.is_string() || (w.get<std::string>() != "current_past" && w.get<std::string>() != "past_current"))
            fail("mixer_stages.wedge_order", "must be \"current_past\" (z_t ^ z_{t-D}) or \"past_current\"");
        st.wedgePastFirst = w.get<std::string>() == "past_current";
    }
    return st;
}
} // namespace

ModelConfig configFromJson(const std::string& text) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) { // parse_error, and out_of_range for a number like 1e999
        throw std::invalid_argument(std::string("model config: invalid JSON: ") + e.what());
    }
    if (!j.is_object()) throw std::invalid_argument("model config: top level must be a JSON object");
    static const std::set<std::string> known = {"kind",         "name",           "vocab_size", "d_model",
                                                "reduced",      "n_layers",       "d_ff",       "max_len",
                                                "n_heads",      "norm",           "gate",       "empty",
                                                "plucker_eps",  "layer_norm_eps", "dropout",    "mixer_layer_norm",
                                                "offsets",      "comment",        "family",     "aggregation",
                                                "mixer_stages", "d_geom",         "activation"};
    for (auto it = j.begin(); it != j.end(); ++it)
        if (!known.count(it.key())) fail(it.key(), "is not a known config field");

    ModelConfig c;
    const std::string kind = getString(j, "kind", "");
    if (kind == "grassmann")
        c.kind = ModelKind::Grassmann;
    else if (kind == "transformer")
        c.kind = ModelKind::Transformer;
    else
        fail("kind", "must be \"grassmann\" or \"transformer\" (got '" + kind + "')");
    c.name = getString(j, "name", "");
    c.family = getString(j, "family", ""); // absent in files written before import kept it
    c.vocabSize = getInt(j, "vocab_size", c.vocabSize);
    c.dModel = getInt(j, "d_model", c.dModel);
    c.reduced = getInt(j, "reduced", c.reduced);
    c.nLayers = getInt(j, "n_layers", c.nLayers);
    c.dFF = getInt(j, "d_ff", 4 * c.dModel);
    c.maxLen = getInt(j, "max_len", c.maxLen);
    c.nHeads = getInt(j, "n_heads", c.nHeads);
    const std::string norm = getString(j, "norm", "post");
    try {
        c.norm = normFromName(norm);
    } catch (const std::invalid_argument&) {
        fail("norm", "must be \"post\", \"pre\", \"post_mix\" or \"pre_mix\" (got '" + norm + "')");
    }
    const std::string aggregation = getString(j, "aggregation", "normalize_then_mean");
    try {
        c.aggregation = aggregationFromName(aggregation);
    } catch (const std::invalid_argument&) {
        fail("aggregation", "must be \"normalize_then_mean\", \"mean_then_normalize\", \"mean\" or "
                            "\"per_offset_mlp\" (got '" +
                                aggregation + "')");
    }
    c.dGeom = getInt(j, "d_geom", 0);
    const std::string gate = getString(j, "gate", "paper");
    if (gate == "paper")
        c.gate = GateVariant::Paper;
    else if (gate == "geometry_only")
        c.gate = GateVariant::GeometryOnly;
    else if (gate == "residual")
        c.gate = GateVariant::Residual;
    else
        fail("gate", "must be \"paper\", \"geometry_only\" or \"residual\" (got '" + gate + "')");
    if (j.contains("mixer_stages")) c.stages = parseStages(j.at("mixer_stages"));
    const std::string empty = getString(j, "empty", "zero");
    if (empty == "zero")
        c.empty = EmptyRule::Zero;
    else if (empty == "bias")
        c.empty = EmptyRule::Bias;
    else
        fail("empty", "must be \"zero\" or \"bias\" (got '" + empty + "')");
    c.pluckerEps = getDouble(j, "plucker_eps", c.pluckerEps);
    c.layerNormEps = getDouble(j, "layer_norm_eps", c.layerNormEps);
    c.dropout = getDouble(j, "dropout", c.dropout);
    const std::string activation = getString(j, "activation", "gelu"); // absent before 2026-11-28: exact GELU
    try {
        c.activation = activationFromName(activation);
    } catch (const std::invalid_argument&) {
        fail("activation", std::string("must be \"gelu\" or \"gelu_tanh\" (got '") + activation + "')");
    }
    if (j.contains("mixer_layer_norm")) {
        if (!j.at("mixer_layer_norm").is_boolean()) fail("mixer_layer_norm", "must be true or false");
        c.mixerLayerNorm = j.at("mixer_layer_norm").get<bool>();
    }
    if (c.nLayers < 1 || c.nLayers > 4096) fail("n_layers", "must be in [1, 4096]");
    if (c.kind == ModelKind::Grassmann)
        c.layerOffsets = parseOffsets(j, c.nLayers);
    else if (j.contains("offsets"))
        fail("offsets", "is only allowed for kind grassmann");
    validateConfig(c);
    return c;
}

ModelConfig loadConfigFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open config file " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return configFromJson(ss.str());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(path + ": " + e.what());
    }
}

std::string configToJson(const ModelConfig& c, int indent) {
    json j = json::object();
    j["kind"] = kindName(c.kind);
    j["name"] = c.name;
    if (!c.family.empty()) j["family"] = c.family;
    j["vocab_size"] = c.vocabSize;
    j["d_model"] = c.dModel;
    j["n_layers"] = c.nLayers;
    j["d_ff"] = c.dFF;
    j["max_len"] = c.maxLen;
    j["norm"] = normName(c.norm);
    j["dropout"] = c.dropout;
    j["layer_norm_eps"] = c.layerNormEps;
    j["mixer_layer_norm"] = c.mixerLayerNorm;
    // Written only when not the default, so files of exact-GELU models stay as they were.
    if (c.activation != Activation::Gelu) j["activation"] = activationName(c.activation);
    if (c.kind == ModelKind::Transformer) {
        j["n_heads"] = c.nHeads;
    } else {
        j["reduced"] = c.reduced;
        j["gate"] = gateName(c.gate);
        j["empty"] = emptyName(c.empty);
        j["plucker_eps"] = c.pluckerEps;
        // Written only when not the default, so files of the paper's models stay as they were.
        if (c.aggregation != Aggregation::NormalizeThenMean) j["aggregation"] = aggregationName(c.aggregation);
        if (c.aggregation == Aggregation::PerOffsetMlp) j["d_geom"] = c.dGeom;
        if (c.stages.any()) {
            const MixerStages& st = c.stages;
            j["mixer_stages"] = {{"reduction_norm", st.reductionNorm},
                                 {"plucker_scale", st.pluckerScale},
                                 {"feature_norm", st.featureNorm},
                                 {"gate_input", st.gateFromInput ? "x" : "x_and_g"},
                                 {"mix_scale", st.mixScale},
                                 {"output_projection", st.outputProjection},
                                 {"wedge_order", st.wedgePastFirst ? "past_current" : "current_past"}};
        }
        j["offsets"] = {{"schedule", "explicit"}, {"layers", c.layerOffsets}};
    }
    return j.dump(indent);
}

std::vector<ParameterSpec> parameterSpecs(const ModelConfig& c) {
    const int64_t d = c.dModel, r = c.reduced, f = c.dFF;
    std::vector<ParameterSpec> s;
    s.push_back({"tok_embed.weight", {c.vocabSize, d}});
    s.push_back({"pos_embed.weight", {c.maxLen, d}});
    for (int64_t i = 0; i < c.nLayers; ++i) {
        const std::string p = "blocks." + std::to_string(i) + ".";
        auto linear = [&](const std::string& n, int64_t out, int64_t in) {
            s.push_back({p + n + ".weight", {out, in}});
            s.push_back({p + n + ".bias", {out}});
        };
        auto norm = [&](const std::string& n) {
            s.push_back({p + n + ".weight", {d}});
            s.push_back({p + n + ".bias", {d}});
        };
        norm("ln1");
        if (c.kind == ModelKind::Grassmann) {
            linear("w_red", r, d);
            if (c.stages.reductionNorm) {
                s.push_back({p + "ln_red.weight", {r}});
                s.push_back({p + "ln_red.bias", {r}});
            }
            if (c.aggregation == Aggregation::PerOffsetMlp) {
                linear("geo_in", c.dGeom, r * (r - 1) / 2);
                linear("geo_out", d, c.dGeom);
            } else {
                linear("w_plu", d, r * (r - 1) / 2);
            }
            if (c.stages.featureNorm) norm("ln_geo");
            linear("w_gate", d, c.stages.gateFromInput ? d : 2 * d);
            if (c.stages.outputProjection) linear("w_out", d, d);
        } else {
            linear("qkv", 3 * d, d);
            linear("out_proj", d, d);
        }
        if (c.mixerLayerNorm) norm("ln_mix");
        norm("ln2");
        linear("ffn_in", f, d);
        linear("ffn_out", d, f);
    }
    s.push_back({"ln_final.weight", {d}});
    s.push_back({"ln_final.bias", {d}});
    return s;
}

ParameterCounts countParameters(const ModelConfig& c) {
    ParameterCounts counts;
    counts.perBlock.assign(static_cast<size_t>(c.nLayers), 0);
    for (const ParameterSpec& p : parameterSpecs(c)) {
        int64_t n = 1;
        for (int64_t e : p.shape)
            n *= e;
        if (p.name.rfind("blocks.", 0) == 0) {
            const size_t dot = p.name.find('.', 7);
            counts.perBlock[static_cast<size_t>(std::stoll(p.name.substr(7, dot - 7)))] += n;
        } else if (p.name.rfind("ln_final.", 0) == 0) {
            counts.finalNorm += n;
        } else {
            counts.embeddings += n;
        }
        counts.total += n;
    }
    return counts;
}

} // namespace gwb::engine
