// Causal-test interventions against an independent PyTorch reference (issue 21).
//
// tests/python/patching_reference.py implements both models and every intervention site and mode
// from docs/model-spec.md and the definitions in gwb/engine/patching.h, with forward hooks that
// replace activations; it shares no code and no assumptions with the engine's patching. For every
// variant of test::allVariants() we randomise every parameter (non-zero biases, LayerNorm weights
// != 1), save a .gwb, and for every site of the model's kind x every mode x a few (layer,
// position / offset / head) choices compare interventionLogits() at every position with the
// reference's logits: max |diff| < 1e-4. The unchanged logits are compared first, so a model
// mismatch is told apart from an intervention mismatch. Negative control per variant: the
// reference told to intervene at another layer must miss by more than 1e-3. One Python start-up
// for everything (a JSON list of requests). Skipped with a message without python3 with torch.

#include "../import/python_runner.h"
#include "engine_test_util.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patching.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

using namespace gwb::engine;

namespace {

constexpr double kTolerance = 1e-4;
constexpr double kControlGap = 1e-3;
constexpr int64_t kT = 12; // past every offset of the tiny configs (largest 8)

/// Logits (T x V, row-major) of a plain forward pass.
std::vector<float> plainLogits(const Model& model, const std::vector<int64_t>& ids) {
    torch::NoGradGuard noGrad;
    auto& net = *model.impl().net;
    net.eval();
    const torch::Tensor x = torch::tensor(ids, torch::kLong).view({1, -1});
    const torch::Tensor y = net.forward(x).to(torch::kCPU).contiguous();
    return {y.data_ptr<float>(), y.data_ptr<float>() + y.numel()};
}

/// interventionLogits() at every position, concatenated (T x V).
std::vector<float> engineLogits(const Model& model, const PatchRequest& request, const Intervention& cell) {
    std::vector<float> out;
    for (int64_t t = 0; t < static_cast<int64_t>(request.clean.size()); ++t) {
        const std::vector<float> row = interventionLogits(model, request, cell, t);
        out.insert(out.end(), row.begin(), row.end());
    }
    return out;
}

double maxDiff(const std::vector<float>& a, const float* b, size_t n) {
    if (a.size() != n) return INFINITY;
    double worst = 0.0;
    for (size_t i = 0; i < n; ++i)
        worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
    return worst;
}

std::string describe(const Intervention& c) {
    std::ostringstream s;
    s << patchSiteName(c.site) << "/" << patchModeName(c.mode) << " layer " << c.layer;
    if (c.site == PatchSite::Offset)
        s << " offset " << c.offset;
    else if (c.site == PatchSite::Head)
        s << " head " << c.head;
    else
        s << " position " << c.position;
    return s.str();
}

/// One comparison: the engine's request and cell, and the layer the reference is told to use
/// (another layer for the negative control).
struct Case {
    std::string variant;
    Model model;
    std::string modelPath;
    PatchRequest request;
    Intervention cell;
    int referenceLayer = 0;
    bool control = false;
    bool plain = false; ///< no intervention: the reference's plain logits of request.clean
};

nlohmann::json referenceRequest(const Case& c) {
    nlohmann::json j;
    j["model"] = c.modelPath;
    const bool patch = c.cell.mode == PatchMode::Patch;
    j["changed"] = patch ? c.request.corrupt : c.request.clean;
    j["source"] = c.request.clean;
    j["site"] = c.plain ? "none" : patchSiteName(c.cell.site);
    j["mode"] = patchModeName(c.cell.mode);
    j["layer"] = c.referenceLayer;
    j["position"] = c.cell.position;
    j["offset"] = c.cell.offset;
    j["head"] = c.cell.head;
    return j;
}

/// The cells tested for one model: every site of its kind x every mode x a few choices.
std::vector<Intervention> cellsFor(const ModelConfig& config) {
    const bool grassmann = config.kind == ModelKind::Grassmann;
    const int n = static_cast<int>(config.nLayers);
    std::vector<Intervention> cells;
    for (PatchMode mode : {PatchMode::Patch, PatchMode::Zero, PatchMode::Mean}) {
        auto add = [&](PatchSite site, int layer, int position, int offset = 0, int head = -1) {
            Intervention c;
            c.site = site;
            c.mode = mode;
            c.layer = layer;
            c.position = position;
            c.offset = offset;
            c.head = head;
            cells.push_back(c);
        };
        // Position 3 is the first that differs between the prompts; 9 lies past both changes.
        add(PatchSite::Resid, 0, 3);
        add(PatchSite::Resid, 1, -1);
        add(PatchSite::Resid, n, 9);
        std::vector<PatchSite> sites = {PatchSite::Mixer, PatchSite::Ffn};
        if (grassmann) sites.push_back(PatchSite::Gate);
        for (PatchSite site : sites) {
            add(site, 0, 5);
            add(site, n - 1, -1);
        }
        if (grassmann) {
            for (int l = 0; l < n; ++l)
                for (int d : config.layerOffsets[static_cast<size_t>(l)])
                    add(PatchSite::Offset, l, -1, d);
        } else {
            add(PatchSite::Head, 0, -1, 0, 0);
            add(PatchSite::Head, n - 1, -1, 0, static_cast<int>(config.nHeads) - 1);
        }
    }
    return cells;
}

} // namespace

TEST(PatchingParity, EveryVariantSiteAndModeMatchesPyTorch) {
    const auto py = test::findPython("torch");
    if (!py) GTEST_SKIP() << "python3 with torch (Debian python3-torch) not found: patching parity skipped";
    const auto start = std::chrono::steady_clock::now();
    test::TempDir dir;

    std::vector<int64_t> clean(kT), corrupt;
    std::mt19937 rng(2024);
    for (int64_t& id : clean)
        id = static_cast<int64_t>(rng() % 37); // tinyConfig's vocabulary
    corrupt = clean;
    corrupt[3] = (corrupt[3] + 5) % 37;
    corrupt[7] = (corrupt[7] + 11) % 37;

    std::vector<Case> cases;
    const std::vector<ModelConfig> variants = test::allVariants();
    for (size_t v = 0; v < variants.size(); ++v) {
        const ModelConfig& config = variants[v];
        Case base;
        base.variant = test::variantName(config);
        base.model = test::randomModel(config, static_cast<uint32_t>(100 + v));
        base.modelPath = dir.file("variant" + std::to_string(v) + ".gwb");
        base.model.save(base.modelPath);
        base.request.clean = clean;
        base.request.corrupt = corrupt;
        base.request.answer = 1; // a corrupted prompt needs the metric's pieces (unused here)
        base.request.wrong = 2;

        Case plainCase = base;
        plainCase.plain = true;
        cases.push_back(plainCase); // the clean prompt
        plainCase.request.clean = corrupt;
        cases.push_back(plainCase); // the corrupted prompt

        const std::vector<Intervention> cells = cellsFor(config);
        for (size_t i = 0; i < cells.size(); ++i) {
            Case c = base;
            c.cell = cells[i];
            c.referenceLayer = c.cell.layer;
            c.request.site = c.cell.site;
            c.request.mode = c.cell.mode;
            // Ablations run the clean prompt with or without a corrupted one given.
            if (c.cell.mode != PatchMode::Patch && i % 2 == 1) c.request.corrupt.clear();
            cases.push_back(c);
        }
        // Negative control: zero-ablate every position of layer 0's mixer in the engine, layer 1's in
        // the reference.
        Case control = base;
        control.cell.site = PatchSite::Mixer;
        control.cell.mode = PatchMode::Zero;
        control.cell.layer = 0;
        control.cell.position = -1;
        control.request.site = PatchSite::Mixer;
        control.request.mode = PatchMode::Zero;
        control.referenceLayer = 1;
        control.control = true;
        cases.push_back(control);
    }

    nlohmann::json requests = nlohmann::json::array();
    for (const Case& c : cases)
        requests.push_back(referenceRequest(c));
    const std::string requestPath = dir.file("requests.json"), outPath = dir.file("logits.f32"),
                      logPath = dir.file("python.log");
    std::ofstream(requestPath) << requests.dump();
    if (const std::string failed = test::runPythonScript(*py, "patching_reference.py", requestPath, outPath, logPath);
        !failed.empty())
        FAIL() << failed;
    std::ifstream in(outPath, std::ios::binary);
    const std::string bytes(std::istreambuf_iterator<char>(in), {});

    const size_t rowFloats = static_cast<size_t>(kT) * 37;
    ASSERT_EQ(bytes.size(), cases.size() * 2 * rowFloats * sizeof(float)) << "reference output has the wrong size";
    const float* ref = reinterpret_cast<const float*>(bytes.data());
    int compared = 0;
    std::map<std::string, double> worstPerVariant;
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        const float* changed = ref + 2 * i * rowFloats;
        SCOPED_TRACE(c.variant);
        if (c.plain) {
            const double d = maxDiff(plainLogits(c.model, c.request.clean), changed, rowFloats);
            EXPECT_LT(d, kTolerance) << "plain logits differ: the reference model does not match the engine's";
            continue;
        }
        std::vector<float> got;
        try {
            got = engineLogits(c.model, c.request, c.cell);
        } catch (const std::exception& e) {
            ADD_FAILURE() << describe(c.cell) << ": interventionLogits threw: " << e.what();
            continue;
        }
        const double d = maxDiff(got, changed, rowFloats);
        if (c.control) {
            EXPECT_GT(d, kControlGap) << "negative control " << describe(c.cell) << " (reference at layer "
                                      << c.referenceLayer << ") matches: the comparison cannot see the layer";
            continue;
        }
        EXPECT_LT(d, kTolerance) << describe(c.cell) << ": max |engine - reference| = " << d;
        // The intervention must change something, or the comparison proves little; patches of a
        // site equal in both runs (before the first differing token) are the exception.
        const float* unchanged = changed + rowFloats;
        const double effect = maxDiff(std::vector<float>(changed, changed + rowFloats), unchanged, rowFloats);
        bool equalSite = c.cell.mode == PatchMode::Patch && c.cell.position >= 0 && c.cell.position < 3;
        // A gate of x alone (GrassmannGPTv3) in layer 0 sees only its own token: equal where the
        // prompts' tokens are.
        const size_t pos = static_cast<size_t>(std::max<int64_t>(c.cell.position, 0));
        if (c.cell.mode == PatchMode::Patch && c.cell.site == PatchSite::Gate && c.cell.layer == 0 &&
            c.model.config().stages.gateFromInput && c.cell.position >= 0 && pos < c.request.clean.size() &&
            pos < c.request.corrupt.size() && c.request.clean[pos] == c.request.corrupt[pos])
            equalSite = true;
        if (!equalSite) {
            EXPECT_GT(effect, kControlGap) << describe(c.cell) << " changes nothing in the reference";
        }
        worstPerVariant[c.variant] = std::max(worstPerVariant[c.variant], d);
        ++compared;
    }
    for (const auto& [variant, worst] : worstPerVariant)
        std::cout << "[          ] " << variant << ": max |logit diff| = " << worst << "\n";
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[          ] " << compared << " interventions compared in " << seconds << " s\n";
}
