// ModelConfig JSON, validation messages and parameter counts (model-spec.md numbers).

#include "engine_test_util.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/model.h"

#include <gtest/gtest.h>

using namespace gwb::engine;

namespace {

std::string configPath(const std::string& name) {
    return std::string(GWB_SOURCE_DIR) + "/resources/configs/" + name;
}

void expectError(const std::string& json, const std::string& fragment) {
    try {
        (void)configFromJson(json);
        FAIL() << "accepted: " << json;
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
}

} // namespace

TEST(Config, PaperSixLayerCountsAreExact) {
    const ParameterCounts g = countParameters(loadConfigFile(configPath("paper-6L-128-grassmann.json")));
    EXPECT_EQ(g.total, 12607168);
    for (int64_t b : g.perBlock)
        EXPECT_EQ(b, 793376);
    const ParameterCounts t = countParameters(loadConfigFile(configPath("paper-6L-128-transformer.json")));
    EXPECT_EQ(t.total, 12585472);
    for (int64_t b : t.perBlock)
        EXPECT_EQ(b, 789760);
}

TEST(Config, PaperTwelveLayerCounts) {
    // 12 blocks, Lmax 256: embeddings 30522*256 + 256*256, final LayerNorm 512.
    const ModelConfig g = loadConfigFile(configPath("paper-12L-256-grassmann.json"));
    const ModelConfig t = loadConfigFile(configPath("paper-12L-256-transformer.json"));
    EXPECT_EQ(g.nLayers, 12);
    EXPECT_EQ(g.maxLen, 256);
    EXPECT_EQ(countParameters(g).total, 30522 * 256 + 256 * 256 + 12 * 793376 + 512);
    EXPECT_EQ(countParameters(t).total, 30522 * 256 + 256 * 256 + 12 * 789760 + 512);
}

TEST(Config, PreNormBlockWithMixerLayerNorm) {
    ModelConfig c = loadConfigFile(configPath("paper-6L-128-grassmann.json"));
    c.norm = NormPlacement::Pre;
    c.mixerLayerNorm = true;
    EXPECT_EQ(countParameters(c).perBlock.at(0), 793888);
}

TEST(Config, AustenConfigs) {
    const ModelConfig g = loadConfigFile(configPath("austen-6L-256-grassmann.json"));
    EXPECT_EQ(g.vocabSize, 8000);
    EXPECT_EQ(g.maxLen, 256);
    EXPECT_EQ(g.layerOffsets, std::vector<std::vector<int>>(6, {1, 2, 4, 8, 12, 16}));
    EXPECT_DOUBLE_EQ(g.dropout, 0.1);
    EXPECT_EQ(loadConfigFile(configPath("austen-6L-256-transformer.json")).kind, ModelKind::Transformer);
}

TEST(Config, InstantiatedParameterCountMatchesFormula) {
    for (const ModelConfig& c : test::allVariants()) {
        const Model m = Model::init(c, 1, nullptr, "cpu");
        EXPECT_EQ(m.parameterCount(), countParameters(c).total) << test::variantName(c);
        const auto params = m.parameters();
        const auto specs = parameterSpecs(c);
        ASSERT_EQ(params.size(), specs.size()) << test::variantName(c);
        for (const auto& s : specs) {
            ASSERT_TRUE(params.count(s.name)) << s.name;
            EXPECT_EQ(params.at(s.name).shape, s.shape) << s.name;
        }
    }
}

TEST(Config, JsonRoundTripIsExact) {
    for (const ModelConfig& c : test::allVariants()) {
        const std::string json = configToJson(c);
        EXPECT_EQ(configToJson(configFromJson(json)), json) << json;
    }
}

TEST(Config, PerLayerScheduleIsStoredExplicitly) {
    const ModelConfig c =
        configFromJson(R"({"kind":"grassmann","n_layers":4,"offsets":{"schedule":"per_layer","list":[1,2,4,8]}})");
    EXPECT_EQ(c.layerOffsets, (std::vector<std::vector<int>>{{1}, {2}, {4}, {8}}));
    EXPECT_NE(configToJson(c).find("explicit"), std::string::npos);
    const ModelConfig all =
        configFromJson(R"({"kind":"grassmann","n_layers":2,"offsets":{"schedule":"all","set":[3,5]}})");
    EXPECT_EQ(all.layerOffsets, (std::vector<std::vector<int>>{{3, 5}, {3, 5}}));
    EXPECT_EQ(configFromJson(R"({"kind":"grassmann","n_layers":3})").layerOffsets.size(), 3u);
}

TEST(Config, ErrorsNameTheField) {
    expectError(R"({"kind":"grassmann","d_model":0})", "'d_model'");
    expectError(R"({"kind":"lstm"})", "'kind'");
    expectError(R"({"kind":"grassmann","reduced":300})", "'reduced'");
    expectError(R"({"kind":"transformer","n_heads":3})", "'n_heads'");
    expectError(R"({"kind":"grassmann","dropout":1.5})", "'dropout'");
    expectError(R"({"kind":"grassmann","norm":"sandwich"})", "'norm'");
    expectError(R"({"kind":"grassmann","gate":"other"})", "'gate'");
    expectError(R"({"kind":"grassmann","empty":"nan"})", "'empty'");
    expectError(R"({"kind":"grassmann","d_modle":256})", "'d_modle'");
    expectError(R"({"kind":"grassmann","vocab_size":"big"})", "'vocab_size'");
    expectError(R"({"kind":"grassmann","n_layers":2,"offsets":{"schedule":"per_layer","list":[1]}})", "'offsets.list'");
    expectError(R"({"kind":"grassmann","offsets":{"schedule":"all","set":[2,1]}})", "ascending");
    expectError(R"({"kind":"grassmann","offsets":{"schedule":"all","set":[0]}})", "'offsets.set'");
    expectError(R"({"kind":"transformer","offsets":[1]})", "'offsets'");
    expectError(R"({"kind":"grassmann","mixer_layer_norm":true})", "'mixer_layer_norm'");
    expectError(R"({"kind":"grassmann",)", "invalid JSON");
}

// Found by tests/fuzz/fuzz_config (libFuzzer): a number too large for a double made the JSON
// library throw its own out_of_range exception instead of the documented std::invalid_argument.
TEST(Config, FuzzFoundNumberOverflowIsInvalidJson) {
    expectError("33333333333e333]]3333", "invalid JSON");
    expectError(R"({"kind": "grassmann", "dropout": 1e999})", "invalid JSON");
}
