// Path patching against an independent PyTorch reference and the identities its definition
// implies (issue 29).
//
// tests/python/paths_reference.py names every component through patching_reference.py's forward
// hooks and freezes by replacing values; it shares no code with the engine's pathPatching. For
// every variant of test::allVariants() (every parameter random and non-zero), every sender of the
// model's kind and both receiver kinds, the engine's metrics match within 1e-4, for senders at
// every position and at one. Identities: the direct effect of the last layer's FFN equals patching
// that FFN at the metric position; an FFN sender's effect through resid.(l+1) equals plain
// patching of that FFN at every position; and a negative control: plain patching (nothing frozen)
// differs from the direct effect where a later layer matters.

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

PathRequest baseRequest() {
    PathRequest q;
    std::mt19937 rng(11);
    for (int t = 0; t < kT; ++t)
        q.clean.push_back(static_cast<int64_t>(rng() % kVocab));
    q.corrupt = q.clean;
    q.corrupt[3] = (q.corrupt[3] + 5) % kVocab;
    q.corrupt[7] = (q.corrupt[7] + 11) % kVocab;
    q.answer = 1;
    q.wrong = 2;
    return q;
}

/// logit[answer] - logit[wrong] at the last token of one plain patching intervention.
double patched(const Model& model, const PathRequest& q, PatchSite site, int layer, int position) {
    PatchRequest r;
    r.clean = q.clean;
    r.corrupt = q.corrupt;
    r.answer = q.answer;
    r.wrong = q.wrong;
    r.site = site;
    r.mode = PatchMode::Patch;
    Intervention cell;
    cell.site = site;
    cell.mode = PatchMode::Patch;
    cell.layer = layer;
    cell.position = position;
    const std::vector<float> logits = interventionLogits(model, r, cell, kT - 1);
    return static_cast<double>(logits[static_cast<size_t>(q.answer)]) - logits[static_cast<size_t>(q.wrong)];
}

} // namespace

TEST(PathsParity, EverySenderAndReceiverMatchesPyTorch) {
    const auto py = test::findPython("torch");
    if (!py) GTEST_SKIP() << "python3 with torch (Debian python3-torch) not found: path patching parity skipped";
    test::TempDir dir;
    struct Case {
        std::string variant;
        Model model;
        PathResult result;
        size_t sender;
        int64_t senderPosition;
    };
    std::vector<Case> cases;
    nlohmann::json requests = nlohmann::json::array();
    const std::vector<ModelConfig> variants = test::allVariants();
    for (size_t v = 0; v < variants.size(); ++v) {
        const Model model = test::randomModel(variants[v], static_cast<uint32_t>(500 + v));
        const std::string path = dir.file("variant" + std::to_string(v) + ".gwb");
        model.save(path);
        for (int64_t pos : {int64_t{-1}, int64_t{7}}) {
            PathRequest q = baseRequest();
            q.senderPosition = pos;
            const PathResult r = pathPatching(model, q);
            for (size_t s = 0; s < r.senderLabels.size(); ++s) {
                const std::string& label = r.senderLabels[s];
                const size_t dot = label.find('.');
                const std::string kind = label.substr(0, dot);
                const std::string rest = label.substr(dot + 1);
                const size_t dot2 = rest.find('.');
                nlohmann::json j;
                j["model"] = path;
                j["clean"] = q.clean;
                j["corrupt"] = q.corrupt;
                j["answer"] = q.answer;
                j["wrong"] = q.wrong;
                j["position"] = kT - 1;
                j["sender"] = {{"kind", kind},
                               {"layer", std::stoi(rest.substr(0, dot2))},
                               {"index", dot2 == std::string::npos ? 0 : std::stoi(rest.substr(dot2 + 1))}};
                j["sender_position"] = pos;
                j["receivers"] = r.receiverLabels;
                requests.push_back(j);
                cases.push_back({test::variantName(variants[v]), model, r, s, pos});
            }
        }
    }
    nlohmann::json out;
    if (const std::string failed = test::runPythonJson(*py, "paths_reference.py", requests, dir.path.string(), out);
        !failed.empty())
        FAIL() << failed;
    ASSERT_EQ(out.size(), cases.size());
    std::map<std::string, double> worst;
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const size_t R = c.result.receiverLabels.size();
        SCOPED_TRACE(c.variant + " " + c.result.senderLabels[c.sender] + " position " +
                     std::to_string(c.senderPosition));
        for (size_t k = 0; k < R; ++k) {
            const double got = c.result.metric[c.sender * R + k];
            if (out[i][k].is_null()) {
                EXPECT_TRUE(std::isnan(got)) << c.result.receiverLabels[k];
                continue;
            }
            const double want = out[i][k].get<double>();
            EXPECT_NEAR(got, want, 1e-4) << c.result.receiverLabels[k];
            worst[c.variant] = std::max(worst[c.variant], std::abs(got - want));
        }
    }
    for (const auto& [variant, w] : worst)
        std::cout << "[          ] " << variant << ": max |metric diff| = " << w << "\n";
}

TEST(Paths, TheDefinitionsIdentitiesHold) {
    for (const ModelConfig& config : test::allVariants()) {
        SCOPED_TRACE(test::variantName(config));
        const Model model = test::randomModel(config, 77);
        const PathRequest q = baseRequest();
        const PathResult r = pathPatching(model, q);
        const size_t R = r.receiverLabels.size();
        auto at = [&](const std::string& sender, const std::string& receiver) {
            const auto s = std::find(r.senderLabels.begin(), r.senderLabels.end(), sender);
            const auto k = std::find(r.receiverLabels.begin(), r.receiverLabels.end(), receiver);
            EXPECT_TRUE(s != r.senderLabels.end() && k != r.receiverLabels.end()) << sender << " " << receiver;
            return r.metric[static_cast<size_t>(s - r.senderLabels.begin()) * R +
                            static_cast<size_t>(k - r.receiverLabels.begin())];
        };
        const int N = static_cast<int>(config.nLayers);
        // The last FFN's direct effect is patching that FFN at the metric position.
        EXPECT_NEAR(at("ffn." + std::to_string(N - 1), "logits"), patched(model, q, PatchSite::Ffn, N - 1, kT - 1),
                    1e-4);
        // Nothing of its layer sits after an FFN: through resid.(l+1) it is plain patching of it.
        for (int l = 0; l < N; ++l)
            EXPECT_NEAR(at("ffn." + std::to_string(l), "resid." + std::to_string(l + 1)),
                        patched(model, q, PatchSite::Ffn, l, -1), 1e-4)
                << "ffn." << l;
        // Negative control: plain patching of layer 0's mixer (later layers recomputed) is not its
        // direct effect (later layers frozen).
        EXPECT_GT(std::abs(at("mixer.0", "logits") - patched(model, q, PatchSite::Mixer, 0, -1)), 1e-3);
        // Receivers at or before the sender's layer are undefined.
        EXPECT_TRUE(std::isnan(at("ffn." + std::to_string(N - 1), "resid." + std::to_string(N - 1))));
    }
}

TEST(Paths, ACellsLogitsGiveItsMetric) {
    // pathCellLogits (a clicked cell's top pieces in the window) reruns exactly the cell's run.
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        const Model model = test::randomModel(test::tinyConfig(kind), 78);
        const PathRequest q = baseRequest();
        const PathResult r = pathPatching(model, q);
        const size_t R = r.receiverLabels.size();
        for (size_t s = 0; s < r.senderLabels.size(); s += 2)
            for (size_t k = 0; k < R; ++k) {
                const double metric = r.metric[s * R + k];
                if (std::isnan(metric)) {
                    EXPECT_THROW(pathCellLogits(model, q, r.senderLabels[s], r.receiverLabels[k]),
                                 std::invalid_argument);
                    continue;
                }
                const std::vector<float> logits = pathCellLogits(model, q, r.senderLabels[s], r.receiverLabels[k]);
                ASSERT_EQ(static_cast<int64_t>(logits.size()), model.config().vocabSize);
                EXPECT_NEAR(logits[static_cast<size_t>(q.answer)] - logits[static_cast<size_t>(q.wrong)], metric, 1e-5)
                    << r.senderLabels[s] << " x " << r.receiverLabels[k];
            }
        EXPECT_THROW(pathCellLogits(model, q, "nothing.0", "logits"), std::invalid_argument);
    }
}
