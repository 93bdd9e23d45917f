// gwb import: foreign PyTorch checkpoints -> our Model (see import.h for the rules).

#include "gwb/engine/import.h"

#include "import/import_convert.h"
#include "import/layout_file.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

namespace gwb::engine {
namespace {

using detail::asciiLower;

std::vector<int> parseIntList(const std::string& text) {
    std::vector<int> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
        size_t used = 0;
        int v = 0;
        try {
            v = std::stoi(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (item.empty() || used != item.size() || v <= 0)
            throw std::invalid_argument("offset '" + item + "' is not a positive integer");
        out.push_back(v);
    }
    if (out.empty()) throw std::invalid_argument("empty offset list");
    return out;
}

/// Sorted, unique: the engine's per-layer sets are ascending sets.
std::vector<int> asSet(std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

} // namespace

std::vector<std::string> builtinLayoutNames() {
    std::vector<std::string> names;
    for (const Layout& l : builtinLayouts())
        names.push_back(l.name);
    return names;
}

std::string describeLayouts() {
    std::ostringstream s;
    for (const Layout& l : builtinLayouts()) {
        s << l.name << ": " << l.title << "\n  from " << l.source << "\n  recognised by";
        for (const std::string& p : l.detectAll)
            s << " " << p << (p.back() == '.' ? "*" : "");
        for (const auto& [kind, k] : l.kinds) {
            s << "\n  " << kindName(kind) << ": " << l.blocks << k.probe;
            if (k.norm) s << "; norm=" << normName(*k.norm);
            if (k.mixerLayerNorm && *k.mixerLayerNorm) s << " + mixer LayerNorm";
            if (k.gate) s << ", gate=" << gateName(*k.gate);
            if (k.empty) s << ", empty=" << emptyName(*k.empty);
            if (k.eps) s << ", eps=" << *k.eps;
        }
        s << "\n  " << l.facts << "\n";
    }
    return s.str();
}

std::string checkLayoutFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open layout file '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return parseLayout(ss.str(), path).name;
}

std::string importedVariantText(const ModelConfig& c) {
    if (c.family.empty()) return "";
    std::ostringstream s;
    s << c.family << " " << kindName(c.kind) << ": norm=" << normName(c.norm) << (c.mixerLayerNorm ? "+mixer-LN" : "");
    if (c.kind == ModelKind::Grassmann)
        s << " gate=" << gateName(c.gate) << " empty=" << emptyName(c.empty) << " eps=" << c.pluckerEps;
    if (c.activation != Activation::Gelu) s << " activation=" << activationName(c.activation);
    return s.str();
}

bool isImportableCheckpointPath(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) return true; // an HF-style or GrassLM model folder
    const std::string ext = asciiLower(std::filesystem::path(path).extension().string());
    return ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt" || ext == ".safetensors" ||
           ext == ".grasslm";
}

std::vector<std::vector<int>> defaultLayoutOffsets(const std::string& layout, int64_t nLayers) {
    return parseOffsetSchedule(builtinLayout(layout).defaultOffsets(nLayers), nLayers);
}

std::vector<std::vector<int>> parseOffsetSchedule(const std::string& text, int64_t nLayers) {
    if (nLayers <= 0) throw std::invalid_argument("offset schedule for " + std::to_string(nLayers) + " layers");
    std::vector<std::vector<int>> out;
    const std::string perLayer = "per_layer:";
    if (text.rfind(perLayer, 0) == 0) {
        const std::vector<int> list = parseIntList(text.substr(perLayer.size()));
        const auto k = static_cast<int64_t>(list.size());
        for (int64_t l = 0; l < nLayers; ++l)
            out.push_back({list[static_cast<size_t>(l * k / nLayers)]});
        return out;
    }
    if (text.find(';') != std::string::npos) {
        std::stringstream ss(text);
        std::string part;
        while (std::getline(ss, part, ';'))
            out.push_back(asSet(parseIntList(part)));
        if (static_cast<int64_t>(out.size()) != nLayers)
            throw std::invalid_argument("offset schedule lists " + std::to_string(out.size()) + " sets for " +
                                        std::to_string(nLayers) + " layers");
        return out;
    }
    out.assign(static_cast<size_t>(nLayers), asSet(parseIntList(text)));
    return out;
}

/// An HF-style or GrassLM model folder: the weights file inside it (GrassLM keeps them in
/// checkpoints/ beside config.json).
static std::string checkpointInFolder(const std::string& folder) {
    for (const char* name : {"model.safetensors", "best_model.pt", "latest.pt", "model.pt", "pytorch_model.bin",
                             "checkpoints/best_model.pt", "checkpoints/latest.pt"})
        if (std::filesystem::is_regular_file(std::filesystem::path(folder) / name))
            return (std::filesystem::path(folder) / name).string();
    throw std::runtime_error(folder + ": a folder without model.safetensors, best_model.pt, latest.pt, model.pt, "
                                      "pytorch_model.bin or checkpoints/best_model.pt");
}

ImportedModel importCheckpoint(const std::string& given, const ImportOptions& options) {
    const std::string path = std::filesystem::is_directory(given) ? checkpointInFolder(given) : given;
    try {
        TensorFile file = readTensorFile(path);
        if (file.format == "safetensors" && file.metadata.count("model_config")) {
            // Our own .gwb (a safetensors file with our config): nothing to convert.
            ImportedModel m{Model::load(path, options.device, options.expectedKind), {}};
            m.report.format = "gwb";
            return m;
        }
        return detail::convertTensors(path, std::move(file), options);
    } catch (const TensorFileError& e) {
        throw std::runtime_error(e.what()); // already names the file
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        if (what.rfind(path, 0) == 0) throw;
        throw std::runtime_error(path + ": " + what);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

FoundVocabulary findVocabulary(const std::string& checkpointPath) {
    FoundVocabulary o;
    const std::filesystem::path folder = std::filesystem::is_directory(checkpointPath)
                                             ? std::filesystem::path(checkpointPath)
                                             : std::filesystem::path(checkpointPath).parent_path();
    for (const char* name : {"tokenizer.json", "vocab.txt", "vocab.json"}) {
        if (std::filesystem::exists(folder / name)) {
            o.path = (folder / name).string();
            o.where = "next to the checkpoint";
            break;
        }
    }
    // Wake2vec keeps its tokenizer.json in the run folder, above grassmann/best.pt and
    // transformer/best.pt (only those two folder names: a stray file higher up is not a tokenizer).
    std::error_code ec;
    const std::filesystem::path run = std::filesystem::absolute(folder, ec);
    const std::filesystem::path above = run.parent_path() / "tokenizer.json";
    if (o.path.empty() && !ec && (run.filename() == "grassmann" || run.filename() == "transformer") &&
        std::filesystem::exists(above, ec)) {
        o.path = above.string();
        o.where = "in the folder above the checkpoint";
    }
    // Adipks keeps checkpoints/<model>_lm.pt and the tokenizer in data/ of the same project.
    const std::filesystem::path project = run.parent_path() / "data" / "tokenizer.json";
    if (o.path.empty() && !ec && run.filename() == "checkpoints" && std::filesystem::exists(project, ec)) {
        o.path = project.string();
        o.where = "in the project's data/ folder";
    }
    return o;
}

namespace {

/// Whether the file starts as a model file can: a zip archive (torch.save), a pickle (old
/// torch.save), or an 8-byte length followed by a JSON header (safetensors, .gwb). A text file or
/// an image opened by mistake does not; an unreadable one gets the loader's own message.
bool looksLikeModelFile(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return true;
    char head[9] = {};
    f.read(head, sizeof head);
    const std::streamsize n = f.gcount();
    if (n >= 2 && head[0] == 'P' && head[1] == 'K') return true;
    if (n >= 1 && static_cast<unsigned char>(head[0]) == 0x80) return true;
    return n == 9 && head[8] == '{';
}

ImportedModel loadOrImportModelUnchecked(const std::string& path, const std::string& device,
                                         std::optional<ModelKind> expectedKind) {
    if (!isImportableCheckpointPath(path)) {
        ImportedModel m{Model::load(path, device, expectedKind), {}};
        m.report.format = "gwb";
        return m;
    }
    ImportOptions o;
    o.device = device;
    o.expectedKind = expectedKind;
    const FoundVocabulary found = findVocabulary(path);
    o.vocabPath = found.path;
    ImportedModel m = importCheckpoint(path, o);
    if (!o.vocabPath.empty()) m.report.notes.push_back("tokenizer: " + o.vocabPath + " (found " + found.where + ")");
    return m;
}

} // namespace

ImportedModel loadOrImportModel(const std::string& path, const std::string& device,
                                std::optional<ModelKind> expectedKind) {
    try {
        return loadOrImportModelUnchecked(path, device, expectedKind);
    } catch (const std::exception& e) {
        // A text file or an image given as a model: the clear sentence first, the parser's detail after.
        if (!looksLikeModelFile(path))
            throw std::runtime_error("'" + path + "' is not a model file (.gwb, .pt, .safetensors): " + e.what());
        throw;
    }
}

} // namespace gwb::engine
