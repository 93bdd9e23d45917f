// The Features view's runs (gwb/engine/feature_runs.h), without Qt: a dictionary that names no
// weights fits the open model by its shape, its activations per token of the run's trace, a
// dictionary of other weights refused naming both, and a dashboard over a corpus or a missing file.
#include "gwb/engine/feature_runs.h"

#include "gwb/engine/model_store.h"
#include "gwb/engine/tracer.h"

#include "features_test_util.h"

#include <gtest/gtest.h>

using namespace gwb::engine;
using gwb::engine::test::bundledGrassmann;
using gwb::engine::test::smallDictionary;

TEST(FeatureRuns, ActivationsOnTheRunsTraceAndADictionaryOfOtherWeightsRefused) {
    ModelStore store;
    const ModelOpener open = plainModelOpener(store);
    FeatureModels models;
    models.paths[0] = std::string(GWB_SOURCE_DIR) + "/resources/models/grassmann-austen.gwb";
    models.device = "cpu";
    const Model& m = bundledGrassmann();
    models.traces[0] = trace(m, "It is a truth universally acknowledged");
    auto dict = std::make_shared<Dictionary>(smallDictionary(m.config().dModel, 24, "relu", 0));
    dict->config.modelName = m.displayName();
    const FeatureDataPtr f = runFeatureActivations(open, "/dicts/small", dict, models);
    ASSERT_TRUE(f->error.empty()) << f->error;
    EXPECT_EQ(f->path, "/dicts/small");
    EXPECT_EQ(f->site, "resid.1");
    EXPECT_EQ(f->dSae, 24);
    ASSERT_EQ(static_cast<int64_t>(f->perToken.size()), models.traces[0]->length());
    for (const auto& row : f->perToken)
        for (size_t i = 1; i < row.size(); ++i)
            EXPECT_GE(row[i - 1].second, row[i].second); // most active first
    EXPECT_EQ(f->featureName(3), "feature.resid.1.3");

    // A dictionary that names other weights: refused, naming what it wants and what is open.
    auto other = std::make_shared<Dictionary>(*dict);
    other->config.modelHash = "0123456789abcdef0123";
    const FeatureDataPtr refused = runFeatureActivations(open, "/dicts/other", other, models);
    EXPECT_NE(refused->error.find("(weights 0123456789ab)"), std::string::npos) << refused->error;
    EXPECT_NE(refused->error.find("none has its weights"), std::string::npos) << refused->error;
    EXPECT_THROW(fitDictionary(open, *other, models), std::invalid_argument);

    // No trace yet: said so.
    FeatureModels noRun = models;
    noRun.traces[0].reset();
    EXPECT_EQ(runFeatureActivations(open, "/dicts/small", dict, noRun)->error, "run a prompt to see its features");

    // A dashboard over a corpus file, and a corpus file that is not there.
    const gwb::engine::test::TempDir dir;
    const FeatureDashboardRun d =
        runFeatureDashboard(open, dict, 3, models, {gwb::engine::test::corpusFile(dir, 20)}, 8);
    ASSERT_TRUE(d.error.empty()) << d.error;
    EXPECT_EQ(d.feature, 3);
    EXPECT_EQ(d.corpus, "corpus.txt (first 8 windows)");
    EXPECT_GT(d.rows, 0);
    const FeatureDashboardRun missing = runFeatureDashboard(open, dict, 3, models, {dir.file("missing.txt")});
    EXPECT_NE(missing.error.find("missing.txt' does not exist"), std::string::npos) << missing.error;
}
