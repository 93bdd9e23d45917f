// Sparse dictionaries (gwb/engine/features.h): TopK encoding by hand (the files: features_files_test.cpp); a dictionary
// that reconstructs exactly recovers all of the loss; training repeats exactly from its seed, and a run stopped and
// resumed ends with the uninterrupted run's weights; offset sites leave out rows t < D.
// (tests/python/test_gwb_features.py checks the trainer against a PyTorch loop, the figures by recomputation, the top
// contexts by brute force and planted directions.)

#include "engine_test_util.h"
#include "features_test_util.h"
#include "model/model_impl.h"

#include "gwb/engine/features.h"
#include "gwb/engine/hooks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <optional>

using namespace gwb::engine;
using gwb::engine::test::smallDictionary;

namespace {

const Model& bundled() {
    return test::bundledGrassmann();
}

using test::corpusFile;

/// A short CPU run on `file`: `steps` steps of `batch` rows, windows of 64 tokens.
FeatureTrainOptions shortRun(const std::string& site, const std::string& file, int64_t dSae, int64_t k, int64_t steps,
                             int64_t batch) {
    FeatureTrainOptions o;
    o.site = site;
    o.files = {file};
    o.dSae = dSae;
    o.k = k;
    o.tokens = steps * batch;
    o.batch = batch;
    o.contextSize = 64;
    o.device = "cpu";
    return o;
}

} // namespace

TEST(Features, EncodeKeepsTheKLargestOfTheRelu) {
    const Dictionary d = smallDictionary(4, 6, "topk", 2);
    const FloatArray x({2, 4}, {1.0f, -0.5f, 0.25f, 2.0f, -1.0f, 0.0f, 0.5f, 0.75f});
    const FloatArray z = d.encode(x);
    ASSERT_EQ(z.shape, (std::vector<int64_t>{2, 6}));
    for (int64_t r = 0; r < 2; ++r) {
        std::vector<float> pre(6);
        for (int64_t j = 0; j < 6; ++j) {
            double s = d.bEnc.data[static_cast<size_t>(j)];
            for (int64_t i = 0; i < 4; ++i)
                s += (x.at2(r, i) - d.bDec.data[static_cast<size_t>(i)]) * d.wEnc.at2(i, j);
            pre[static_cast<size_t>(j)] = static_cast<float>(std::max(0.0, s));
        }
        std::vector<float> sorted = pre;
        std::sort(sorted.rbegin(), sorted.rend());
        int active = 0;
        for (int64_t j = 0; j < 6; ++j) {
            const float want = pre[static_cast<size_t>(j)] >= sorted[1] ? pre[static_cast<size_t>(j)] : 0.0f;
            EXPECT_NEAR(z.at2(r, j), want, 1e-5) << r << "," << j;
            active += z.at2(r, j) > 0;
        }
        EXPECT_LE(active, 2);
    }
    // decode is z W_dec + b_dec
    const FloatArray xhat = d.decode(z);
    for (int64_t i = 0; i < 4; ++i) {
        double s = d.bDec.data[static_cast<size_t>(i)];
        for (int64_t j = 0; j < 6; ++j)
            s += z.at2(0, j) * d.wDec.at2(j, i);
        EXPECT_NEAR(xhat.at2(0, i), s, 1e-5);
    }
    EXPECT_EQ(d.featureName(5), "feature.resid.1.5");
    EXPECT_THROW(d.encode(FloatArray::zeros({2, 3})), std::invalid_argument);
}

TEST(Features, AnExactReconstructionRecoversAllOfTheLoss) {
    // W_enc = [I, -I], ReLU, W_dec = [I; -I]: x^ = relu(x) - relu(-x) = x for every row.
    const Model& m = bundled();
    const int64_t d = m.config().dModel;
    Dictionary dict;
    dict.config.architecture = "relu";
    dict.config.site = "mixer.2";
    dict.config.dIn = d;
    dict.config.dSae = 2 * d;
    dict.wEnc = FloatArray::zeros({d, 2 * d});
    dict.wDec = FloatArray::zeros({2 * d, d});
    dict.bEnc = FloatArray::zeros({2 * d});
    dict.bDec = FloatArray::zeros({d});
    for (int64_t i = 0; i < d; ++i) {
        dict.wEnc.data[static_cast<size_t>(i * 2 * d + i)] = 1;
        dict.wEnc.data[static_cast<size_t>(i * 2 * d + d + i)] = -1;
        dict.wDec.data[static_cast<size_t>(i * d + i)] = 1;
        dict.wDec.data[static_cast<size_t>((d + i) * d + i)] = -1;
    }
    test::TempDir dir;
    const DictionaryQuality q = evaluateDictionary(m, dict, {corpusFile(dir)}, 64, 4);
    EXPECT_GT(q.rows, 100);
    EXPECT_NEAR(q.explainedVariance, 1.0, 1e-6);
    EXPECT_NEAR(q.lossSpliced, q.lossClean, 1e-5);
    EXPECT_GT(q.lossAblated, q.lossClean + 0.01); // mean ablation of mixer.2 costs something to recover
    EXPECT_NEAR(q.lossRecovered, 1.0, 1e-4);
}

TEST(Features, TheAblationBaselineAtAGrassmannResidualKeepsPositionsApart) {
    // Issue 65: one vector at every position of resid.3 (zeros, or the overall mean) makes every
    // position alike; block 3 then pairs identical reduced vectors and the hook check says its
    // planes are rounding noise, so a loss recovered against it rests on noise. The per-position
    // mean over the other held-out windows keeps positions apart: the check is silent, the ablated loss
    // is defined and equals a plain loop with that baseline, and loss recovered follows from it.
    const Model& m = bundled();
    const int64_t d = m.config().dModel;
    Dictionary dict;
    dict.config.architecture = "relu";
    dict.config.site = "resid.3";
    dict.config.dIn = d;
    dict.config.dSae = 2 * d;
    dict.wEnc = FloatArray::zeros({d, 2 * d});
    dict.wDec = FloatArray::zeros({2 * d, d});
    dict.bEnc = FloatArray::zeros({2 * d});
    dict.bDec = FloatArray::zeros({d});
    for (int64_t i = 0; i < d; i += 2) { // half the channels: a reconstruction that loses something
        dict.wEnc.data[static_cast<size_t>(i * 2 * d + i)] = 1;
        dict.wEnc.data[static_cast<size_t>(i * 2 * d + d + i)] = -1;
        dict.wDec.data[static_cast<size_t>(i * d + i)] = 1;
        dict.wDec.data[static_cast<size_t>((d + i) * d + i)] = -1;
    }
    test::TempDir dir;
    const std::string corpus = corpusFile(dir);
    const int64_t ctx = 48, windows = 6;
    const DictionaryQuality q = evaluateDictionary(m, dict, {corpus}, ctx, windows);
    EXPECT_EQ(std::string(DictionaryQuality::kAblation), "per-position mean of the other windows");
    EXPECT_TRUE(q.ablationNote.empty()) << q.ablationNote;
    ASSERT_TRUE(std::isfinite(q.lossAblated));
    // The plain loop: the windows' resid.3 read, each position's mean, every window run with it.
    const SiteActivations acts = readSiteActivations(m, "resid.3", {corpus}, ctx, 0);
    std::vector<std::vector<double>> sum;
    std::vector<int64_t> count;
    const int64_t W = std::min<int64_t>(windows, static_cast<int64_t>(acts.windowIds.size()));
    for (size_t r = 0; r < acts.window.size(); ++r) {
        if (acts.window[r] >= W) continue;
        const size_t t = static_cast<size_t>(acts.position[r]);
        if (sum.size() <= t)
            sum.resize(t + 1, std::vector<double>(static_cast<size_t>(d), 0.0)), count.resize(t + 1, 0);
        for (int64_t j = 0; j < d; ++j)
            sum[t][static_cast<size_t>(j)] += acts.rows.data[r * static_cast<size_t>(d) + static_cast<size_t>(j)];
        ++count[t];
    }
    double ce = 0;
    int64_t predicted = 0;
    std::vector<std::string> warnings, overallWarnings;
    // The overall mean of the same rows: one vector for every position.
    const double rows = static_cast<double>(std::accumulate(count.begin(), count.end(), int64_t{0}));
    std::vector<float> overall(static_cast<size_t>(d), 0.0f);
    for (int64_t j = 0; j < d; ++j) {
        double total = 0;
        for (const auto& at : sum)
            total += at[static_cast<size_t>(j)];
        overall[static_cast<size_t>(j)] = static_cast<float>(total / rows);
    }
    for (int64_t w = 0; w < W; ++w) {
        const auto& ids = acts.windowIds[static_cast<size_t>(w)];
        // Each position's mean over the OTHER windows: (sum - this window's own value) / (count - 1).
        SiteHook perPosition = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            FloatArray a = v;
            for (int64_t t = 0; t < v.dim(0); ++t)
                for (int64_t j = 0; j < d; ++j) {
                    const size_t i = static_cast<size_t>(t * d + j);
                    a.data[i] = static_cast<float>(
                        (sum[static_cast<size_t>(t)][static_cast<size_t>(j)] - static_cast<double>(v.data[i])) /
                        static_cast<double>(count[static_cast<size_t>(t)] - 1));
                }
            return a;
        };
        const FloatArray logits =
            runWithHooks(m, std::vector<int64_t>(ids.begin(), ids.end()), {{"resid.3", perPosition}}, &warnings);
        const int64_t V = logits.dim(1);
        for (size_t t = 0; t + 1 < ids.size(); ++t) {
            const float* row = logits.data.data() + t * static_cast<size_t>(V);
            const double mx = *std::max_element(row, row + V);
            double z = 0;
            for (int64_t k = 0; k < V; ++k)
                z += std::exp(static_cast<double>(row[k]) - mx);
            ce -= static_cast<double>(row[ids[t + 1]]) - mx - std::log(z);
            ++predicted;
        }
        SiteHook single = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
            FloatArray a = v;
            for (int64_t t = 0; t < v.dim(0); ++t)
                std::copy(overall.begin(), overall.end(), a.data.begin() + t * d);
            return a;
        };
        runWithHooks(m, std::vector<int64_t>(ids.begin(), ids.end()), {{"resid.3", single}}, &overallWarnings);
    }
    EXPECT_TRUE(warnings.empty()) << warnings.front();
    ASSERT_FALSE(overallWarnings.empty()); // one vector everywhere: the check says the planes are noise
    EXPECT_EQ(overallWarnings.front().find("mean-ablate instead"), std::string::npos) << overallWarnings.front();
    EXPECT_EQ(predicted, q.lossTokens);
    EXPECT_NEAR(q.lossAblated, ce / static_cast<double>(predicted), 1e-6 * q.lossAblated);
    if (q.lossAblated > q.lossClean) {
        EXPECT_NEAR(q.lossRecovered, (q.lossAblated - q.lossSpliced) / (q.lossAblated - q.lossClean), 1e-12);
    }
}

TEST(Features, TrainingRepeatsFromItsSeedAndResumesExactly) {
    const Model& m = bundled();
    test::TempDir dir;
    FeatureTrainOptions o = shortRun("resid.2", corpusFile(dir), 64, 4, 8, 256);
    o.bufferWindows = 4; // several buffers in 8 steps
    o.deadAfterTokens = 512;
    const FeatureTrainResult a = trainDictionary(m, o);
    const FeatureTrainResult b = trainDictionary(m, o);
    ASSERT_TRUE(a.complete);
    EXPECT_EQ(a.steps, 8);
    EXPECT_EQ(a.dictionary.wDec.data, b.dictionary.wDec.data);
    EXPECT_EQ(a.dictionary.bEnc.data, b.dictionary.bEnc.data);
    // Another seed, other weights.
    FeatureTrainOptions other = o;
    other.seed = 5;
    EXPECT_NE(trainDictionary(m, other).dictionary.wDec.data, a.dictionary.wDec.data);
    // Stopped after 3 steps (as Ctrl-C does), then resumed: the uninterrupted weights.
    o.stateDir = dir.file("state");
    const FeatureTrainResult stopped = trainDictionary(m, o, [](const FeatureTrainProgress& p) { return p.step < 3; });
    EXPECT_FALSE(stopped.complete);
    EXPECT_EQ(stopped.steps, 3);
    const FeatureTrainResult resumed = resumeDictionaryTraining(m, o.stateDir);
    ASSERT_TRUE(resumed.complete);
    EXPECT_EQ(resumed.steps, 8);
    EXPECT_EQ(resumed.dictionary.wDec.data, a.dictionary.wDec.data);
    EXPECT_EQ(resumed.dictionary.wEnc.data, a.dictionary.wEnc.data);
    EXPECT_EQ(resumed.dictionary.bDec.data, a.dictionary.bDec.data);
    // The same for ReLU + L1 with a resampling inside the resumed part.
    o.architecture = "relu";
    o.l1 = 0.5;
    o.deadAfterTokens = 256;
    o.stateDir.clear();
    const FeatureTrainResult reluA = trainDictionary(m, o);
    o.stateDir = dir.file("state-relu");
    ASSERT_FALSE(trainDictionary(m, o, [](const FeatureTrainProgress& p) { return p.step < 1; }).complete);
    EXPECT_EQ(resumeDictionaryTraining(m, o.stateDir).dictionary.wDec.data, reluA.dictionary.wDec.data);
    // The dictionary knows its model: another model's weights are refused by name.
    Model other2 = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/transformer-austen.gwb", "cpu");
    try {
        checkDictionaryFits(a.dictionary, other2);
        ADD_FAILURE() << "a dictionary of another model was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("was trained on model"), std::string::npos) << e.what();
    }
}

TEST(Features, BadOptionsAreRefusedByName) {
    const Model& m = bundled();
    test::TempDir dir;
    FeatureTrainOptions o;
    o.site = "resid.1";
    o.files = {corpusFile(dir)};
    o.tokens = 256;
    o.batch = 256;
    o.contextSize = 64;
    auto message = [&](FeatureTrainOptions x) {
        try {
            trainDictionary(m, x);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    FeatureTrainOptions x = o;
    x.site = "head.1.0";
    EXPECT_NE(message(x).find("a Grassmann model has no heads"), std::string::npos) << message(x);
    x = o;
    x.k = 2000;
    x.dSae = 100;
    EXPECT_NE(message(x).find("k (--k) must be at most d_sae (100); got 2000"), std::string::npos) << message(x);
    x = o;
    x.dSae = 0; // the option table's sentence, as the command line and Python give it
    EXPECT_NE(message(x).find("d_sae (--d-sae) must be an integer, at least 1; got 0"), std::string::npos)
        << message(x);
    x = o;
    x.contextSize = 100000;
    EXPECT_NE(message(x).find("context size 100000"), std::string::npos) << message(x);
    x = o;
    x.files = {dir.file("missing.txt")};
    EXPECT_NE(message(x).find("missing.txt"), std::string::npos) << message(x);
    x = o;
    { std::ofstream(dir.file("latin1.txt"), std::ios::binary) << "caf\xe9 au lait"; }
    x.files = {dir.file("latin1.txt")};
    EXPECT_NE(message(x).find("latin1.txt' is not UTF-8"), std::string::npos) << message(x);
    x = o;
    x.architecture = "jumprelu";
    EXPECT_NE(message(x).find("architecture (--architecture) is topk or relu; got 'jumprelu'"), std::string::npos)
        << message(x);
}

TEST(Features, OffsetSitesLeaveOutTheRowsWithoutAPair) {
    const Model& m = bundled();
    test::TempDir dir;
    const std::string file = corpusFile(dir);
    const int D = m.config().layerOffsets[1].back();
    const std::string site = "offset.1." + std::to_string(D);
    const SiteActivations a = readSiteActivations(m, site, {file}, 64, 0);
    const SiteActivations resid = readSiteActivations(m, "resid.1", {file}, 64, 0);
    int64_t want = 0;
    for (const auto& w : resid.windowIds)
        want += std::max<int64_t>(0, static_cast<int64_t>(w.size()) - D);
    EXPECT_EQ(a.rows.dim(0), want);
    EXPECT_EQ(a.rows.dim(1), hookSiteShape(m, site, 8).back());
    for (int64_t p : a.position)
        EXPECT_GE(p, D);
    // No zero rows (the rows t < D of the hook's value are all zero).
    for (int64_t i = 0; i < a.rows.dim(0); ++i) {
        double s = 0;
        for (int64_t j = 0; j < a.rows.dim(1); ++j)
            s += std::abs(a.rows.at2(i, j));
        ASSERT_GT(s, 0) << "row " << i;
    }
}

TEST(Features, EditsAreCausalTestsOfOneFeature) {
    const Model& m = bundled();
    test::TempDir dir;
    FeatureTrainOptions o = shortRun("resid.3", corpusFile(dir), 64, 4, 6, 512);
    const Dictionary d = trainDictionary(m, o).dictionary;
    const std::vector<int32_t> ids = m.tokenizer()->encodeIds("It is a truth universally acknowledged, that a single");
    const int32_t a = m.tokenizer()->encodeIds(" man").back(), w = m.tokenizer()->encodeIds(" woman").back();
    // The feature most active at the last token, and one silent there.
    FeatureEditResult probe;
    int64_t loud = -1, silent = -1;
    float best = 0;
    for (int64_t f = 0; f < d.config.dSae; ++f) {
        FeatureEdit e;
        e.feature = f;
        e.mode = "steer"; // value 0: nothing changes
        probe = runFeatureEdit(m, d, e, ids, a, w);
        EXPECT_EQ(probe.metricEdited, probe.metricClean) << f;
        if (probe.activation.back() > best) {
            best = probe.activation.back();
            loud = f;
        }
        if (silent < 0 && std::all_of(probe.activation.begin(), probe.activation.end(), [](float v) { return v == 0; }))
            silent = f;
    }
    ASSERT_GE(loud, 0);
    FeatureEdit ablate;
    ablate.feature = loud;
    const FeatureEditResult r = runFeatureEdit(m, d, ablate, ids, a, w);
    EXPECT_EQ(r.name, "feature.resid.3." + std::to_string(loud));
    EXPECT_NE(r.metricEdited, r.metricClean);
    // The edit is x - z_f W_dec[f] at every row: by hand on the site's value.
    FloatArray value;
    std::map<std::string, SiteHook> read;
    read["resid.3"] = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        value = v;
        return std::nullopt;
    };
    runWithHooks(m, std::vector<int64_t>(ids.begin(), ids.end()), read);
    const FloatArray z = d.encode(value), edited = applyFeatureEdit(d, value, ablate);
    for (int64_t t = 0; t < value.dim(0); ++t)
        for (int64_t i = 0; i < value.dim(1); ++i)
            ASSERT_NEAR(edited.at2(t, i), value.at2(t, i) - z.at2(t, loud) * d.wDec.at2(loud, i), 1e-5);
    // Clamped to its own activation: no change; a silent feature ablated: no change.
    FeatureEdit clamp = ablate;
    clamp.mode = "clamp";
    clamp.position = static_cast<int64_t>(ids.size()) - 1;
    clamp.value = best;
    EXPECT_NEAR(runFeatureEdit(m, d, clamp, ids, a, w).metricEdited, r.metricClean, 1e-4);
    if (silent >= 0) {
        FeatureEdit none;
        none.feature = silent;
        const FeatureEditResult s = runFeatureEdit(m, d, none, ids, a, w);
        EXPECT_EQ(s.metricEdited, s.metricClean);
    }
    // Names and refusals.
    EXPECT_EQ(parseFeatureName("feature.offset.2.4.17"), (std::pair<std::string, int64_t>{"offset.2.4", 17}));
    EXPECT_THROW(parseFeatureName("feature.resid.3"), std::invalid_argument);
    EXPECT_THROW(parseFeatureName("resid.3.17"), std::invalid_argument);
    FeatureEdit bad = ablate;
    bad.mode = "double";
    EXPECT_THROW(applyFeatureEdit(d, value, bad), std::invalid_argument);
    bad = ablate;
    bad.feature = 64;
    EXPECT_THROW(applyFeatureEdit(d, value, bad), std::invalid_argument);
}

TEST(Features, CrosscodersReadBothModelsAndResumeExactly) {
    const Model& g = bundled();
    const Model t = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/transformer-austen.gwb", "cpu");
    test::TempDir dir;
    FeatureTrainOptions o = shortRun("mixer.2", corpusFile(dir), 48, 4, 6, 256);
    o.secondSite = "mixer.2";
    o.bufferWindows = 4;
    const FeatureTrainResult a = trainCrosscoder(g, t, o);
    ASSERT_TRUE(a.complete);
    const DictionaryConfig& c = a.dictionary.config;
    EXPECT_TRUE(c.crosscoder());
    EXPECT_EQ(c.dIn, 2 * g.config().dModel);
    EXPECT_EQ(c.firstWidth, g.config().dModel);
    ASSERT_EQ(c.blockScaling.size(), 2u);
    EXPECT_EQ(c.secondModelName, t.displayName());
    for (double r : relativeDecoderNorms(a.dictionary))
        EXPECT_TRUE(r >= 0 && r <= 1) << r;
    // Stopped and resumed (the second model given again): the uninterrupted weights.
    o.stateDir = dir.file("state");
    ASSERT_FALSE(trainCrosscoder(g, t, o, [](const FeatureTrainProgress& p) { return p.step < 2; }).complete);
    EXPECT_THROW(resumeDictionaryTraining(g, o.stateDir), std::invalid_argument); // the second model is missing
    const FeatureTrainResult resumed = resumeDictionaryTraining(g, o.stateDir, {}, nullptr, &t);
    EXPECT_EQ(resumed.dictionary.wDec.data, a.dictionary.wDec.data);
    // Files keep it a crosscoder; evaluation reads both models, and needs both.
    saveDictionary(a.dictionary, dir.file("cc"));
    const Dictionary back = loadDictionary(dir.file("cc"));
    EXPECT_EQ(back.config.secondSite, "mixer.2");
    EXPECT_EQ(back.config.firstWidth, c.firstWidth);
    EXPECT_EQ(back.config.blockScaling, c.blockScaling);
    const std::vector<DictionaryQuality> q = evaluateCrosscoder(g, t, back, {corpusFile(dir)}, 64, 2);
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[0].rows, q[1].rows);
    EXPECT_NE(q[0].lossClean, q[1].lossClean); // each model's own loss
    EXPECT_THROW(evaluateDictionary(g, back, {corpusFile(dir)}, 64, 2), std::invalid_argument);
    // A crosscoder's feature edited in both models reads z_f from both.
    FeatureEdit e;
    e.mode = "steer";
    e.value = 3;
    const std::vector<int32_t> ids = g.tokenizer()->encodeIds("It is a truth universally acknowledged");
    const auto r = runCrosscoderEdit(g, t, back, e, ids, ids[1], ids[2]);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_NE(r[0].metricEdited, r[0].metricClean);
    EXPECT_NE(r[1].metricEdited, r[1].metricClean);
    // Offset sites cannot be paired token by token.
    FeatureTrainOptions bad = o;
    bad.stateDir.clear();
    bad.site = "offset.1." + std::to_string(g.config().layerOffsets[1].front());
    try {
        trainCrosscoder(g, t, bad);
        ADD_FAILURE() << "an offset site was paired";
    } catch (const std::invalid_argument& ex) {
        EXPECT_NE(std::string(ex.what()).find("offset site"), std::string::npos) << ex.what();
    }
}

TEST(Features, TheSavedWeightsReadRawActivationsWhateverTheScale) {
    // The gate (values in 0..1, mean norm far from sqrt(d)) trains on scaled rows; the saved file
    // must reconstruct the raw rows it will be given.
    const Model& m = bundled();
    test::TempDir dir;
    FeatureTrainOptions o = shortRun("gate.2", corpusFile(dir), 128, 16, 30, 512);
    const Dictionary d = trainDictionary(m, o).dictionary;
    EXPECT_GT(std::abs(std::log(d.config.scaling)), 0.3) << "the test wants a scale far from 1: " << d.config.scaling;
    const DictionaryQuality q = evaluateDictionary(m, d, o.files, 64, 8);
    EXPECT_GT(q.explainedVariance, 0.6);
}

TEST(Features, TranscodersReadTheFfnInputAndRebuildItsOutput) {
    const Model& m = bundled();
    test::TempDir dir;
    // ffn_in.L: the FFN's input, read only.
    const std::vector<int64_t> ids = {5, 9, 14, 3, 22, 7};
    FloatArray in, out;
    std::map<std::string, SiteHook> read;
    read["ffn_in.2"] = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        in = v;
        return std::nullopt;
    };
    read["ffn.2"] = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        out = v;
        return std::nullopt;
    };
    const FloatArray plain = runWithHooks(m, ids);
    EXPECT_EQ(runWithHooks(m, ids, read).data, plain.data);
    ASSERT_EQ(in.shape, (std::vector<int64_t>{6, m.config().dModel}));
    // The FFN of the block applied to ffn_in.2 gives ffn.2 (GELU(x W1^T + b1) W2^T + b2).
    const auto params = m.parameters();
    const FloatArray &w1 = params.at("blocks.2.ffn_in.weight"), &b1 = params.at("blocks.2.ffn_in.bias"),
                     &w2 = params.at("blocks.2.ffn_out.weight"), &b2 = params.at("blocks.2.ffn_out.bias");
    const int64_t d = m.config().dModel, f = m.config().dFF;
    for (int64_t t = 0; t < 6; ++t) {
        std::vector<double> h(static_cast<size_t>(f));
        for (int64_t j = 0; j < f; ++j) {
            double s = b1.data[static_cast<size_t>(j)];
            for (int64_t i = 0; i < d; ++i)
                s += static_cast<double>(w1.at2(j, i)) * in.at2(t, i);
            h[static_cast<size_t>(j)] = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
        }
        for (int64_t i = 0; i < d; ++i) {
            double s = b2.data[static_cast<size_t>(i)];
            for (int64_t j = 0; j < f; ++j)
                s += static_cast<double>(w2.at2(i, j)) * h[static_cast<size_t>(j)];
            ASSERT_NEAR(out.at2(t, i), s, 1e-3) << t << "," << i;
        }
    }
    std::map<std::string, SiteHook> write;
    write["ffn_in.2"] = [](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        return FloatArray::zeros(v.shape);
    };
    EXPECT_THROW(runWithHooks(m, ids, write), std::invalid_argument);

    // A transcoder: ffn_in.2 -> ffn.2, repeatable, resumable, its own file fields, its own figures.
    FeatureTrainOptions o = shortRun("ffn_in.2", corpusFile(dir), 128, 16, 20, 512);
    o.targetSite = "ffn.2";
    const FeatureTrainResult a = trainDictionary(m, o);
    ASSERT_TRUE(a.complete);
    EXPECT_TRUE(a.dictionary.config.transcoder());
    EXPECT_EQ(a.dictionary.config.dOut, d);
    o.stateDir = dir.file("state");
    ASSERT_FALSE(trainDictionary(m, o, [](const FeatureTrainProgress& p) { return p.step < 5; }).complete);
    EXPECT_EQ(resumeDictionaryTraining(m, o.stateDir).dictionary.wDec.data, a.dictionary.wDec.data);
    saveDictionary(a.dictionary, dir.file("tc"));
    const Dictionary back = loadDictionary(dir.file("tc"));
    EXPECT_EQ(back.config.targetSite, "ffn.2");
    EXPECT_EQ(back.config.dOut, d);
    const DictionaryQuality q = evaluateDictionary(m, back, o.files, 64, 8);
    EXPECT_GT(q.explainedVariance, 0.6);
    // Its encoder reads the input without b_dec: encode(ffn_in) decoded is the y^ that is judged.
    const FloatArray z = back.encode(in), yhat = back.decode(z);
    ASSERT_EQ(yhat.shape, out.shape);
    FeatureEdit e;
    EXPECT_THROW(applyFeatureEdit(back, in, e), std::invalid_argument); // it has two sites: the next call

    // Its features are causal tests too: z_f read from ffn_in.2, ffn.2 moved along W_dec[feat].
    int64_t feat = 0; // the feature most active at the last token
    for (int64_t k = 0; k < back.config.dSae; ++k)
        if (z.at2(5, k) > z.at2(5, feat)) feat = k;
    ASSERT_GT(z.at2(5, feat), 0.0f);
    e.feature = feat;
    const std::vector<int32_t> ids32(ids.begin(), ids.end());
    const FeatureEditResult r = runFeatureEdit(m, back, e, ids32, 10, 11);
    ASSERT_EQ(r.activation.size(), 6u);
    for (int64_t t = 0; t < 6; ++t)
        EXPECT_NEAR(r.activation[static_cast<size_t>(t)], z.at2(t, feat), 1e-5f) << t;
    std::map<std::string, SiteHook> byHand; // ffn.2 - z_f W_dec[feat] at every row
    byHand["ffn.2"] = [&](const FloatArray& v, const std::string&) -> std::optional<FloatArray> {
        FloatArray o2 = v;
        for (int64_t t = 0; t < 6; ++t)
            for (int64_t i = 0; i < d; ++i)
                o2.data[static_cast<size_t>(t * d + i)] -= z.at2(t, feat) * back.wDec.at2(feat, i);
        return o2;
    };
    const FloatArray ablated = runWithHooks(m, ids, byHand);
    EXPECT_NEAR(r.metricClean, static_cast<double>(plain.at2(5, 10)) - plain.at2(5, 11), 1e-5);
    EXPECT_NEAR(r.metricEdited, static_cast<double>(ablated.at2(5, 10)) - ablated.at2(5, 11), 1e-4);
    EXPECT_GT(std::abs(r.metricEdited - r.metricClean), 1e-6);
    // Steering at one position adds value W_dec[feat] there and nowhere else.
    e.mode = "steer";
    e.value = 2.0;
    e.position = 3;
    const FloatArray steered = applyTranscoderEdit(back, in, out, e);
    for (int64_t t = 0; t < 6; ++t)
        for (int64_t i = 0; i < d; ++i)
            ASSERT_NEAR(steered.at2(t, i), out.at2(t, i) + (t == 3 ? 2.0f * back.wDec.at2(feat, i) : 0.0f), 1e-5f);
    EXPECT_THROW(applyTranscoderEdit(back, in, in, FeatureEdit{.feature = back.config.dSae}), std::invalid_argument);
    EXPECT_THROW(applyTranscoderEdit(a.dictionary, out, FloatArray::zeros({5, d}), FeatureEdit{}),
                 std::invalid_argument); // 6 input rows, 5 output rows
}

TEST(Features, TheWeightsHashIsKeptUntilAWeightChanges) {
    // The window matches a dictionary to its models after every run: the hash of 2-385 MB of
    // weights is computed once per model and again only when a weight changed in place.
    Model m = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/grassmann-austen.gwb", "cpu");
    const std::string first = modelWeightsHash(m);
    EXPECT_EQ(modelWeightsHash(m), first);
    const Model copy = m; // shares the weights
    EXPECT_EQ(modelWeightsHash(copy), first);
    {
        torch::NoGradGuard noGrad;
        m.impl().net->named_parameters()[0].value().mul_(1.5f);
    }
    const std::string changed = modelWeightsHash(m);
    EXPECT_NE(changed, first);
    // What the cache gives is what hashing the weights afresh (another model of them) gives.
    const Model fresh = Model::fromParameters(m.config(), m.parameters(), m.tokenizer(), "cpu");
    EXPECT_EQ(modelWeightsHash(fresh), changed);
}
