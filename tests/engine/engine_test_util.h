#pragma once
// Small configs and helpers shared by the engine tests.

#include "gwb/engine/config.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace gwb::engine::test {

/// A tiny config of either kind (fast on CPU): V=37, d=16, r=6, 2 layers, d_ff=24, Lmax=24.
inline ModelConfig tinyConfig(ModelKind kind) {
    ModelConfig c;
    c.kind = kind;
    c.name = "tiny";
    c.vocabSize = 37;
    c.dModel = 16;
    c.reduced = 6;
    c.nLayers = 2;
    c.dFF = 24;
    c.maxLen = 24;
    c.nHeads = 2;
    c.dropout = 0.0;
    if (kind == ModelKind::Grassmann) c.layerOffsets = {{1, 2, 4}, {1, 3, 8}};
    return c;
}

/// Every variant worth testing: both kinds x post/pre (pre with and without mixer LayerNorm),
/// plus Grassmann gate geometry_only and empty=bias.
inline std::vector<ModelConfig> allVariants() {
    std::vector<ModelConfig> out;
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        ModelConfig c = tinyConfig(kind);
        out.push_back(c);
        c.norm = NormPlacement::Pre;
        out.push_back(c);
        c.mixerLayerNorm = true;
        out.push_back(c);
    }
    ModelConfig g = tinyConfig(ModelKind::Grassmann);
    g.gate = GateVariant::GeometryOnly;
    out.push_back(g);
    g.norm = NormPlacement::Pre;
    out.push_back(g);
    g = tinyConfig(ModelKind::Grassmann);
    g.empty = EmptyRule::Bias;
    g.pluckerEps = 1e-6;
    out.push_back(g);
    // The arrangements without a skip around the mixer (Wake2vec, youdie006's pre_norm) and the
    // mean-then-normalise aggregation (Arledge's fused kernel).
    g = tinyConfig(ModelKind::Grassmann);
    g.norm = NormPlacement::PostMix;
    out.push_back(g);
    g.norm = NormPlacement::PreMix;
    g.empty = EmptyRule::Bias;
    out.push_back(g);
    g = tinyConfig(ModelKind::Grassmann);
    g.aggregation = Aggregation::MeanThenNormalize;
    g.empty = EmptyRule::Bias;
    out.push_back(g);
    g.norm = NormPlacement::Pre;
    g.mixerLayerNorm = true;
    g.empty = EmptyRule::Zero;
    out.push_back(g);
    // GrassmannGPTv3's mixer stages (Arledge's train.py --model grassmann): LN of z, raw planes
    // scaled and averaged, LN of g, a gate of x alone, W_out(x + a g s).
    g = tinyConfig(ModelKind::Grassmann);
    g.norm = NormPlacement::Pre;
    g.gate = GateVariant::Residual;
    g.aggregation = Aggregation::Mean;
    g.stages.reductionNorm = true;
    g.stages.pluckerScale = 1.0 / std::sqrt(static_cast<double>(g.reduced * (g.reduced - 1) / 2));
    g.stages.featureNorm = true;
    g.stages.gateFromInput = true;
    g.stages.mixScale = 1.0 / std::sqrt(6.0);
    g.stages.outputProjection = true;
    out.push_back(g);
    // The CausalGrassmannMixer family (training/grassman.py): planes past x current, each
    // normalised plane through an MLP, the outputs averaged; pre-norm, paper gate.
    g = tinyConfig(ModelKind::Grassmann);
    g.norm = NormPlacement::Pre;
    g.aggregation = Aggregation::PerOffsetMlp;
    g.dGeom = 10;
    g.pluckerEps = 1e-6;
    g.stages.wedgePastFirst = true;
    out.push_back(g);
    return out;
}

inline std::string variantName(const ModelConfig& c) {
    return std::string(kindName(c.kind)) + "/" + normName(c.norm) + (c.mixerLayerNorm ? "+mixLN" : "") + "/" +
           gateName(c.gate) + "/" + emptyName(c.empty) +
           (c.aggregation == Aggregation::MeanThenNormalize ? "/meanfirst" : "") +
           (c.aggregation == Aggregation::Mean ? "/mean" : "") +
           (c.aggregation == Aggregation::PerOffsetMlp ? "/mlp" : "") + (c.stages.any() ? "/stages" : "");
}

/// A readable test name for a parameter that indexes allVariants(): the variant's name and the
/// index, with every character that is not a letter or digit made '_'.
inline std::string variantTestName(size_t index) {
    std::string name = variantName(allVariants().at(index)) + "_" + std::to_string(index);
    for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return name;
}

/// A 284-piece SentencePiece model of the corpus "the cat sat on the mat and the dog ran <i % 17>
/// times" (400 lines), as trainSentencePiece made it (unigram, byte fallback, identity
/// normalisation, split digits, seed 0) with spm_train's --num_threads=1: checked in, so that
/// tests needing a trained tokenizer run where the spm_train program is not installed (a GPU
/// machine with a pip PyTorch). tests/engine/data/README.md says how it was made.
inline TokenizerPtr catTokenizer() {
    std::ifstream in(std::string(GWB_SOURCE_DIR) + "/tests/engine/data/cat-284.model", std::ios::binary);
    const std::string proto((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return makeSentencePieceTokenizer(proto);
}

/// A fresh temporary folder removed when the object goes out of scope.
struct TempDir {
    std::filesystem::path path;
    TempDir() {
        path = std::filesystem::temp_directory_path() /
               ("gwb-engine-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
        std::filesystem::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
    static int& counter() {
        static int n = 0;
        return n;
    }
};

inline /// Every parameter random and non-zero: weights N(0, 1/fan_in), biases N(0, 0.1^2), LayerNorm
       /// weights 1 + N(0, 0.2^2) and biases N(0, 0.1^2), embeddings N(0, 0.5^2).
    Model
    randomModel(const ModelConfig& config, uint32_t seed) {
    std::map<std::string, FloatArray> params = Model::init(config, seed, nullptr, "cpu").parameters();
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& [name, arr] : params) {
        const bool isNorm = name.find(".ln") != std::string::npos || name.rfind("ln", 0) == 0;
        const bool isWeight = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
        const float fanIn = static_cast<float>(arr.shape.back());
        for (float& v : arr.data) {
            const float n = normal(rng);
            if (isNorm && isWeight)
                v = 1.0f + 0.2f * n;
            else if (!isWeight || isNorm)
                v = 0.1f * n;
            else if (name.find("embed") != std::string::npos)
                v = 0.5f * n;
            else
                v = n / std::sqrt(fanIn);
        }
    }
    return Model::fromParameters(config, params, nullptr, "cpu");
}

} // namespace gwb::engine::test
