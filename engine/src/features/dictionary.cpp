// A dictionary's weights, encode / decode, and its two files in SAELens's layout:
// sae_weights.safetensors (W_enc d_in x d_sae, W_dec d_sae x d_in, b_enc, b_dec; float32) and
// cfg.json (SAELens's field names, gwb's own under "gwb").

#include "features/feature_util.h"

#include "formats/file_util.h"
#include "model/model_impl.h"
#include "gwb/engine/checkpoint.h"
#include "gwb/engine/hooks.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace gwb::engine {
namespace features {

FloatArray toArray(const torch::Tensor& t) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
    FloatArray a;
    a.shape.assign(c.sizes().begin(), c.sizes().end());
    a.data.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    return a;
}

torch::Tensor toTensor(const FloatArray& a, const torch::Device& device) {
    return torch::from_blob(const_cast<float*>(a.data.data()), a.shape, torch::kFloat).clone().to(device);
}

torch::Tensor activate(const torch::Tensor& pre, const std::string& architecture, int64_t k) {
    const torch::Tensor relu = torch::relu(pre);
    if (architecture != "topk" || k >= pre.size(-1)) return relu;
    const auto [values, indices] = relu.topk(k, -1);
    return torch::zeros_like(relu).scatter(-1, indices, values);
}

torch::Tensor encodeRows(const Dictionary& d, const torch::Tensor& rows) {
    const bool subtract = !d.config.transcoder() && d.config.applyBDecToInput;
    const torch::Tensor in = subtract ? rows - toTensor(d.bDec) : rows;
    return activate(in.matmul(toTensor(d.wEnc)) + toTensor(d.bEnc), d.config.architecture, d.config.k);
}

int64_t offsetOfSite(const std::string& site) {
    if (site.rfind("offset.", 0) != 0) return 0;
    return std::stoll(site.substr(site.rfind('.') + 1));
}

} // namespace features

namespace {

constexpr const char* kWeightsFile = "sae_weights.safetensors";
constexpr const char* kConfigFile = "cfg.json";
/// The SAELens cfg.json layout written (metadata.sae_lens_version): 6.x, where SAELens's loader
/// reads the file as it is, without its pre-6.0 conversion.
constexpr const char* kSaeLensLayout = "6.0.0";

void checkShapes(const Dictionary& d, const std::string& what) {
    const int64_t n = d.config.dIn, m = d.config.dSae, o = d.config.outWidth();
    auto expect = [&](const FloatArray& a, std::vector<int64_t> shape, const char* name) {
        if (a.shape != shape)
            throw std::runtime_error(what + ": " + name + " has shape " + shapeText(a.shape) + ", expected " +
                                     shapeText(shape) + " (d_in " + std::to_string(n) + ", d_sae " + std::to_string(m) +
                                     ")");
    };
    expect(d.wEnc, {n, m}, "W_enc");
    expect(d.bEnc, {m}, "b_enc");
    expect(d.wDec, {m, o}, "W_dec");
    expect(d.bDec, {o}, "b_dec");
}

} // namespace

FloatArray Dictionary::encode(const FloatArray& x) const {
    torch::NoGradGuard noGrad;
    if (x.rank() != 2 || x.dim(1) != config.dIn)
        throw std::invalid_argument("encode: activations of shape " + shapeText(x.shape) + ", expected rows x " +
                                    std::to_string(config.dIn));
    return features::toArray(features::encodeRows(*this, features::toTensor(x)));
}

FloatArray Dictionary::decode(const FloatArray& z) const {
    torch::NoGradGuard noGrad;
    if (z.rank() != 2 || z.dim(1) != config.dSae)
        throw std::invalid_argument("decode: activations of shape " + shapeText(z.shape) + ", expected rows x " +
                                    std::to_string(config.dSae));
    return features::toArray(features::toTensor(z).matmul(features::toTensor(wDec)) + features::toTensor(bDec));
}

std::string Dictionary::featureName(int64_t index) const {
    return "feature." + config.site + "." + std::to_string(index);
}

void saveDictionary(const Dictionary& d, const std::string& dir) {
    checkShapes(d, dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw std::runtime_error("cannot create folder '" + dir + "': " + ec.message());
    SafetensorsFile file;
    file.tensors["W_enc"] = makeStoredTensor(d.wEnc.shape, d.wEnc.data.data(), "F32");
    file.tensors["b_enc"] = makeStoredTensor(d.bEnc.shape, d.bEnc.data.data(), "F32");
    file.tensors["W_dec"] = makeStoredTensor(d.wDec.shape, d.wDec.data.data(), "F32");
    file.tensors["b_dec"] = makeStoredTensor(d.bDec.shape, d.bDec.data.data(), "F32");
    file.metadata["format"] = "pt";
    writeSafetensors((std::filesystem::path(dir) / kWeightsFile).string(), file);

    const DictionaryConfig& c = d.config;
    // SAELens 6.x's layout (SAEConfig.to_dict): the architecture's fields at the top, where the
    // model and site are in "metadata"; our own record under "gwb" (SAELens ignores other keys).
    // SAELens 6.x has "standard", "topk" and (ReLU) "transcoder" but no TopK transcoder: that one
    // is written as "topk" with d_out, which SAELens opens as a TopK SAE, the same encoder and
    // decoder only while d_out = d_in ("gwb.saelens" says so in the file).
    const bool topk = c.architecture == "topk";
    nlohmann::ordered_json j;
    j["architecture"] = c.transcoder() && !topk ? "transcoder" : topk ? "topk" : "standard";
    j["d_in"] = c.dIn;
    j["d_sae"] = c.dSae;
    if (c.transcoder()) j["d_out"] = c.dOut;
    if (topk) {
        j["k"] = c.k;
        j["rescale_acts_by_decoder_norm"] = false;
    }
    j["dtype"] = "float32";
    j["device"] = "cpu";
    j["apply_b_dec_to_input"] = !c.transcoder() && c.applyBDecToInput;
    j["normalize_activations"] = "none"; // the training scale is folded into the weights
    j["reshape_activations"] = "none";
    nlohmann::ordered_json meta;
    meta["sae_lens_version"] = kSaeLensLayout;
    meta["sae_lens_training_version"] = nullptr;
    meta["model_name"] = c.modelName;
    meta["hook_name"] = c.site;
    meta["hook_head_index"] = nullptr;
    if (c.transcoder()) meta["hook_name_out"] = c.targetSite;
    meta["context_size"] = c.contextSize;
    meta["prepend_bos"] = false;
    meta["dataset_path"] = c.corpus.empty() ? "" : c.corpus.front();
    meta["trained_by"] = "gwb";
    j["metadata"] = meta;
    j["gwb"] = {{"format", "gwb-dictionary"},
                {"version", 2},
                {"site", c.site},
                {"architecture", c.architecture},
                {"model_hash", c.modelHash},
                {"l1_coefficient", c.l1},
                {"scaling_folded", c.scaling},
                {"corpus", c.corpus},
                {"trained_tokens", c.trainedTokens},
                {"seed", c.seed}};
    if (c.transcoder() && topk)
        j["gwb"]["saelens"] = "SAELens 6.x has no TopK transcoder: it opens this file as a TopK SAE, which encodes "
                              "and decodes as this transcoder only while d_out equals d_in";
    if (c.crosscoder())
        j["gwb"]["crosscoder"] = {{"second_site", c.secondSite},
                                  {"second_model_name", c.secondModelName},
                                  {"second_model_hash", c.secondModelHash},
                                  {"first_width", c.firstWidth},
                                  {"block_scaling", c.blockScaling},
                                  {"layout", "x = [first model's site, second model's site] along d_in"}};
    writeFileAtomic((std::filesystem::path(dir) / kConfigFile).string(), j.dump(2) + "\n");
}

Dictionary loadDictionary(const std::string& dir) {
    const std::string cfgPath = (std::filesystem::path(dir) / kConfigFile).string();
    const std::string weightsPath = (std::filesystem::path(dir) / kWeightsFile).string();
    if (!std::filesystem::is_directory(dir) || !std::filesystem::exists(cfgPath))
        throw std::runtime_error("'" + dir + "' is not a dictionary folder (it should hold " + kConfigFile + " and " +
                                 kWeightsFile + ", as gwb features train writes them)");
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(readFileBytes(cfgPath));
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(cfgPath + ": not valid JSON (" + e.what() + ")");
    }
    Dictionary d;
    DictionaryConfig& c = d.config;
    bool rescaleByDecoderNorm = false;
    try {
        // SAELens 6.x keeps the model and site under "metadata"; 5.x's flat layout (gwb's own
        // files before gwb-dictionary version 2) has them at the top: either is read.
        const bool v6 = j.contains("metadata") && j["metadata"].is_object();
        const nlohmann::json& meta = v6 ? j["metadata"] : j;
        auto field = [&](const char* key) -> const nlohmann::json* {
            if (meta.contains(key) && !meta[key].is_null()) return &meta[key];
            if (j.contains(key) && !j[key].is_null()) return &j[key];
            return nullptr;
        };
        c.dIn = j.at("d_in").get<int64_t>();
        c.dSae = j.at("d_sae").get<int64_t>();
        const nlohmann::json* hook = field("hook_name");
        if (!hook) hook = field("hook_point"); // SAELens before 1.0
        if (!hook) throw std::runtime_error("no hook_name (the site the dictionary reads)");
        c.site = hook->get<std::string>();
        if (const nlohmann::json* head = field("hook_head_index"))
            throw std::runtime_error("hook_head_index " + head->dump() +
                                     " (one head of a site) is not read by gwb: name the head's own site, head.L.H");
        const std::string arch = j.value("architecture", std::string("standard"));
        std::string fn = j.contains("activation_fn") ? j["activation_fn"].get<std::string>()
                                                      : j.value("activation_fn_str", std::string());
        if (arch == "topk") fn = "topk";
        else if (arch == "standard" || arch == "transcoder") fn = fn.empty() ? "relu" : fn;
        else
            throw std::runtime_error("architecture '" + arch +
                                     "' is not one gwb reads (standard, topk and transcoder, as SAELens names them)");
        if (fn != "topk" && fn != "relu")
            throw std::runtime_error("activation '" + fn + "' is not one gwb reads (topk, relu)");
        c.architecture = fn;
        if (fn == "topk")
            c.k = j.contains("activation_fn_kwargs") && j["activation_fn_kwargs"].contains("k")
                      ? j["activation_fn_kwargs"]["k"].get<int64_t>()
                      : j.at("k").get<int64_t>();
        // SAELens's TopK trainer's default: pre-activations times ||W_dec[f]|| pick the top k, and
        // z / ||W_dec[f]|| is decoded. Folded into the weights below (W_enc, b_enc times the norm,
        // W_dec over it): the same z and x^ in gwb's plain TopK.
        rescaleByDecoderNorm = fn == "topk" && j.value("rescale_acts_by_decoder_norm", false);
        const std::string norm =
            j.contains("normalize_activations") && j["normalize_activations"].is_string()
                ? j["normalize_activations"].get<std::string>()
                : (j.value("normalize_activations", false) ? "expected_average_only_in" : "none");
        if (norm != "none")
            throw std::runtime_error("normalize_activations is '" + norm +
                                     "': gwb reads dictionaries in raw units (fold the scaling into the weights, "
                                     "as SAELens's fold_activation_norm_scaling_factor does, and save again)");
        if (j.value("reshape_activations", std::string("none")) != "none")
            throw std::runtime_error("reshape_activations is '" + j["reshape_activations"].get<std::string>() +
                                     "': gwb reads a site's values as they are");
        if (const nlohmann::json* out = field("hook_name_out")) {
            c.targetSite = out->get<std::string>();
            c.dOut = j.at("d_out").get<int64_t>();
        } else if (arch == "transcoder") {
            throw std::runtime_error("a transcoder whose metadata names no hook_name_out (the site it rebuilds)");
        }
        c.applyBDecToInput = !c.transcoder() && j.value("apply_b_dec_to_input", true);
        if (const nlohmann::json* name = field("model_name")) c.modelName = name->get<std::string>();
        if (const nlohmann::json* ctx = field("context_size")) c.contextSize = ctx->get<int64_t>();
        if (j.contains("gwb")) {
            const auto& g = j["gwb"];
            c.modelHash = g.value("model_hash", "");
            c.l1 = g.value("l1_coefficient", 0.0);
            c.scaling = g.value("scaling_folded", 1.0);
            c.corpus = g.value("corpus", std::vector<std::string>{});
            c.trainedTokens = g.value("trained_tokens", int64_t{0});
            c.seed = g.value("seed", uint64_t{0});
            if (g.contains("crosscoder")) {
                const auto& x = g["crosscoder"];
                c.secondSite = x.at("second_site").get<std::string>();
                c.secondModelName = x.value("second_model_name", "");
                c.secondModelHash = x.value("second_model_hash", "");
                c.firstWidth = x.at("first_width").get<int64_t>();
                c.blockScaling = x.value("block_scaling", std::vector<double>{});
                if (c.secondSite.empty() || c.firstWidth < 1 || c.firstWidth >= c.dIn)
                    throw std::runtime_error("the crosscoder's second site or first width (" +
                                             std::to_string(c.firstWidth) + " of d_in " + std::to_string(c.dIn) +
                                             ") is not valid");
            }
        }
    } catch (const nlohmann::json::exception& e) {
        throw std::runtime_error(cfgPath + ": " + e.what());
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(cfgPath + ": " + e.what());
    }
    if (c.dIn < 1 || c.dSae < 1) throw std::runtime_error(cfgPath + ": d_in and d_sae must be positive");
    if (c.architecture == "topk" && (c.k < 1 || c.k > c.dSae))
        throw std::runtime_error(cfgPath + ": k = " + std::to_string(c.k) + " is outside 1.." + std::to_string(c.dSae));
    const SafetensorsFile file = readSafetensors(weightsPath);
    auto tensor = [&](const char* name) {
        const auto it = file.tensors.find(name);
        if (it == file.tensors.end()) throw std::runtime_error(weightsPath + ": no tensor " + name);
        return it->second.toArray();
    };
    d.wEnc = tensor("W_enc");
    d.bEnc = tensor("b_enc");
    d.wDec = tensor("W_dec");
    d.bDec = tensor("b_dec");
    checkShapes(d, weightsPath);
    if (rescaleByDecoderNorm) {
        const int64_t m = c.dSae, o = c.outWidth();
        for (int64_t f = 0; f < m; ++f) {
            double sq = 0;
            for (int64_t i = 0; i < o; ++i) sq += static_cast<double>(d.wDec.data[f * o + i]) * d.wDec.data[f * o + i];
            const double norm = std::sqrt(sq);
            if (!(norm > 0)) throw std::runtime_error(weightsPath + ": decoder row " + std::to_string(f) +
                                                      " has norm 0, so rescale_acts_by_decoder_norm is undefined");
            for (int64_t i = 0; i < o; ++i) d.wDec.data[f * o + i] = static_cast<float>(d.wDec.data[f * o + i] / norm);
            for (int64_t i = 0; i < c.dIn; ++i)
                d.wEnc.data[i * m + f] = static_cast<float>(d.wEnc.data[i * m + f] * norm);
            d.bEnc.data[f] = static_cast<float>(d.bEnc.data[f] * norm);
        }
    }
    return d;
}

std::string modelWeightsHash(const Model& model) {
    Model::Impl& impl = model.impl();
    std::vector<std::pair<const void*, int64_t>> stamp;
    for (const auto& item : impl.net->named_parameters()) {
        const torch::Tensor& t = item.value();
        stamp.emplace_back(t.data_ptr(), t.is_inference() ? 0 : static_cast<int64_t>(t._version()));
    }
    {
        const std::lock_guard<std::mutex> lock(impl.hashMutex);
        if (!impl.weightsHash.empty() && impl.hashStamp == stamp) return impl.weightsHash;
    }
    uint64_t h = 1469598103934665603ull;
    for (const auto& [name, a] : model.parameters()) {
        h = fnv1a64(name, h);
        h = fnv1a64(shapeText(a.shape), h);
        h = fnv1a64(std::string_view(reinterpret_cast<const char*>(a.data.data()), a.data.size() * sizeof(float)), h);
    }
    const std::lock_guard<std::mutex> lock(impl.hashMutex);
    impl.weightsHash = hex64(h);
    impl.hashStamp = std::move(stamp);
    return impl.weightsHash;
}

namespace {
void checkFits(const std::string& site, int64_t width, const std::string& name, const std::string& hash,
               const Model& model) {
    std::vector<int64_t> shape;
    try {
        shape = hookSiteShape(model, site, 16);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("the dictionary reads site '" + site + "', which model '" + model.displayName() +
                                    "' lacks: " + e.what());
    }
    if (shape.back() != width)
        throw std::invalid_argument("the dictionary reads " + std::to_string(width) + " values at '" + site +
                                    "', model '" + model.displayName() + "' has " + std::to_string(shape.back()) +
                                    " there");
    if (!hash.empty() && hash != modelWeightsHash(model))
        throw std::invalid_argument("the dictionary was trained on model '" + name + "' (weights " + hash +
                                    "), not on '" + model.displayName() + "' (weights " + modelWeightsHash(model) +
                                    ")");
}
} // namespace

void checkDictionaryFits(const Dictionary& d, const Model& model, const Model* second) {
    const DictionaryConfig& c = d.config;
    if (!c.crosscoder()) {
        checkFits(c.site, c.dIn, c.modelName, c.modelHash, model);
        if (c.transcoder()) checkFits(c.targetSite, c.dOut, c.modelName, "", model);
        return;
    }
    if (!second)
        throw std::invalid_argument("the dictionary is a crosscoder of two models ('" + c.modelName + "' and '" +
                                    c.secondModelName + "'): give the second model too");
    checkFits(c.site, c.firstWidth, c.modelName, c.modelHash, model);
    checkFits(c.secondSite, c.dIn - c.firstWidth, c.secondModelName, c.secondModelHash, *second);
}

std::vector<double> relativeDecoderNorms(const Dictionary& d) {
    const DictionaryConfig& c = d.config;
    if (!c.crosscoder())
        throw std::invalid_argument("relative decoder norms are a crosscoder's; this dictionary reads one model");
    const double s1 = c.blockScaling.size() == 2 ? c.blockScaling[0] : 1.0;
    const double s2 = c.blockScaling.size() == 2 ? c.blockScaling[1] : 1.0;
    std::vector<double> out(static_cast<size_t>(c.dSae));
    for (int64_t f = 0; f < c.dSae; ++f) {
        const float* w = d.wDec.row(f);
        double n1 = 0, n2 = 0;
        for (int64_t i = 0; i < c.dIn; ++i)
            (i < c.firstWidth ? n1 : n2) += static_cast<double>(w[i]) * w[i];
        n1 = std::sqrt(n1) * s1; // file units back to training units: W_dec was divided by s
        n2 = std::sqrt(n2) * s2;
        out[static_cast<size_t>(f)] = n1 + n2 > 0 ? n2 / (n1 + n2) : std::nan("");
    }
    return out;
}

std::string relativeNormKind(double r) {
    if (!(r == r)) return "undefined";
    return r < 0.3 ? "first" : r > 0.7 ? "second" : "shared";
}

} // namespace gwb::engine
