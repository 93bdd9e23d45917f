// Hugging Face GPT-2 folders (the hf-gpt2 layout): a save_pretrained folder opens as it is, with
// Conv1D weights transposed, the transformer.* prefix or none, the old causal-mask buffers, GELU's
// tanh approximation, and the config flags gwb cannot honour refused by name. The comparison
// with transformers' own forward is tests/python/test_ecosystem_transformers_gpt2.py (pip leg).

#include "import_test_util.h"

#include "gwb/engine/config_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gwb::engine {
namespace {

using namespace import_test;

ModelConfig gpt2Config() {
    ModelConfig c = tinyConfig("hf-gpt2", ModelKind::Transformer);
    c.nHeads = 4;
    return c;
}

const char* kConfig = R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_embd": 16, "n_head": 4, "n_inner": null,
  "n_layer": 2, "n_positions": 40, "reorder_and_upcast_attn": false, "scale_attn_by_inverse_layer_idx": false,
  "scale_attn_weights": true, "tie_word_embeddings": true, "vocab_size": 50, "add_cross_attention": false})";

/// A save_pretrained-like folder: config.json (with `edit` applied to its text) and the weights
/// under `prefix` (GPT2LMHeadModel: "transformer.", no lm_head).
std::string writeFolder(const TempDir& dir, const Model& ref, const std::string& name, const std::string& prefix,
                        const std::string& config = kConfig, bool oldBuffers = false) {
    Tensors t;
    for (auto& [k, v] : familyTensors(ref, "hf-gpt2"))
        if (k != "lm_head.weight") t[prefix + k] = v;
    if (oldBuffers) // transformers before 4.2x: the causal mask and the masked-score fill value
        for (int l = 0; l < 2; ++l) {
            FloatArray mask = FloatArray::zeros({1, 1, 40, 40});
            for (int i = 0; i < 40; ++i)
                for (int j = 0; j <= i; ++j)
                    mask.data[static_cast<size_t>(i * 40 + j)] = 1.0f;
            t[prefix + "h." + std::to_string(l) + ".attn.bias"] = mask;
            t[prefix + "h." + std::to_string(l) + ".attn.masked_bias"] = FloatArray({}, {-1e4f});
        }
    std::filesystem::create_directories(dir.file(name));
    writeFile(dir, t, name + "/model.safetensors");
    std::ofstream(dir.file(name + "/config.json")) << config;
    return dir.file(name);
}

const std::vector<int64_t> kIds{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};

TEST(HfGpt2, ASavePretrainedFolderOpensAsItIsWithTanhGelu) {
    const ModelConfig c = gpt2Config();
    EXPECT_EQ(c.activation, Activation::GeluTanh); // the layout's default
    EXPECT_EQ(c.norm, NormPlacement::Pre);
    const Model ref = randomModel(c, 7);
    TempDir dir;
    const std::string folder = writeFolder(dir, ref, "gpt2-tiny", "transformer.");
    const ImportedModel m = loadOrImportModel(folder, "cpu"); // a folder, no flags
    EXPECT_EQ(m.report.layout, "hf-gpt2");
    EXPECT_EQ(m.model.config().activation, Activation::GeluTanh);
    EXPECT_EQ(m.model.config().nHeads, 4);
    EXPECT_EQ(m.model.config().name, "gpt2-tiny");
    EXPECT_EQ(logits(m.model, kIds), logits(ref, kIds));
    // The .gwb keeps the activation.
    m.model.save(dir.file("gpt2.gwb"));
    const Model again = Model::load(dir.file("gpt2.gwb"), "cpu");
    EXPECT_EQ(again.config().activation, Activation::GeluTanh);
    EXPECT_EQ(logits(again, kIds), logits(ref, kIds));
}

TEST(HfGpt2, BareKeysAndTheOldMaskBuffersOpenToo) {
    const Model ref = randomModel(gpt2Config(), 8);
    TempDir dir;
    const std::string folder = writeFolder(dir, ref, "bare", "", kConfig, /*oldBuffers=*/true);
    const ImportedModel m = importCheckpoint(folder);
    EXPECT_EQ(m.report.layout, "hf-gpt2");
    EXPECT_EQ(logits(m.model, kIds), logits(ref, kIds));
}

TEST(HfGpt2, TheActivationComesFromTheConfig) {
    ModelConfig exact = gpt2Config();
    exact.activation = Activation::Gelu;
    const Model ref = randomModel(exact, 9);
    TempDir dir;
    std::string config = kConfig;
    config.replace(config.find("gelu_new"), 8, "gelu");
    const ImportedModel m = importCheckpoint(writeFolder(dir, ref, "exact", "transformer.", config));
    EXPECT_EQ(m.model.config().activation, Activation::Gelu);
    EXPECT_EQ(logits(m.model, kIds), logits(ref, kIds));
    // The same weights read as tanh-GELU give other logits: the flag matters.
    const ImportedModel tanh = importCheckpoint(writeFolder(dir, ref, "tanh", "transformer."));
    EXPECT_NE(logits(tanh.model, kIds), logits(ref, kIds));
}

TEST(HfGpt2, FlagsGwbCannotHonourAreRefusedByName) {
    const Model ref = randomModel(gpt2Config(), 10);
    TempDir dir;
    const std::pair<std::string, std::string> cases[] = {
        {"\"scale_attn_by_inverse_layer_idx\": false", "\"scale_attn_by_inverse_layer_idx\": true"},
        {"\"scale_attn_weights\": true", "\"scale_attn_weights\": false"},
        {"\"add_cross_attention\": false", "\"add_cross_attention\": true"},
        {"\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false"},
        {"\"gelu_new\"", "\"relu\""},
    };
    int i = 0;
    for (const auto& [from, to] : cases) {
        std::string config = kConfig;
        config.replace(config.find(from), from.size(), to);
        const std::string flag = to.substr(1, to.find('"', 1) - 1);
        const std::string folder = writeFolder(dir, ref, "refused" + std::to_string(i++), "transformer.", config);
        expectImportError([&] { importCheckpoint(folder); }, flag == "relu" ? "activation_function" : flag);
    }
}

TEST(HfGpt2, ActivationRoundTripsInTheConfigJson) {
    ModelConfig c = gpt2Config();
    const ModelConfig back = configFromJson(configToJson(c));
    EXPECT_EQ(back.activation, Activation::GeluTanh);
    c.activation = Activation::Gelu;
    EXPECT_EQ(configToJson(c).find("activation"), std::string::npos); // the default is not written
    EXPECT_THROW(configFromJson(R"({"kind": "transformer", "activation": "swish"})"), std::invalid_argument);
}

} // namespace
} // namespace gwb::engine
