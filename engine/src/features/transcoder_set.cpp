// A model's transcoder set (features.h: TranscoderSet): one transcoder per block, ffn_in.L ->
// ffn.L, trained in one run that can stop and go on, saved as DIR/ffn.L plus DIR/transcoders.json,
// and read back from that index or from a folder of per-layer dictionaries in SAELens's layout.

#include "gwb/engine/features.h"
#include "gwb/engine/file_error.h"

#include "formats/file_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
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
                const int l = e.at("layer").get<int>();
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
    } else {
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
                                    "a set)");
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
