// A model's transcoder set (gwb/engine/features.h: trainTranscoderSet, loadTranscoderSet): one
// transcoder per block, ffn_in.L -> ffn.L, in DIR/ffn.L with DIR/transcoders.json; a run stopped
// in a layer goes on from there and ends with the uninterrupted run's weights; a folder of
// per-layer dictionaries without the index is a set too; a missing layer is named.

#include "features_test_util.h"

#include "gwb/engine/features.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace gwb::engine;
namespace fs = std::filesystem;

namespace {

using test::bundledGrassmann;
using test::corpusFile;

FeatureTrainOptions setOptions(const std::string& file) {
    FeatureTrainOptions o;
    o.files = {file};
    o.dSae = 32;
    o.k = 4;
    o.tokens = 3 * 128;
    o.batch = 128;
    o.contextSize = 32;
    o.bufferWindows = 4;
    o.device = "cpu";
    return o;
}

} // namespace

TEST(TranscoderSet, OneTranscoderPerBlockStoppedAndResumedLikeAnUninterruptedRun) {
    const Model& m = bundledGrassmann();
    const int N = static_cast<int>(m.config().nLayers);
    test::TempDir tmp;
    const FeatureTrainOptions o = setOptions(corpusFile(tmp, 80));
    const std::string whole = tmp.file("whole"), stopped = tmp.file("stopped");
    ASSERT_TRUE(trainTranscoderSet(m, o, whole));
    const TranscoderSet a = loadTranscoderSet(whole, &m);
    ASSERT_EQ(static_cast<int>(a.layers.size()), N);
    EXPECT_EQ(a.modelName, m.displayName());
    EXPECT_EQ(a.modelHash, modelWeightsHash(m));
    for (int l = 0; l < N; ++l) {
        const Dictionary& d = a.layers[static_cast<size_t>(l)];
        EXPECT_EQ(d.config.site, "ffn_in." + std::to_string(l));
        EXPECT_EQ(d.config.targetSite, "ffn." + std::to_string(l));
        EXPECT_TRUE(fs::exists(fs::path(whole) / transcoderFolder(l) / "cfg.json"));
        EXPECT_FALSE(fs::exists(fs::path(whole) / transcoderFolder(l) / "state"));
    }
    EXPECT_NE(a.layers[0].wDec.data, a.layers[1].wDec.data);

    // Stopped at the second step of layer 2: layers 0 and 1 are saved, layer 2 keeps its state.
    const bool done = trainTranscoderSet(
        m, o, stopped, [](int layer, const FeatureTrainProgress& p) { return !(layer == 2 && p.step >= 2); });
    EXPECT_FALSE(done);
    EXPECT_TRUE(fs::exists(fs::path(stopped) / "ffn.1" / "cfg.json"));
    EXPECT_FALSE(fs::exists(fs::path(stopped) / "ffn.2" / "cfg.json"));
    EXPECT_TRUE(fs::exists(fs::path(stopped) / "ffn.2" / "state" / "state.json"));
    try { // the index lists what is done; a model needs every layer
        loadTranscoderSet(stopped, &m);
        ADD_FAILURE() << "an incomplete set was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("no transcoder of layer 2"), std::string::npos) << e.what();
    }
    // Going on: the weights of the uninterrupted run, every layer.
    ASSERT_TRUE(trainTranscoderSet(m, o, stopped));
    const TranscoderSet b = loadTranscoderSet(stopped, &m);
    for (int l = 0; l < N; ++l) {
        EXPECT_EQ(b.layers[static_cast<size_t>(l)].wDec.data, a.layers[static_cast<size_t>(l)].wDec.data) << l;
        EXPECT_EQ(b.layers[static_cast<size_t>(l)].wEnc.data, a.layers[static_cast<size_t>(l)].wEnc.data) << l;
    }

    // Without the index (a set made elsewhere, one folder per layer): found by the folders' sites.
    fs::remove(fs::path(stopped) / "transcoders.json");
    EXPECT_EQ(loadTranscoderSet(stopped, &m).layers.size(), static_cast<size_t>(N));
    fs::remove_all(fs::path(stopped) / "ffn.3");
    try {
        loadTranscoderSet(stopped, &m);
        ADD_FAILURE() << "a set without layer 3 was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("no transcoder of layer 3"), std::string::npos) << e.what();
    }
    // Another model's set is refused by name.
    const Model other = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/transformer-austen.gwb", "cpu");
    EXPECT_THROW(loadTranscoderSet(whole, &other), std::invalid_argument);
    EXPECT_THROW(loadTranscoderSet(tmp.file("nowhere")), std::invalid_argument);
}
