// Lens files (gwb/engine/lens.h): the shard merge, the Jacobian lens as
// TransformerLens's JacobianLens.load reads it, the tuned lens as tuned-lens's TunedLens loads it
// (both torch.save archives written by torch::pickle_save), gwb's own record, and the evaluation's NPZ.

#include "gwb/engine/lens.h"
#include "gwb/engine/npy.h"
#include "formats/file_util.h"
#include "formats/json_integer.h"
#include "import/import_tensor_file.h"

#include <caffe2/serialize/inline_container.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

namespace gwb::engine {

namespace fs = std::filesystem;
using nlohmann::json;

std::string lensKindName(LensKind kind) {
    switch (kind) {
    case LensKind::Logit:
        return "logit";
    case LensKind::Tuned:
        return "tuned";
    case LensKind::Jacobian:
        return "jacobian";
    }
    return "?";
}

LensKind lensKindFromName(const std::string& name) {
    if (name == "logit") return LensKind::Logit;
    if (name == "tuned") return LensKind::Tuned;
    if (name == "jacobian") return LensKind::Jacobian;
    throw std::invalid_argument("unknown lens kind '" + name + "': choose tuned or jacobian");
}

namespace {

json requestJson(const LensFitRequest& r) {
    json j{{"files", r.files},
           {"window", r.window},
           {"max_prompts", r.maxPrompts},
           {"shard", json::array({r.shardIndex, r.shardCount})}};
    if (r.kind == LensKind::Jacobian) {
        j["skip_first"] = r.skipFirst;
        j["dim_batch"] = r.dimBatch;
    } else {
        j["steps"] = r.steps;
        j["tokens_per_step"] = r.tokensPerStep;
        j["optimizer"] = {{"name", "sgd_nesterov"},        {"lr", r.lr},     {"momentum", r.momentum},
                          {"weight_decay", r.weightDecay}, {"clip", r.clip}, {"schedule", "linear_decay"}};
        j["seed"] = r.seed;
    }
    return j;
}

LensFitRequest requestFrom(const json& j, LensKind kind) {
    LensFitRequest r;
    r.kind = kind;
    r.files = j.at("files").get<std::vector<std::string>>();
    r.window = j.at("window");
    r.maxPrompts = j.at("max_prompts");
    r.shardIndex = j.at("shard").at(0);
    r.shardCount = j.at("shard").at(1);
    if (kind == LensKind::Jacobian) {
        r.skipFirst = j.at("skip_first");
        r.dimBatch = j.at("dim_batch");
    } else {
        r.steps = j.at("steps");
        r.tokensPerStep = j.at("tokens_per_step");
        const json& o = j.at("optimizer");
        r.lr = o.at("lr");
        r.momentum = o.at("momentum");
        r.weightDecay = o.at("weight_decay");
        r.clip = o.at("clip");
        r.seed = j.at("seed");
    }
    return r;
}

torch::Tensor tensorOf(const FloatArray& a) {
    return torch::from_blob(const_cast<float*>(a.data.data()), a.shape, torch::kFloat).clone();
}

FloatArray arrayOf(const torch::Tensor& t, const std::string& what) {
    if (!t.is_floating_point()) throw std::runtime_error(what + " is not a floating-point tensor");
    const torch::Tensor c = t.to(torch::kCPU, torch::kFloat).contiguous();
    return FloatArray(c.sizes().vec(), std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel()));
}

/// torch::pickle_save without its type tags: dicts and lists pickled as plain Python ones (a tag is a
/// call of torch.jit._pickle.restore_type_tag, which torch.load(weights_only=True) refuses).
void writePickle(const std::string& path, const c10::IValue& value) {
    std::vector<char> pickle;
    torch::jit::Pickler pickler([&](const char* b, size_t n) { pickle.insert(pickle.end(), b, b + n); }, nullptr,
                                nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
    pickler.protocol();
    pickler.pushIValue(value);
    pickler.stop();
    std::string bytes;
    {
        caffe2::serialize::PyTorchStreamWriter writer([&](const void* b, size_t n) -> size_t {
            bytes.append(static_cast<const char*>(b), n);
            return n;
        });
        torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
        writer.writeEndOfFile();
    }
    writeFileAtomic(path, bytes);
}

c10::IValue readPickle(const std::string& path) {
    const std::string bytes = readFileBytes(path);
    try {
        return torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const c10::Error& e) {
        throw std::runtime_error("cannot read '" + path + "': " + e.what_without_backtrace());
    }
}

/// A dict of string keys to tensors (params.pt, momentum.pt).
c10::IValue tensorDict(const std::vector<std::pair<std::string, torch::Tensor>>& items) {
    c10::impl::GenericDict d(c10::StringType::get(), c10::TensorType::get());
    for (const auto& [k, v] : items)
        d.insert(k, v);
    return d;
}

/// The tensors of a state dict (params.pt, momentum.pt), read by gwb's own restricted reader
/// (import_tensor_file.h): it takes the plain dict gwb writes and the OrderedDict that
/// tuned-lens's TunedLens.save writes (torch.save of a state_dict), which torch::pickle_load cannot.
std::map<std::string, torch::Tensor> readTensorDict(const std::string& path) {
    TensorFile file;
    try {
        file = readTensorFile(path);
    } catch (const std::exception& e) {
        throw std::runtime_error("cannot read '" + path + "': " + e.what());
    }
    std::map<std::string, torch::Tensor> out;
    for (const auto& [name, raw] : file.tensors) {
        std::vector<float> values = raw.toFloat();
        out[name] = torch::from_blob(values.data(), raw.shape, torch::kFloat).clone();
    }
    return out;
}

} // namespace

void checkLensFolder(const std::string& folder) {
    std::error_code ec;
    if (fs::exists(folder, ec) && !fs::is_directory(folder, ec))
        throw std::invalid_argument("--out '" + folder + "' is a file: a lens is a folder");
    fs::create_directories(folder, ec);
    if (ec) throw std::invalid_argument("cannot make the folder '" + folder + "': " + ec.message());
    const std::string probe = (fs::path(folder) / ".gwb_write_check").string();
    std::ofstream f(probe);
    if (!f) throw std::invalid_argument("cannot write into '" + folder + "'");
    f.close();
    fs::remove(probe, ec);
}

void writeLens(const Lens& lens, const std::string& folder) {
    checkLensFolder(folder);
    const fs::path dir(folder);
    json meta{{"format", "gwb-lens"},
              {"format_version", 1},
              {"kind", lensKindName(lens.kind)},
              {"estimator", lens.kind == LensKind::Jacobian ? "jacobian_lens" : "tuned_lens"},
              {"model_name", lens.modelName},
              {"model_hash", lens.modelHash},
              {"d_model", lens.dModel},
              {"n_layers", lens.nLayers},
              {"layers", lens.layers},
              {"complete", lens.complete},
              {"seconds", lens.seconds},
              {"request", requestJson(lens.request)}};
    if (lens.kind == LensKind::Jacobian) {
        meta["layer_numbering"] = "source layer l = the output of block l (TransformerLens blocks.l.hook_out)";
        meta["n_prompts"] = lens.nPrompts;
        meta["prompts"] = lens.prompts;
        meta["prompts_planned"] = lens.promptsPlanned;
        c10::impl::GenericDict J(c10::IntType::get(), c10::TensorType::get());
        c10::impl::GenericList layers(c10::AnyType::get());
        for (size_t i = 0; i < lens.layers.size(); ++i) {
            J.insert(static_cast<int64_t>(lens.layers[i]), tensorOf(lens.matrix[i]));
            layers.push_back(static_cast<int64_t>(lens.layers[i]));
        }
        c10::impl::GenericDict md(c10::StringType::get(), c10::AnyType::get());
        md.insert("estimator", std::string("jacobian_lens"));
        md.insert("fitted_by", std::string("gwb"));
        md.insert("model_name", lens.modelName);
        md.insert("target_layer", static_cast<int64_t>(lens.nLayers - 1));
        md.insert("max_seq_len", lens.request.window);
        md.insert("skip_first_positions", lens.request.skipFirst);
        md.insert("n_prompts", lens.nPrompts);
        c10::impl::GenericDict top(c10::StringType::get(), c10::AnyType::get());
        top.insert("J", J);
        top.insert("n_prompts", lens.nPrompts);
        top.insert("source_layers", layers);
        top.insert("d_model", lens.dModel);
        top.insert("metadata", md);
        writePickle((dir / "jacobian_lens.pt").string(), top);
    } else {
        meta["layer_numbering"] = "residual state s = the input of block s (tuned-lens hidden_states[s])";
        meta["steps_done"] = lens.stepsDone;
        meta["windows"] = lens.nPrompts;
        std::vector<std::pair<std::string, torch::Tensor>> params, momentum;
        for (size_t i = 0; i < lens.layers.size(); ++i) {
            const std::string k = std::to_string(lens.layers[i]);
            params.emplace_back(k + ".weight", tensorOf(lens.matrix[i]));
            params.emplace_back(k + ".bias", tensorOf(lens.bias[i]));
            if (i < lens.momentumMatrix.size()) {
                momentum.emplace_back(k + ".weight", tensorOf(lens.momentumMatrix[i]));
                momentum.emplace_back(k + ".bias", tensorOf(lens.momentumBias[i]));
            }
        }
        writePickle((dir / "params.pt").string(), tensorDict(params));
        if (!momentum.empty())
            writePickle((dir / "momentum.pt").string(), tensorDict(momentum));
        else
            fs::remove(dir / "momentum.pt");
        const json config{{"base_model_name_or_path", lens.modelName},
                          {"d_model", lens.dModel},
                          {"num_hidden_layers", lens.nLayers},
                          {"bias", true},
                          {"base_model_revision", nullptr},
                          {"unembed_hash", nullptr},
                          {"lens_type", "linear_tuned_lens"}};
        writeFileAtomic((dir / "config.json").string(), config.dump(2) + "\n");
    }
    writeFileAtomic((dir / "gwb_lens.json").string(), meta.dump(2) + "\n");
}

Lens readLens(const std::string& folder) {
    const fs::path dir(folder);
    const fs::path metaPath = dir / "gwb_lens.json";
    if (!fs::is_directory(dir)) throw std::runtime_error("'" + folder + "' is not a lens folder");
    Lens lens;
    json meta;
    if (fs::exists(metaPath)) {
        try {
            meta = json::parse(readFileBytes(metaPath.string()));
        } catch (const json::exception& e) {
            throw std::runtime_error("'" + metaPath.string() + "' is not valid JSON: " + e.what());
        }
        lens.kind = lensKindFromName(meta.at("kind"));
    } else if (fs::exists(dir / "jacobian_lens.pt")) {
        lens.kind = LensKind::Jacobian;
    } else if (fs::exists(dir / "params.pt") && fs::exists(dir / "config.json")) {
        lens.kind = LensKind::Tuned;
    } else {
        throw std::runtime_error("'" + folder + "' holds no lens (gwb_lens.json, jacobian_lens.pt or params.pt)");
    }
    try {
        if (lens.kind == LensKind::Jacobian) {
            const std::string path = (dir / "jacobian_lens.pt").string();
            const c10::IValue v = readPickle(path);
            if (!v.isGenericDict()) throw std::runtime_error("'" + path + "' does not hold a dict");
            const auto top = v.toGenericDict();
            if (!top.contains("J")) throw std::runtime_error("'" + path + "' has no 'J' key");
            std::map<int, torch::Tensor> byLayer;
            for (const auto& e : top.at("J").toGenericDict())
                byLayer[static_cast<int>(e.key().toInt())] = e.value().toTensor();
            for (const auto& [l, t] : byLayer) {
                lens.layers.push_back(l);
                lens.matrix.push_back(arrayOf(t, "J[" + std::to_string(l) + "]"));
            }
            lens.dModel = top.at("d_model").toInt();
            lens.nPrompts = top.contains("n_prompts") ? top.at("n_prompts").toInt() : 0;
            lens.nLayers = byLayer.empty() ? 0 : byLayer.rbegin()->first + 2;
        } else {
            const json config = json::parse(readFileBytes((dir / "config.json").string()));
            lens.dModel = config.at("d_model");
            lens.nLayers = config.at("num_hidden_layers");
            const auto params = readTensorDict((dir / "params.pt").string());
            std::map<std::string, torch::Tensor> momentum;
            if (fs::exists(dir / "momentum.pt")) momentum = readTensorDict((dir / "momentum.pt").string());
            for (int s = 0; s < lens.nLayers; ++s) {
                const std::string k = std::to_string(s);
                const auto w = params.find(k + ".weight"), b = params.find(k + ".bias");
                if (w == params.end() || b == params.end())
                    throw std::runtime_error("params.pt has no " + k + ".weight and " + k + ".bias");
                lens.layers.push_back(s);
                lens.matrix.push_back(arrayOf(w->second, k + ".weight"));
                lens.bias.push_back(arrayOf(b->second, k + ".bias"));
                if (momentum.count(k + ".weight") && momentum.count(k + ".bias")) {
                    lens.momentumMatrix.push_back(arrayOf(momentum.at(k + ".weight"), "momentum"));
                    lens.momentumBias.push_back(arrayOf(momentum.at(k + ".bias"), "momentum"));
                }
            }
        }
        if (!meta.is_null()) {
            lens.nLayers = meta.at("n_layers");
            lens.modelName = meta.value("model_name", "");
            lens.modelHash = meta.value("model_hash", "");
            lens.complete = meta.value("complete", true);
            lens.seconds = meta.value("seconds", 0.0);
            lens.request = requestFrom(meta.at("request"), lens.kind);
            if (lens.kind == LensKind::Jacobian) {
                lens.prompts = meta.at("prompts").get<std::vector<int64_t>>();
                lens.promptsPlanned = jsonIntegerOr(meta, "prompts_planned", 0);
            } else {
                lens.stepsDone = jsonIntegerOr(meta, "steps_done", 0);
                lens.nPrompts = jsonIntegerOr(meta, "windows", 0);
            }
        }
    } catch (const json::exception& e) {
        throw std::runtime_error("'" + folder + "': " + e.what());
    } catch (const c10::Error& e) {
        throw std::runtime_error("'" + folder + "': " + e.what_without_backtrace());
    }
    for (const FloatArray& a : lens.matrix)
        if (a.shape != std::vector<int64_t>{lens.dModel, lens.dModel})
            throw std::runtime_error("'" + folder + "': a matrix of shape " + shapeText(a.shape) + ", not " +
                                     shapeText({lens.dModel, lens.dModel}));
    return lens;
}

Lens mergeLenses(const std::vector<Lens>& shards) {
    if (shards.empty()) throw std::invalid_argument("no lenses to merge");
    const Lens& first = shards.front();
    if (first.kind != LensKind::Jacobian)
        throw std::invalid_argument("only Jacobian lenses merge (a tuned lens is one optimisation)");
    Lens out = first;
    std::set<int64_t> seen;
    std::vector<torch::Tensor> sum;
    int64_t n = 0, planned = 0;
    for (size_t k = 0; k < shards.size(); ++k) {
        const Lens& s = shards[k];
        if (s.kind != LensKind::Jacobian || s.dModel != first.dModel || s.layers != first.layers ||
            s.modelHash != first.modelHash)
            throw std::invalid_argument("lens " + std::to_string(k) +
                                        " is not a shard of the same fit (kind, model or layers differ)");
        LensFitRequest a = s.request, b = first.request;
        a.shardIndex = b.shardIndex = 0;
        if (requestJson(a) != requestJson(b) || s.request.shardCount != first.request.shardCount)
            throw std::invalid_argument("lens " + std::to_string(k) + " was fitted with other options or text");
        for (int64_t g : s.prompts)
            if (!seen.insert(g).second)
                throw std::invalid_argument("prompt " + std::to_string(g) + " is in two of the lenses");
        for (size_t i = 0; i < s.matrix.size(); ++i) {
            const torch::Tensor t = tensorOf(s.matrix[i]).to(torch::kDouble) * static_cast<double>(s.nPrompts);
            if (sum.size() <= i)
                sum.push_back(t);
            else
                sum[i] += t;
        }
        n += s.nPrompts;
        planned += s.promptsPlanned;
    }
    if (n <= 0) throw std::invalid_argument("the lenses hold no prompts");
    for (size_t i = 0; i < sum.size(); ++i)
        out.matrix[i] = arrayOf((sum[i] / static_cast<double>(n)).to(torch::kFloat), "J");
    out.nPrompts = n;
    out.prompts.assign(seen.begin(), seen.end());
    out.promptsPlanned = planned;
    out.complete = std::all_of(shards.begin(), shards.end(), [](const Lens& s) { return s.complete; });
    out.request.shardIndex = 0;
    out.request.shardCount = 1;
    out.seconds = 0;
    for (const Lens& s : shards)
        out.seconds += s.seconds;
    return out;
}

void writeLensEval(const LensEvalResult& r, const std::string& path) {
    NpzWriter npz;
    npz.add("kl", r.kl);
    npz.add("ce", r.ce);
    npz.add("top1", r.top1);
    npz.add("rank", r.rank);
    npz.add("final_ce", r.finalCe);
    json lenses = json::array();
    for (size_t i = 0; i < r.lenses.size(); ++i)
        lenses.push_back({{"kind", r.lenses[i]},
                          {"estimator", r.lenses[i] == "logit"   ? "logit_lens"
                                        : r.lenses[i] == "tuned" ? "tuned_lens (Belrose et al. 2023)"
                                                                 : "jacobian_lens (Gurnee et al. 2026)"},
                          {"folder", r.lensFolders[i]},
                          {"fitted_on", r.lensModels[i]},
                          {"same_model", static_cast<bool>(r.sameModel[i])}});
    const json meta{{"format", "gwb-lens-eval"},
                    {"model", r.modelName},
                    {"n_layers", r.nLayers},
                    {"prompts", r.prompts},
                    {"positions", r.positions},
                    {"lenses", lenses},
                    {"rows", "one per lens, in the order of 'lenses'"},
                    {"columns", "residual state s = 0..N-1: the input of block s (the embedding at s = 0)"},
                    {"arrays",
                     {{"kl", "mean KL(p_final || p_lens) in nats over positions with a next token"},
                      {"ce", "mean cross-entropy of the lens against the next token, nats"},
                      {"top1", "fraction of positions whose lens top-1 token is the final layer's"},
                      {"rank", "mean rank of the next token under the lens (0 = its top token)"},
                      {"final_ce", "the model's own cross-entropy (state N)"}}},
                    {"undefined", "NaN where a lens has no map (the Jacobian lens at s = 0)"}};
    npz.addFile("meta.json", meta.dump(2));
    npz.write(path);
}

LensEvalResult readLensEval(const std::string& path) {
    const auto members = readZipStored(readBinaryFile(path));
    const auto get = [&](const std::string& name) {
        const auto it = members.find(name + ".npy");
        if (it == members.end()) throw std::runtime_error("'" + path + "' has no " + name + ".npy");
        const NpyArray a = parseNpy(it->second);
        return Array<double>(a.shape, a.values<double>());
    };
    const auto metaIt = members.find("meta.json");
    if (metaIt == members.end()) throw std::runtime_error("'" + path + "' has no meta.json: not a lens evaluation");
    const json meta = json::parse(std::string(metaIt->second.begin(), metaIt->second.end()));
    LensEvalResult r;
    r.modelName = meta.value("model", "");
    r.nLayers = meta.at("n_layers");
    r.prompts = meta.at("prompts");
    r.positions = meta.at("positions");
    for (const json& l : meta.at("lenses")) {
        r.lenses.push_back(l.at("kind"));
        r.lensFolders.push_back(l.value("folder", ""));
        r.lensModels.push_back(l.value("fitted_on", ""));
        r.sameModel.push_back(l.value("same_model", true));
    }
    r.kl = get("kl");
    r.ce = get("ce");
    r.top1 = get("top1");
    r.rank = get("rank");
    r.finalCe = get("final_ce");
    return r;
}

} // namespace gwb::engine
