// A dictionary's weights, encode / decode, and its two files in SAELens's layout:
// sae_weights.safetensors (W_enc d_in x d_sae, W_dec d_sae x d_in, b_enc, b_dec; float32) and
// cfg.json (SAELens's field names, gwb's own under "gwb").

#include "features/dictionary_config.h"
#include "features/feature_util.h"

#include "formats/file_util.h"
#include "model/model_impl.h"
#include "gwb/engine/checkpoint.h"
#include "gwb/engine/file_error.h"
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
    if (ec) throw FileError(dir, ec.value(), "cannot create folder '" + dir + "': " + ec.message());
    SafetensorsFile file;
    file.tensors["W_enc"] = makeStoredTensor(d.wEnc.shape, d.wEnc.data.data(), "F32");
    file.tensors["b_enc"] = makeStoredTensor(d.bEnc.shape, d.bEnc.data.data(), "F32");
    file.tensors["W_dec"] = makeStoredTensor(d.wDec.shape, d.wDec.data.data(), "F32");
    file.tensors["b_dec"] = makeStoredTensor(d.bDec.shape, d.bDec.data.data(), "F32");
    file.metadata["format"] = "pt";
    writeSafetensors((std::filesystem::path(dir) / kWeightsFile).string(), file);

    writeFileAtomic((std::filesystem::path(dir) / kConfigFile).string(), dictionaryConfigJson(d.config, dir));
}

Dictionary loadDictionary(const std::string& dir) {
    const std::string cfgPath = (std::filesystem::path(dir) / kConfigFile).string();
    const std::string weightsPath = (std::filesystem::path(dir) / kWeightsFile).string();
    if (!std::filesystem::is_directory(dir) || !std::filesystem::exists(cfgPath))
        throw std::runtime_error("'" + dir + "' is not a dictionary folder (it should hold " + kConfigFile + " and " +
                                 kWeightsFile + ", as gwb features train writes them)");
    Dictionary d;
    bool rescaleByDecoderNorm = false;
    try {
        d.config = dictionaryConfigFromJson(readFileBytes(cfgPath), &rescaleByDecoderNorm, dir);
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(cfgPath + ": " + e.what());
    }
    const DictionaryConfig& c = d.config;
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
            for (int64_t i = 0; i < o; ++i)
                sq += static_cast<double>(d.wDec.data[f * o + i]) * d.wDec.data[f * o + i];
            const double norm = std::sqrt(sq);
            if (!(norm > 0))
                throw std::runtime_error(weightsPath + ": decoder row " + std::to_string(f) +
                                         " has norm 0, so rescale_acts_by_decoder_norm is undefined");
            for (int64_t i = 0; i < o; ++i)
                d.wDec.data[f * o + i] = static_cast<float>(d.wDec.data[f * o + i] / norm);
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
