// Attribution patching against an independent PyTorch reference, and against exact patching
// where the model is linear in the site (issue 28).
//
// tests/python/attribution_reference.py adds zero deltas at a site through the forward hooks of
// patching_reference.py (written from docs/model-spec.md) and takes the gradient by autograd; it
// shares no code with the engine's attributionSweep. For every variant of test::allVariants()
// (every parameter random and non-zero), every site of the model's kind and the modes patch, mean
// and zero (offsets: patch and mean), the engine's estimates of every cell match the reference's
// within 1e-3 of the grid's largest |estimate| (+ 1e-6: float32 rounding of a metric of order 1). Negative control per
// variant: the reference told to take the gradient on the other run must miss. Skipped with a message without python3 +
// torch.

#include "../import/python_runner.h"
#include "engine_test_util.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patching.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

using namespace gwb::engine;

namespace {

constexpr int64_t kT = 12;
constexpr int64_t kVocab = 37;

struct Case {
    std::string variant;
    Model model;
    std::string path;
    PatchRequest request;
    bool control = false; ///< the reference takes the gradient on the other run
};

double gridScale(const std::vector<double>& v) {
    double m = 0;
    for (double x : v)
        if (std::isfinite(x)) m = std::max(m, std::abs(x));
    return m;
}

} // namespace

TEST(AttributionParity, EveryVariantSiteAndModeMatchesAutogradInPyTorch) {
    const auto py = test::findPython("torch");
    if (!py) GTEST_SKIP() << "python3 with torch (Debian python3-torch) not found: attribution parity skipped";
    test::TempDir dir;
    std::vector<int64_t> clean(kT), corrupt;
    std::mt19937 rng(7);
    for (int64_t& id : clean)
        id = static_cast<int64_t>(rng() % kVocab);
    corrupt = clean;
    corrupt[3] = (corrupt[3] + 5) % kVocab;
    corrupt[7] = (corrupt[7] + 11) % kVocab;

    std::vector<Case> cases;
    const std::vector<ModelConfig> variants = test::allVariants();
    for (size_t v = 0; v < variants.size(); ++v) {
        const ModelConfig& config = variants[v];
        Case base;
        base.variant = test::variantName(config);
        base.model = test::randomModel(config, static_cast<uint32_t>(300 + v));
        base.path = dir.file("variant" + std::to_string(v) + ".gwb");
        base.model.save(base.path);
        base.request.clean = clean;
        base.request.corrupt = corrupt;
        base.request.answer = 1;
        base.request.wrong = 2;
        base.request.position = 9;
        const bool grassmann = config.kind == ModelKind::Grassmann;
        std::vector<PatchSite> sites = {PatchSite::Resid, PatchSite::Mixer, PatchSite::Ffn};
        if (grassmann) {
            sites.push_back(PatchSite::Gate);
            sites.push_back(PatchSite::Offset);
        } else {
            sites.push_back(PatchSite::Head);
        }
        for (PatchSite site : sites)
            for (PatchMode mode : {PatchMode::Patch, PatchMode::Mean, PatchMode::Zero}) {
                if (site == PatchSite::Offset && mode == PatchMode::Zero) continue;
                Case c = base;
                c.request.site = site;
                c.request.mode = mode;
                cases.push_back(c);
            }
        Case control = base;
        control.request.site = PatchSite::Resid;
        control.request.mode = PatchMode::Patch;
        control.control = true;
        cases.push_back(control);
    }
    nlohmann::json requests = nlohmann::json::array();
    for (const Case& c : cases) {
        const bool patch = c.request.mode == PatchMode::Patch;
        nlohmann::json j;
        j["model"] = c.path;
        j["changed"] = patch && !c.control ? c.request.corrupt : c.request.clean;
        j["source"] = c.control ? c.request.corrupt : c.request.clean;
        j["site"] = patchSiteName(c.request.site);
        j["mode"] = patchModeName(c.request.mode);
        j["answer"] = c.request.answer;
        j["wrong"] = c.request.wrong;
        j["position"] = c.request.position;
        requests.push_back(j);
    }
    nlohmann::json out;
    if (const std::string failed =
            test::runPythonJson(*py, "attribution_reference.py", requests, dir.path.string(), out);
        !failed.empty())
        FAIL() << failed;
    ASSERT_EQ(out.size(), cases.size());
    std::map<std::string, double> worst;
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        SCOPED_TRACE(c.variant + " " + patchSiteName(c.request.site) + "/" + patchModeName(c.request.mode));
        const PatchSweep s = attributionSweep(c.model, c.request);
        ASSERT_EQ(out[i]["rows"].get<int64_t>(), s.rows);
        ASSERT_EQ(out[i]["cols"].get<int64_t>(), s.cols);
        std::vector<double> ref;
        for (const auto& v : out[i]["values"])
            ref.push_back(v.is_null() ? std::nan("") : v.get<double>());
        ASSERT_EQ(ref.size(), s.attribution.size());
        const double scale = gridScale(ref);
        double d = 0;
        for (size_t k = 0; k < ref.size(); ++k) {
            if (std::isnan(ref[k]) || std::isnan(s.attribution[k])) {
                if (!c.control) {
                    EXPECT_EQ(std::isnan(ref[k]), std::isnan(s.attribution[k])) << "cell " << k;
                }
                continue;
            }
            d = std::max(d, std::abs(ref[k] - s.attribution[k]));
        }
        if (c.control) {
            EXPECT_GT(d, 1e-3 * scale) << "the negative control matches: the comparison cannot tell the runs apart";
            continue;
        }
        EXPECT_GT(scale, 1e-6) << "every estimate is 0: the comparison proves little";
        EXPECT_LE(d, 1e-3 * scale + 1e-6) << "max |engine - reference| = " << d << " of scale " << scale;
        worst[c.variant] = std::max(worst[c.variant], scale > 0 ? d / scale : d);
    }
    for (const auto& [variant, w] : worst)
        std::cout << "[          ] " << variant << ": max |diff| / max |estimate| = " << w << "\n";
}

TEST(Attribution, EqualsTheExactPatchWhereTheModelIsLinearInTheSite) {
    // With a LayerNorm epsilon far above the states' variance (1e6) every LayerNorm is affine to
    // about 1e-5. In a pre-norm model the residual stream then carries the embedding difference to
    // h^N, and the metric, read through the (now affine) final LayerNorm and the tied head, is
    // linear in h^N: the first-order estimate of the resid row N equals the exact patch (within
    // 1e-3 of the change, float32 rounding included). The prompts differ at the metric position,
    // so the change is not 0.
    int tested = 0;
    for (const ModelConfig& base : test::allVariants()) {
        if (base.norm != NormPlacement::Pre) continue;
        ModelConfig config = base;
        config.layerNormEps = 1e6;
        SCOPED_TRACE(test::variantName(config));
        const Model model = test::randomModel(config, 17);
        PatchRequest r;
        std::mt19937 rng(3);
        for (int t = 0; t < kT; ++t)
            r.clean.push_back(static_cast<int64_t>(rng() % kVocab));
        r.corrupt = r.clean;
        r.corrupt[2] = (r.corrupt[2] + 9) % kVocab;
        r.corrupt[kT - 1] = (r.corrupt[kT - 1] + 4) % kVocab;
        r.answer = 4;
        r.wrong = 5;
        r.site = PatchSite::Resid;
        r.mode = PatchMode::Patch;
        const PatchSweep est = attributionSweep(model, r), exact = runPatchSweep(model, r);
        ASSERT_EQ(est.attribution.size(), exact.metric.size());
        const int64_t N = est.rows - 1, T = est.cols;
        const size_t i = static_cast<size_t>(N * T + (T - 1));
        const double ex = exact.metric[i] - exact.corruptMetric;
        EXPECT_GT(std::abs(ex), 1e-5) << "the patch changes nothing: the comparison proves little";
        EXPECT_NEAR(est.attribution[i], ex, 1e-3 * std::abs(ex)) << "row h^N at the metric position";
        ++tested;
    }
    EXPECT_GE(tested, 2);
}

TEST(Attribution, ManyPairsInBatchesEqualOneAtATime) {
    // attributionSweeps (a pairs file) runs pairs of one length and metric position as rows of one
    // batch: each result equals attributionSweep of its pair alone, whatever the grouping.
    std::mt19937 rng(11);
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        ModelConfig config = test::tinyConfig(kind);
        config.norm = kind == ModelKind::Grassmann ? NormPlacement::Post : NormPlacement::Pre;
        const Model model = test::randomModel(config, 44);
        for (PatchSite site :
             {PatchSite::Resid, PatchSite::Mixer, kind == ModelKind::Grassmann ? PatchSite::Offset : PatchSite::Head}) {
            std::vector<PatchRequest> requests;
            for (int i = 0; i < 7; ++i) {
                PatchRequest r;
                const int T = i % 3 == 0 ? 9 : 12; // two lengths, interleaved
                for (int t = 0; t < T; ++t) {
                    const int64_t id = static_cast<int64_t>(rng() % static_cast<uint32_t>(config.vocabSize));
                    r.clean.push_back(id);
                    r.corrupt.push_back(t == 2 ? (id + 1 + i) % config.vocabSize : id);
                }
                r.site = site;
                r.mode = i == 5 ? PatchMode::Mean : PatchMode::Patch;
                r.answer = 3 + i;
                r.wrong = 20 - i;
                r.position = i == 4 ? 7 : -1;
                requests.push_back(r);
            }
            const std::vector<PatchSweep> batched = attributionSweeps(model, requests);
            ASSERT_EQ(batched.size(), requests.size());
            for (size_t i = 0; i < requests.size(); ++i) {
                SCOPED_TRACE(std::string(patchSiteName(site)) + " pair " + std::to_string(i));
                const PatchSweep alone = attributionSweep(model, requests[i]);
                EXPECT_EQ(batched[i].clean, requests[i].clean);
                EXPECT_NEAR(batched[i].cleanMetric, alone.cleanMetric, 1e-5);
                EXPECT_NEAR(batched[i].corruptMetric, alone.corruptMetric, 1e-5);
                ASSERT_EQ(batched[i].attribution.size(), alone.attribution.size());
                // float32 rounding of a batched product against a single one: relative to the metric's scale
                double scale = std::abs(alone.cleanMetric) + std::abs(alone.corruptMetric);
                for (double v : alone.attribution)
                    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
                for (size_t k = 0; k < alone.attribution.size(); ++k) {
                    if (std::isnan(alone.attribution[k])) {
                        EXPECT_TRUE(std::isnan(batched[i].attribution[k]));
                        continue;
                    }
                    EXPECT_NEAR(batched[i].attribution[k], alone.attribution[k], 1e-5 * scale) << k;
                    EXPECT_EQ(batched[i].flagged[k], alone.flagged[k]) << k;
                }
            }
        }
    }
}
