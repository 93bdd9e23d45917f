// Model handle: init, load (with checks), save, parameter access and summaries.

#include "model/model_impl.h"

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/device.h"
#include "formats/mapped_file.h"

#include <nlohmann/json.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {

namespace {

constexpr const char* kTokenizerTensor = "tokenizer.model";

/// Keeps freed large blocks in the heap instead of handing them back to the kernel. glibc serves
/// blocks over 128 KiB with fresh mmap() pages and trims the heap top beyond 128 KiB; every trace
/// allocates and frees tens of MB of T x d captures, chunk buffers and copies, so each one paid
/// again for every page (a page fault, far dearer in a virtual machine). That was half of a
/// 128-token trace (77 ms -> 29 ms; docs/performance.md). The cost: up to kTrim bytes of freed
/// memory stay with the process until it exits.
void keepFreedMemory() {
#if defined(__GLIBC__)
    constexpr int kMmap = 32 << 20; // the largest value glibc accepts; bigger blocks are still mmap()ed
    constexpr int kTrim = 512 << 20;
    mallopt(M_MMAP_THRESHOLD, kMmap);
    mallopt(M_TRIM_THRESHOLD, kTrim);
#endif
}

std::shared_ptr<Model::Impl> makeImpl(const ModelConfig& config, TokenizerPtr tokenizer, const std::string& device,
                                      bool initialize = true) {
    static std::once_flag allocator; // process-wide, once the engine holds its first model
    std::call_once(allocator, keepFreedMemory);
    detail::useDefaultThreads(); // fast by default: every core, one BLAS pool (device.h)
    validateConfig(config);
    if (tokenizer && tokenizer->vocabSize() != config.vocabSize)
        throw std::invalid_argument("tokenizer has " + std::to_string(tokenizer->vocabSize()) +
                                    " pieces but the model config has vocab_size " + std::to_string(config.vocabSize));
    auto impl = std::make_shared<Model::Impl>();
    impl->config = config;
    impl->tokenizer = std::move(tokenizer);
    impl->device = torch::Device(resolveDevice(device));
    impl->net = std::make_shared<LanguageModelImpl>(config, initialize);
    impl->net->to(impl->device);
    impl->net->eval();
    return impl;
}

std::string kindTitle(ModelKind k) {
    return k == ModelKind::Grassmann ? "Grassmann" : "Transformer";
}

} // namespace

Model::Model() = default;
Model::~Model() = default;
Model::Model(const Model&) = default;
Model& Model::operator=(const Model&) = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::Model(std::shared_ptr<Impl> impl) : m_impl(std::move(impl)) {}

Model::Impl& Model::impl() const {
    if (!m_impl) throw std::logic_error("empty Model handle used");
    return *m_impl;
}

Model Model::init(const ModelConfig& config, uint64_t seed, TokenizerPtr tokenizer, const std::string& device) {
    torch::manual_seed(seed);
    // Initialize on the CPU so that a seed gives the same weights on every device.
    auto impl = makeImpl(config, std::move(tokenizer), "cpu");
    impl->net->resetParameters();
    impl->device = torch::Device(resolveDevice(device));
    impl->net->to(impl->device);
    return Model(impl);
}

Model Model::fromParameters(const ModelConfig& config, const std::map<std::string, FloatArray>& parameters,
                            TokenizerPtr tokenizer, const std::string& device) {
    // Every parameter is overwritten below (or the call throws): no random initialisation.
    auto impl = makeImpl(config, std::move(tokenizer), "cpu", /*initialize=*/false);
    const auto specs = parameterSpecs(config);
    std::set<std::string> expected;
    for (const auto& s : specs)
        expected.insert(s.name);
    for (const auto& [name, a] : parameters)
        if (!expected.count(name)) throw std::invalid_argument("unexpected parameter '" + name + "'");
    auto params = impl->net->named_parameters();
    torch::NoGradGuard noGrad;
    for (const auto& s : specs) {
        const auto it = parameters.find(s.name);
        if (it == parameters.end()) throw std::invalid_argument("missing parameter '" + s.name + "'");
        if (it->second.shape != s.shape)
            throw std::invalid_argument("parameter '" + s.name + "' has shape " + shapeText(it->second.shape) +
                                        ", the config needs " + shapeText(s.shape));
        torch::Tensor* p = params.find(s.name);
        if (!p) throw std::logic_error("model has no parameter " + s.name);
        p->copy_(torch::from_blob(const_cast<float*>(it->second.data.data()), s.shape, torch::kFloat));
    }
    impl->device = torch::Device(resolveDevice(device));
    impl->net->to(impl->device);
    return Model(impl);
}

Model Model::load(const std::string& path, const std::string& device, std::optional<ModelKind> expectedKind) {
    // The file is memory-mapped; F32 tensors become parameters over the mapping without a copy
    // (the mapping lives as long as any tensor uses it), other float dtypes are converted once.
    const auto map = std::make_shared<MappedFile>(path);
    const SafetensorsHeader file = parseSafetensorsHeader(map->data(), map->size(), path);
    auto fail = [&](const std::string& problem) { throw std::runtime_error(path + ": " + problem); };
    const auto meta = [&](const std::string& key) -> const std::string* {
        const auto it = file.metadata.find(key);
        return it == file.metadata.end() ? nullptr : &it->second;
    };
    if (!meta("model_config"))
        fail("not a gwb checkpoint (no model_config in __metadata__; import foreign checkpoints with gwb import)");
    if (const std::string* v = meta("format_version"); v && *v != kCheckpointFormatVersion)
        fail("checkpoint format version " + *v + " is not supported (expected " + kCheckpointFormatVersion + ")");
    ModelConfig config;
    try {
        config = configFromJson(*meta("model_config"));
    } catch (const std::exception& e) {
        fail(std::string("bad model_config: ") + e.what());
    }
    if (expectedKind && *expectedKind != config.kind)
        fail("is a " + kindTitle(config.kind) + " checkpoint, expected a " + kindTitle(*expectedKind) + " model");

    const auto specs = parameterSpecs(config);
    std::set<std::string> expected;
    for (const auto& s : specs)
        expected.insert(s.name);
    std::vector<std::string> unexpected;
    for (const auto& [name, t] : file.tensors)
        if (!expected.count(name) && name != kTokenizerTensor) unexpected.push_back(name);
    if (!unexpected.empty()) {
        const bool attention = unexpected.front().find(".qkv.") != std::string::npos ||
                               unexpected.front().find(".out_proj.") != std::string::npos;
        const bool grassmann = unexpected.front().find(".w_red.") != std::string::npos ||
                               unexpected.front().find(".w_plu.") != std::string::npos;
        if (config.kind == ModelKind::Grassmann && attention)
            fail("contains Transformer tensors ('" + unexpected.front() + "') but its config says kind grassmann");
        if (config.kind == ModelKind::Transformer && grassmann)
            fail("contains Grassmann tensors ('" + unexpected.front() + "') but its config says kind transformer");
        fail("unexpected tensor '" + unexpected.front() + "'" +
             (unexpected.size() > 1 ? " (and " + std::to_string(unexpected.size() - 1) + " more)" : ""));
    }
    const char* data = map->data() + file.dataStart;
    std::map<std::string, torch::Tensor> params;
    for (const auto& s : specs) {
        const auto it = file.tensors.find(s.name);
        if (it == file.tensors.end()) fail("missing tensor '" + s.name + "'");
        const TensorEntry& t = it->second;
        if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
            fail("tensor '" + s.name + "' has dtype " + t.dtype + " (expected F32, F16 or BF16)");
        if (t.shape != s.shape)
            fail("tensor '" + s.name + "' has shape " + shapeText(t.shape) + " but the config needs " +
                 shapeText(s.shape));
        const char* p = data + t.begin;
        const int64_t n = static_cast<int64_t>(t.end - t.begin) / dtypeSize(t.dtype);
        if (t.dtype == "F32" && reinterpret_cast<uintptr_t>(p) % alignof(float) == 0) {
            params.emplace(s.name, torch::from_blob(
                                       map->mutableData() + file.dataStart + t.begin, t.shape,
                                       [keep = map](void*) mutable { keep.reset(); }, torch::kFloat));
            continue;
        }
        torch::Tensor f = torch::empty(t.shape, torch::kFloat);
        float* out = f.data_ptr<float>();
        if (t.dtype == "F32") {
            std::memcpy(out, p, static_cast<size_t>(n) * sizeof(float)); // unaligned in the file
        } else {
            const bool half = t.dtype == "F16";
            for (int64_t i = 0; i < n; ++i) {
                uint16_t bits;
                std::memcpy(&bits, p + 2 * i, 2);
                out[i] = half ? halfToFloat(bits) : bfloat16ToFloat(bits);
            }
        }
        params.emplace(s.name, std::move(f));
    }
    TokenizerPtr tokenizer;
    if (const auto it = file.tensors.find(kTokenizerTensor); it != file.tensors.end()) {
        if (it->second.dtype != "U8" || it->second.shape.size() != 1)
            fail(std::string("tensor '") + kTokenizerTensor + "' must be a 1-D U8 tensor");
        const std::string* kind = meta("tokenizer_kind");
        if (!kind) fail("embedded tokenizer without tokenizer_kind in __metadata__");
        try {
            tokenizer = makeTokenizer(
                *kind, std::string(data + it->second.begin, static_cast<size_t>(it->second.end - it->second.begin)));
        } catch (const std::exception& e) {
            fail(std::string("embedded tokenizer: ") + e.what());
        }
    }
    std::shared_ptr<Impl> impl;
    try {
        impl = makeImpl(config, tokenizer, "cpu", /*initialize=*/false);
    } catch (const std::invalid_argument& e) {
        fail(e.what());
    }
    {
        torch::NoGradGuard noGrad;
        auto named = impl->net->named_parameters();
        for (auto& [name, t] : params) {
            torch::Tensor* p = named.find(name);
            if (!p) throw std::logic_error("model has no parameter " + name);
            p->set_(t); // the parameter now uses t's storage (the mapping, or the converted copy)
        }
    }
    impl->device = torch::Device(resolveDevice(device));
    impl->net->to(impl->device);
    impl->path = path;
    if (const std::string* s = meta("training_summary")) impl->trainingSummary = *s;
    return Model(impl);
}

void Model::save(const std::string& path, SaveDtype dtype) const {
    const Impl& m = impl();
    SafetensorsFile file;
    file.metadata["format"] = "gwb";
    file.metadata["format_version"] = kCheckpointFormatVersion;
    file.metadata["model_config"] = configToJson(m.config, -1);
    file.metadata["training_summary"] = m.trainingSummary;
    const std::string dt = dtype == SaveDtype::F16 ? "F16" : "F32";
    for (const auto& item : m.net->named_parameters()) {
        const torch::Tensor cpu = item.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
        file.tensors[item.key()] = makeStoredTensor(cpu.sizes().vec(), cpu.data_ptr<float>(), dt);
    }
    if (m.tokenizer) {
        StoredTensor t;
        t.dtype = "U8";
        t.bytes = m.tokenizer->serialize();
        t.shape = {static_cast<int64_t>(t.bytes.size())};
        file.tensors[kTokenizerTensor] = std::move(t);
        file.metadata["tokenizer_kind"] = m.tokenizer->kind();
    }
    writeSafetensors(path, file);
    m_impl->path = path;
}

const ModelConfig& Model::config() const {
    return impl().config;
}
TokenizerPtr Model::tokenizer() const {
    return impl().tokenizer;
}
void Model::setTokenizer(TokenizerPtr tokenizer) {
    if (tokenizer && tokenizer->vocabSize() != config().vocabSize)
        throw std::invalid_argument("tokenizer has " + std::to_string(tokenizer->vocabSize()) +
                                    " pieces but the model has vocab_size " + std::to_string(config().vocabSize));
    impl().tokenizer = std::move(tokenizer);
}
std::string Model::device() const {
    return impl().device.str();
}
std::string Model::path() const {
    return impl().path;
}
std::string Model::displayName() const {
    if (!config().name.empty()) return config().name;
    if (!path().empty()) return std::filesystem::path(path()).stem().string();
    return kindName(config().kind);
}
std::string Model::trainingSummary() const {
    return impl().trainingSummary;
}
void Model::setTrainingSummary(const std::string& json) {
    try {
        const auto parsed = nlohmann::json::parse(json);
        if (!parsed.is_object()) throw std::invalid_argument("training summary must be a JSON object");
    } catch (const nlohmann::json::parse_error& e) {
        throw std::invalid_argument(std::string("training summary is not valid JSON: ") + e.what());
    }
    impl().trainingSummary = json;
}

int64_t Model::parameterCount() const {
    int64_t n = 0;
    for (const auto& p : impl().net->parameters())
        n += p.numel();
    return n;
}

ParameterCounts Model::parameterCounts() const {
    return countParameters(config());
}

std::map<std::string, FloatArray> Model::parameters() const {
    std::map<std::string, FloatArray> out;
    for (const auto& item : impl().net->named_parameters()) {
        const torch::Tensor cpu = item.value().detach().to(torch::kCPU, torch::kFloat).contiguous();
        const float* p = cpu.data_ptr<float>();
        out.emplace(item.key(), FloatArray(cpu.sizes().vec(), std::vector<float>(p, p + cpu.numel())));
    }
    return out;
}

std::string configSummary(const ModelConfig& c) {
    std::ostringstream s;
    const bool g = c.kind == ModelKind::Grassmann;
    s << "kind:        " << kindName(c.kind) << (c.name.empty() ? "" : "  (" + c.name + ")") << "\n";
    s << "layers:      " << c.nLayers << "   d_model " << c.dModel << "   d_ff " << c.dFF << "   max_len " << c.maxLen
      << "   vocab " << c.vocabSize << "\n";
    s << "norm:        " << normName(c.norm) << (c.mixerLayerNorm ? " (+ mixer LayerNorm)" : "") << "   dropout "
      << c.dropout << "   layer-norm eps " << c.layerNormEps << "\n";
    if (g) {
        s << "mixer:       causal Grassmann, r " << c.reduced << " (" << c.reduced * (c.reduced - 1) / 2
          << " Pluecker coordinates), gate " << gateName(c.gate) << ", empty " << emptyName(c.empty) << ", eps "
          << c.pluckerEps << "\n";
        if (c.aggregation != Aggregation::NormalizeThenMean)
            s << "aggregation: " << aggregationName(c.aggregation)
              << (c.aggregation == Aggregation::PerOffsetMlp
                      ? " (each offset's plane through an MLP " + std::to_string(c.reduced * (c.reduced - 1) / 2) +
                            " -> " + std::to_string(c.dGeom) + " -> GELU -> " + std::to_string(c.dModel) +
                            ", averaged; no W_plu)"
                      : std::string())
              << "\n";
        if (c.stages.any()) {
            const MixerStages& st = c.stages;
            std::string on;
            auto add = [&](bool flag, const std::string& what) {
                if (flag) on += (on.empty() ? "" : ", ") + what;
            };
            add(st.reductionNorm, "z = LN(W_red x)");
            add(st.wedgePastFirst, "planes z_{t-D} ^ z_t");
            add(st.pluckerScale != 1.0, "plane scale " + std::to_string(st.pluckerScale));
            add(st.featureNorm, "g = LN(g)");
            add(st.gateFromInput, "gate of x alone");
            add(st.mixScale != 1.0, "mix scale " + std::to_string(st.mixScale));
            add(st.outputProjection, "output projection W_out");
            s << "stages:      " << on << "\n";
        }
        auto setText = [](const std::vector<int>& set) {
            std::string t = "{";
            for (size_t i = 0; i < set.size(); ++i)
                t += (i ? ", " : "") + std::to_string(set[i]);
            return t + "}";
        };
        const bool same = std::all_of(c.layerOffsets.begin(), c.layerOffsets.end(),
                                      [&](const auto& o) { return o == c.layerOffsets.front(); });
        if (same)
            s << "offsets:     " << setText(c.layerOffsets.front()) << " in every layer\n";
        else
            for (size_t l = 0; l < c.layerOffsets.size(); ++l)
                s << "offsets:     layer " << l << " " << setText(c.layerOffsets[l]) << "\n";
    } else {
        s << "mixer:       causal softmax attention, " << c.nHeads << " heads of " << c.dModel / c.nHeads << "\n";
    }
    const ParameterCounts pc = countParameters(c);
    s << "parameters:  embeddings " << pc.embeddings << ", final norm " << pc.finalNorm << "\n";
    for (size_t l = 0; l < pc.perBlock.size(); ++l)
        s << "  block " << l << ": " << pc.perBlock[l] << "\n";
    s << "total:       " << pc.total << " (head tied to the token table)\n";
    return s.str();
}

std::string Model::summary() const {
    std::string s = configSummary(config());
    s += "instantiated parameters: " + std::to_string(parameterCount()) + "\n";
    s += "device:      " + deviceSummary(device()) + "\n";
    if (const auto& t = tokenizer())
        s += "tokenizer:   " + t->kind() + ", " + std::to_string(t->vocabSize()) + " pieces\n";
    else
        s += "tokenizer:   none (token ids only)\n";
    return s;
}

} // namespace gwb::engine
