// The model store (gwb/engine/model_store.h): one load per (file, device), shared by every caller
// and thread; a rewritten file, or other import options, load again; failures are not kept.
#include "gwb/engine/model_store.h"

#include "gwb/engine/features.h"

#include "engine_test_util.h"
#include "graph_test_util.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace gwb::engine;
namespace fs = std::filesystem;

namespace {
fs::path tempDir(const std::string& name) {
    const fs::path d = fs::temp_directory_path() / ("gwb-model-store-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}
} // namespace

TEST(ModelStore, LoadsAFileOncePerDeviceForEveryCallerAndThread) {
    const fs::path dir = tempDir("once");
    const std::string path = (dir / "m.gwb").string();
    Model::init(test::tinyConfig(ModelKind::Grassmann), 3, nullptr, "cpu").save(path);
    ModelStore store;
    const StoredModel a = store.get(path, "cpu");
    EXPECT_EQ(store.loads(), 1);
    EXPECT_EQ(a.path, fs::absolute(path).lexically_normal().string());
    // Another spelling of the same file, from several threads at once: still one load.
    std::vector<std::thread> threads;
    std::vector<StoredModel> got(4);
    for (size_t i = 0; i < got.size(); ++i)
        threads.emplace_back([&, i] { got[i] = store.get((dir / "." / "m.gwb").string(), "cpu"); });
    for (std::thread& t : threads)
        t.join();
    EXPECT_EQ(store.loads(), 1);
    for (const StoredModel& g : got)
        EXPECT_EQ(g.model.config().dModel, a.model.config().dModel);
    // The weights' hash comes with the stored model: a dictionary's model is found by it.
    const std::string hash = a.weightsHash();
    EXPECT_EQ(hash.size(), 16u);
    EXPECT_EQ(got[0].weightsHash(), hash);
    EXPECT_EQ(modelWeightsHash(Model::load(path, "cpu")), hash);
    // Another device is another model (cpu vs auto on this machine both load).
    store.get(path, "auto");
    EXPECT_EQ(store.loads(), 2);
    store.clear();
    store.get(path, "cpu");
    EXPECT_EQ(store.loads(), 3);
    fs::remove_all(dir);
}

TEST(ModelStore, ARewrittenFileLoadsAgainAndAFailureIsNotKept) {
    const fs::path dir = tempDir("rewrite");
    const std::string path = (dir / "m.gwb").string();
    ModelConfig c = test::tinyConfig(ModelKind::Grassmann);
    Model::init(c, 3, nullptr, "cpu").save(path);
    ModelStore store;
    EXPECT_EQ(store.get(path, "cpu").model.config().dFF, c.dFF);
    c.dFF += 8; // a different file at the same path
    Model::init(c, 4, nullptr, "cpu").save(path);
    EXPECT_EQ(store.get(path, "cpu").model.config().dFF, c.dFF);
    EXPECT_EQ(store.loads(), 2);
    // Not a model: the error names the file; the next call tries again and succeeds once fixed.
    const std::string bad = (dir / "bad.gwb").string();
    std::ofstream(bad) << "not a model";
    try {
        store.get(bad, "cpu");
        FAIL() << "a text file loaded as a model";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("bad.gwb"), std::string::npos) << e.what();
    }
    Model::init(c, 5, nullptr, "cpu").save(bad);
    EXPECT_EQ(store.get(bad, "cpu").model.config().dFF, c.dFF);
    EXPECT_THROW(store.get((dir / "missing.gwb").string(), "cpu"), std::runtime_error);
    EXPECT_THROW(store.get("", "cpu"), std::runtime_error);
    fs::remove_all(dir);
}

TEST(ModelStore, TheProcessStoreIsOne) {
    EXPECT_EQ(ModelStore::process().get(), ModelStore::process().get());
}

// The Graph view's hover asks for many features of the same two sets: the store keeps the sets used
// last, loads a set again when its files change, and drops the least recently used beyond two (a
// handle given out stays valid).
TEST(ModelStore, KeepsTheTranscoderSetsLastUsedAndLoadsAChangedOneAgain) {
    const fs::path dir = tempDir("sets");
    const Model m = test::randomModel(test::tinyConfig(ModelKind::Grassmann), 3);
    auto writeSet = [&](const std::string& name, uint32_t seed) {
        const TranscoderSet set = test::randomTranscoders(m, 8, "topk", 2, seed);
        for (size_t l = 0; l < set.layers.size(); ++l) {
            const fs::path layer = dir / name / transcoderFolder(static_cast<int>(l));
            fs::create_directories(layer);
            saveDictionary(set.layers[l], layer.string());
        }
        return (dir / name).string();
    };
    const std::string a = writeSet("a", 1), b = writeSet("b", 2), c = writeSet("c", 3);
    ModelStore store;
    const std::shared_ptr<const TranscoderSet> first = store.transcoders(a);
    ASSERT_EQ(first->layers.size(), static_cast<size_t>(m.config().nLayers));
    EXPECT_EQ(store.transcoders((dir / "." / "a").string()), first); // any spelling: the same set
    store.transcoders(b);
    EXPECT_EQ(store.transcoderLoads(), 2);
    EXPECT_EQ(store.transcoders(a), first); // a was used after b
    store.transcoders(c);                   // a third set: b, used least recently, is dropped
    EXPECT_EQ(store.transcoderLoads(), 3);
    EXPECT_EQ(store.transcoders(a), first);
    EXPECT_EQ(store.transcoderLoads(), 3);
    store.transcoders(b);
    EXPECT_EQ(store.transcoderLoads(), 4);
    // A layer rewritten: the set is read again; the old handle still holds the old weights.
    const std::vector<float> before = first->layers[0].wEnc.data;
    writeSet("a", 9);
    const std::shared_ptr<const TranscoderSet> again = store.transcoders(a);
    EXPECT_NE(again, first);
    EXPECT_NE(again->layers[0].wEnc.data, before);
    EXPECT_EQ(first->layers[0].wEnc.data, before);
    EXPECT_THROW(store.transcoders((dir / "nothing").string()), std::exception);
    fs::remove_all(dir);
}
