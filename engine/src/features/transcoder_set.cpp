// A model's transcoder set (features.h: TranscoderSet): one transcoder per block, ffn_in.L ->
// ffn.L, trained in one run that can stop and go on, saved as DIR/ffn.L plus DIR/transcoders.json,
// and read back from that index, from a folder of per-layer dictionaries in SAELens's layout, or
// from a set in circuit-tracer's layout (layer_L.safetensors, config.yaml).

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/features.h"
#include "gwb/engine/file_error.h"

#include "formats/file_util.h"
#include "formats/json_integer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <stdexcept>

namespace gwb::engine {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

constexpr const char* kIndexFile = "transcoders.json";

/// Whether `d` is a transcoder of block `layer` (ffn_in.L -> ffn.L).
bool isLayerTranscoder(const Dictionary& d, int layer) {
    return d.config.transcoder() && d.config.site == "ffn_in." + std::to_string(layer) &&
           d.config.targetSite == "ffn." + std::to_string(layer);
}

/// The block a transcoder belongs to (from its sites), or -1.
int transcoderLayer(const Dictionary& d) {
    const std::string& s = d.config.site;
    if (!d.config.transcoder() || s.rfind("ffn_in.", 0) != 0) return -1;
    try {
        size_t used = 0;
        const int layer = std::stoi(s.substr(7), &used);
        return used == s.size() - 7 && isLayerTranscoder(d, layer) ? layer : -1;
    } catch (const std::exception&) {
        return -1;
    }
}

/// The top-level `key: value` pairs of circuit-tracer's config.yaml (its loader's fields are plain
/// scalars; lists and nested maps are skipped), quotes removed.
std::map<std::string, std::string> yamlScalars(const std::string& text) {
    std::map<std::string, std::string> out;
    static const std::regex line(R"(^([A-Za-z_][A-Za-z0-9_]*):[ \t]*(.*?)[ \t]*$)");
    size_t start = 0;
    while (start <= text.size()) {
        const size_t end = std::min(text.find('\n', start), text.size());
        std::string l = text.substr(start, end - start);
        if (!l.empty() && l.back() == '\r') l.pop_back();
        std::smatch m;
        if (std::regex_match(l, m, line)) {
            std::string v = m[2].str();
            if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front())
                v = v.substr(1, v.size() - 2);
            out[m[1].str()] = v;
        }
        start = end + 1;
    }
    return out;
}

/// A set in circuit-tracer's layout, as its SingleLayerTranscoder / TranscoderSet.to_safetensors
/// write it: DIR/layer_L.safetensors (W_enc d_sae x d_model, W_dec d_sae x d_model, b_enc, b_dec;
/// ReLU) and, where present, the config.yaml its loader reads. Its hooks must be gwb's ffn_in.L and
/// ffn.L: the MLP's input after ln2 (TransformerLens's mlp.hook_in, circuit-tracer's ReplacementMLP)
/// and its output (mlp.hook_out or hook_mlp_out). Returns false when DIR holds no layer_L file.
bool loadCircuitTracerSet(const std::string& dir, std::map<int, Dictionary>& byLayer) {
    static const std::regex name(R"(layer_([0-9]+)\.safetensors)");
    std::map<int, fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
        std::smatch m;
        const std::string file = e.path().filename().string();
        if (e.is_regular_file() && std::regex_match(file, m, name)) files[std::stoi(m[1].str())] = e.path();
    }
    if (files.empty()) return false;
    const fs::path yaml = fs::path(dir) / "config.yaml";
    if (fs::exists(yaml)) {
        const auto c = yamlScalars(readFileBytes(yaml.string()));
        auto field = [&](const char* key) {
            const auto it = c.find(key);
            return it == c.end() ? std::string() : it->second;
        };
        if (field("model_kind") != "transcoder_set")
            throw std::invalid_argument(yaml.string() + ": model_kind is '" + field("model_kind") +
                                        "'; gwb reads circuit-tracer's per-layer sets (transcoder_set)");
        const std::string in = field("feature_input_hook"), out = field("feature_output_hook");
        if (in != "mlp.hook_in")
            throw std::invalid_argument(yaml.string() + ": feature_input_hook is '" + in +
                                        "'; gwb's transcoders read ffn_in.L, the MLP's input after its LayerNorm "
                                        "(mlp.hook_in; hook_resid_mid is before the LayerNorm, ln2.hook_normalized "
                                        "before its affine part)");
        if (out != "mlp.hook_out" && out != "hook_mlp_out")
            throw std::invalid_argument(yaml.string() + ": feature_output_hook is '" + out +
                                        "'; gwb's transcoders write ffn.L, the MLP's output (mlp.hook_out)");
    }
    for (const auto& [layer, path] : files) {
        const std::string what = path.string();
        const SafetensorsFile file = readSafetensors(what);
        for (const auto& [key, tensor] : file.tensors)
            if (key != "W_enc" && key != "W_dec" && key != "b_enc" && key != "b_dec")
                throw std::invalid_argument(what + ": " + key +
                                            (key == "W_skip"                          ? " (a skip connection)"
                                             : key == "activation_function.threshold" ? " (a JumpReLU)"
                                                                                      : "") +
                                            " is not read by gwb, whose transcoders are ReLU or TopK without a skip");
        auto tensor = [&](const char* key) {
            const auto it = file.tensors.find(key);
            if (it == file.tensors.end()) throw std::invalid_argument(what + ": no tensor " + key);
            return it->second.toArray();
        };
        Dictionary d;
        const FloatArray wEnc = tensor("W_enc");
        d.wDec = tensor("W_dec");
        d.bEnc = tensor("b_enc");
        d.bDec = tensor("b_dec");
        if (wEnc.shape.size() != 2 || d.wDec.shape.size() != 2 || d.bEnc.shape.size() != 1 ||
            d.bDec.shape.size() != 1 || d.bEnc.shape[0] != wEnc.shape[0] || d.wDec.shape[0] != wEnc.shape[0] ||
            d.bDec.shape[0] != d.wDec.shape[1])
            throw std::invalid_argument(what +
                                        ": W_enc, W_dec, b_enc, b_dec do not have the shapes of circuit-tracer's "
                                        "SingleLayerTranscoder (d_sae x d_model, d_sae x d_model, d_sae, d_model)");
        const int64_t m = wEnc.shape[0], n = wEnc.shape[1];
        d.wEnc.shape = {n, m}; // gwb's W_enc is d_in x d_sae
        d.wEnc.data.resize(static_cast<size_t>(n * m));
        for (int64_t f = 0; f < m; ++f)
            for (int64_t i = 0; i < n; ++i)
                d.wEnc.data[static_cast<size_t>(i * m + f)] = wEnc.data[static_cast<size_t>(f * n + i)];
        DictionaryConfig& c = d.config;
        c.architecture = "relu";
        c.site = "ffn_in." + std::to_string(layer);
        c.targetSite = "ffn." + std::to_string(layer);
        c.dIn = n;
        c.dSae = m;
        c.dOut = d.wDec.shape[1];
        c.applyBDecToInput = false;
        byLayer.emplace(layer, std::move(d));
    }
    return true;
}

void writeIndex(const std::string& dir, const Model& model, const std::vector<bool>& done) {
    ordered_json layers = ordered_json::array();
    for (size_t l = 0; l < done.size(); ++l)
        if (done[l])
            layers.push_back({{"layer", l},
                              {"folder", transcoderFolder(static_cast<int>(l))},
                              {"site", "ffn_in." + std::to_string(l)},
                              {"target_site", "ffn." + std::to_string(l)}});
    const bool complete = std::all_of(done.begin(), done.end(), [](bool b) { return b; });
    const ordered_json index = {{"format", "gwb-transcoders"},
                                {"version", 1},
                                {"model", model.displayName()},
                                {"model_hash", modelWeightsHash(model)},
                                {"layers_in_model", done.size()},
                                {"complete", complete},
                                {"layers", layers}};
    writeFileAtomic((fs::path(dir) / kIndexFile).string(), index.dump(2) + "\n");
}

} // namespace

std::string transcoderFolder(int layer) {
    return "ffn." + std::to_string(layer);
}

bool trainTranscoderSet(const Model& model, const FeatureTrainOptions& options, const std::string& dir,
                        const std::function<bool(int, const FeatureTrainProgress&)>& progress,
                        const std::atomic<bool>* stop) {
    const int N = static_cast<int>(model.config().nLayers);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw FileError(dir, ec.value(), "cannot create folder '" + dir + "': " + ec.message());
    std::vector<bool> done(static_cast<size_t>(N), false);
    for (int l = 0; l < N; ++l) {
        const fs::path folder = fs::path(dir) / transcoderFolder(l);
        const std::string stateDir = (folder / "state").string();
        if (fs::exists(folder / "cfg.json")) { // saved by an earlier run that stopped after it
            const Dictionary d = loadDictionary(folder.string());
            if (!isLayerTranscoder(d, l))
                throw std::invalid_argument("'" + folder.string() + "' holds a dictionary of " + d.config.site +
                                            ", not the transcoder ffn_in." + std::to_string(l) + " -> ffn." +
                                            std::to_string(l) + ": move it away or choose another folder");
            checkDictionaryFits(d, model);
            fs::remove_all(stateDir, ec);
            done[static_cast<size_t>(l)] = true;
        }
    }
    writeIndex(dir, model, done);
    for (int l = 0; l < N; ++l) {
        if (done[static_cast<size_t>(l)]) continue;
        const fs::path folder = fs::path(dir) / transcoderFolder(l);
        const std::string stateDir = (folder / "state").string();
        const FeatureTrainCallback layerProgress = [&](const FeatureTrainProgress& p) {
            return !progress || progress(l, p);
        };
        FeatureTrainResult r;
        if (fs::exists(fs::path(stateDir) / "state.json")) {
            r = resumeDictionaryTraining(model, stateDir, layerProgress, stop);
        } else {
            FeatureTrainOptions o = options;
            o.site = "ffn_in." + std::to_string(l);
            o.targetSite = "ffn." + std::to_string(l);
            o.secondSite.clear();
            o.seed = options.seed + static_cast<uint64_t>(l); // each layer its own draw, repeatably
            o.stateDir = stateDir;
            r = trainDictionary(model, o, layerProgress, stop);
        }
        if (!r.complete) return false;
        saveDictionary(r.dictionary, folder.string());
        fs::remove_all(stateDir, ec);
        done[static_cast<size_t>(l)] = true;
        writeIndex(dir, model, done);
    }
    return true;
}

TranscoderSet loadTranscoderSet(const std::string& dir, const Model* model) {
    if (!fs::is_directory(dir)) throw std::invalid_argument("'" + dir + "' is not a folder of transcoders");
    TranscoderSet set;
    std::map<int, Dictionary> byLayer;
    const fs::path index = fs::path(dir) / kIndexFile;
    if (fs::exists(index)) {
        ordered_json j;
        try {
            j = ordered_json::parse(readFileBytes(index.string()));
            if (j.value("format", std::string()) != "gwb-transcoders")
                throw std::invalid_argument("its format is not gwb-transcoders");
            set.modelName = j.value("model", std::string());
            set.modelHash = j.value("model_hash", std::string());
            for (const auto& e : j.at("layers")) {
                const int64_t l64 = jsonInteger(e.at("layer"), "layer");
                if (l64 < 0 || l64 > INT32_MAX)
                    throw std::invalid_argument("layer " + std::to_string(l64) + " is not a layer");
                const int l = int(l64);
                const std::string folder = (fs::path(dir) / e.at("folder").get<std::string>()).string();
                Dictionary d = loadDictionary(folder);
                if (!isLayerTranscoder(d, l))
                    throw std::invalid_argument("'" + folder + "' is not the transcoder of layer " + std::to_string(l));
                if (!byLayer.emplace(l, std::move(d)).second)
                    throw std::invalid_argument("layer " + std::to_string(l) + " is listed twice");
            }
        } catch (const nlohmann::json::exception& e) {
            throw std::invalid_argument(index.string() + ": " + e.what());
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument(index.string() + ": " + e.what());
        }
    } else if (!loadCircuitTracerSet(dir, byLayer)) {
        std::vector<fs::path> folders;
        for (const fs::directory_entry& e : fs::directory_iterator(dir))
            if (e.is_directory() && fs::exists(e.path() / "cfg.json")) folders.push_back(e.path());
        std::sort(folders.begin(), folders.end());
        for (const fs::path& f : folders) {
            Dictionary d = loadDictionary(f.string());
            const int l = transcoderLayer(d);
            if (l < 0) continue; // another kind of dictionary beside the set
            if (byLayer.count(l))
                throw std::invalid_argument("'" + dir + "' holds two transcoders of layer " + std::to_string(l));
            if (set.modelName.empty()) {
                set.modelName = d.config.modelName;
                set.modelHash = d.config.modelHash;
            }
            byLayer.emplace(l, std::move(d));
        }
    }
    if (byLayer.empty())
        throw std::invalid_argument("'" + dir +
                                    "' holds no transcoder (ffn_in.L -> ffn.L; gwb features train --transcoders makes "
                                    "a set; circuit-tracer's layer_L.safetensors are read too)");
    const int N = model ? static_cast<int>(model->config().nLayers) : byLayer.rbegin()->first + 1;
    for (int l = 0; l < N; ++l) {
        const auto it = byLayer.find(l);
        if (it == byLayer.end())
            throw std::invalid_argument("'" + dir + "' has no transcoder of layer " + std::to_string(l) + " (of " +
                                        std::to_string(N) + ")");
        if (model) checkDictionaryFits(it->second, *model);
        set.layers.push_back(std::move(it->second));
    }
    if (static_cast<int>(byLayer.size()) > N)
        throw std::invalid_argument("'" + dir + "' has transcoders of layers the model lacks (it has " +
                                    std::to_string(N) + ")");
    return set;
}

} // namespace gwb::engine
