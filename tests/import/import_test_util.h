#pragma once
// What the importer tests share: a tiny config of a family's layout, a random model, its logits, our
// weights under a family's names, a temporary folder, a .safetensors writer and an error matcher.

#include "gwb/engine/checkpoint.h"
#include "gwb/engine/import.h"
#include "import/layout_file.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

namespace gwb::engine::import_test {

using Tensors = std::map<std::string, FloatArray>;

inline ModelConfig tinyConfig(const std::string& layout, ModelKind kind) {
    ModelConfig c;
    c.kind = kind;
    c.vocabSize = 50;
    c.dModel = 16;
    c.reduced = 4;
    c.nLayers = 2;
    c.dFF = 64;
    c.maxLen = 40;
    c.nHeads = 4;
    applyLayoutVariant(builtinLayout(layout), c);
    if (kind == ModelKind::Grassmann) c.layerOffsets = defaultLayoutOffsets(layout, c.nLayers);
    return c;
}

/// Random weights (not the init's 1/0 LayerNorms) so that a wrong mapping shows.
inline Model randomModel(const ModelConfig& c, uint64_t seed) {
    Tensors p;
    std::mt19937 rng(static_cast<unsigned>(seed));
    std::normal_distribution<float> n(0.0f, 0.3f);
    for (const auto& s : parameterSpecs(c)) {
        FloatArray a = FloatArray::zeros(s.shape);
        for (float& v : a.data)
            v = n(rng);
        p[s.name] = a;
    }
    return Model::fromParameters(c, p, nullptr, "cpu");
}

inline std::vector<float> logits(const Model& m, std::vector<int64_t> ids) {
    torch::NoGradGuard g;
    m.impl().net->eval();
    const torch::Tensor y = m.impl().net->forward(torch::tensor(ids, torch::kLong).view({1, -1})).contiguous();
    return {y.data_ptr<float>(), y.data_ptr<float>() + y.numel()};
}

/// Our parameters under the family's names (tied head included, as the families save it).
inline Tensors familyTensors(const Model& m, const std::string& layout) {
    const Tensors ours = m.parameters();
    const Layout& l = builtinLayout(layout);
    Tensors theirs;
    for (const KeyMapping& k : layoutMappings(l, m.config().kind, m.config().nLayers, m.config().mixerLayerNorm)) {
        const FloatArray& a = ours.at(k.ours);
        if (k.theirs.size() == 1) {
            theirs[k.theirs[0]] = a;
            // Modules the family stores input x output (Hugging Face's Conv1D): transposed.
            const std::string module =
                k.ours.substr(k.ours.find('.', 7) + 1, k.ours.rfind('.') - k.ours.find('.', 7) - 1);
            if (k.ours.rfind("blocks.", 0) == 0 && k.ours.size() > 7 && a.shape.size() == 2 &&
                l.kind(m.config().kind).transposed.count(module)) {
                FloatArray t = FloatArray::zeros({a.shape[1], a.shape[0]});
                for (int64_t i = 0; i < a.shape[0]; ++i)
                    for (int64_t j = 0; j < a.shape[1]; ++j)
                        t.data[static_cast<size_t>(j * a.shape[0] + i)] =
                            a.data[static_cast<size_t>(i * a.shape[1] + j)];
                theirs[k.theirs[0]] = t;
            }
            continue;
        }
        // Several tensors of theirs stacked along the first dimension: split ours evenly.
        const int64_t parts = static_cast<int64_t>(k.theirs.size()), rows = a.shape[0] / parts;
        const int64_t rowSize = static_cast<int64_t>(a.data.size()) / a.shape[0];
        for (int64_t j = 0; j < parts; ++j) {
            std::vector<int64_t> shape = a.shape;
            shape[0] = rows;
            theirs[k.theirs[static_cast<size_t>(j)]] =
                FloatArray(shape, std::vector<float>(a.data.begin() + j * rows * rowSize,
                                                     a.data.begin() + (j + 1) * rows * rowSize));
        }
    }
    theirs[l.head] = ours.at("tok_embed.weight");
    return theirs;
}

class TempDir {
public:
    TempDir() : m_dir(std::filesystem::temp_directory_path() / ("gwb_import_test_" + std::to_string(::getpid()))) {
        std::filesystem::create_directories(m_dir);
    }
    ~TempDir() { std::filesystem::remove_all(m_dir); }
    std::string file(const std::string& name) const { return (m_dir / name).string(); }

private:
    std::filesystem::path m_dir;
};

inline std::string writeFile(const TempDir& dir, const Tensors& t, const std::string& name = "ckpt.safetensors") {
    SafetensorsFile f;
    for (const auto& [n, a] : t)
        f.tensors[n] = makeStoredTensor(a.shape, a.data.data(), "F32");
    const std::string path = dir.file(name);
    writeSafetensors(path, f);
    return path;
}

template <typename F> void expectImportError(F fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

} // namespace gwb::engine::import_test
