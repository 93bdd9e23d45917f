// Tuned and Jacobian lenses (gwb/engine/lens.h) on both bundled models: the zero tuned lens is the
// logit lens, the Jacobian lens is the model's finite-difference Jacobian, the tuned lens beats the
// logit lens on held-out text, fits repeat for a seed and resume exactly, files and shards round-trip.

#include "gwb/engine/lens.h"
#include "model/model_impl.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace {

using namespace gwb::engine;
namespace fs = std::filesystem;

const Model& bundled(const std::string& kind) {
    static const Model g = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/grassmann-austen.gwb", "cpu");
    static const Model t = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/transformer-austen.gwb", "cpu");
    return kind == "grassmann" ? g : t;
}

std::string prompt(const std::string& name) {
    return std::string(GWB_SOURCE_DIR) + "/resources/prompts/" + name;
}

std::vector<int32_t> ids(const Model& m, const std::string& text) {
    return m.tokenizer()->encodeIds(text);
}

const std::string kText = "It is a truth universally acknowledged, that a single man in possession of a good "
                          "fortune, must be in want of a wife. However little known the feelings or views of such "
                          "a man may be on his first entering a neighbourhood, this truth is so well fixed.";

struct TmpDir {
    fs::path path = fs::temp_directory_path() / ("gwb_lens_test_" + std::to_string(::getpid()));
    TmpDir() { fs::remove_all(path); }
    ~TmpDir() { fs::remove_all(path); }
};

class LensModels : public ::testing::TestWithParam<std::string> {};

TEST_P(LensModels, ZeroTunedLensIsTheLogitLensExactly) {
    const Model& m = bundled(GetParam());
    const int64_t d = m.config().dModel, N = m.config().nLayers;
    Lens zero;
    zero.kind = LensKind::Tuned;
    zero.dModel = d;
    zero.nLayers = N;
    for (int s = 0; s < N; ++s) {
        zero.layers.push_back(s);
        zero.matrix.push_back(FloatArray::zeros({d, d}));
        zero.bias.push_back(FloatArray::zeros({d}));
    }
    const auto x = ids(m, kText);
    for (int s = 0; s < N; ++s)
        EXPECT_EQ(lensLogits(m, x, s, &zero).data, lensLogits(m, x, s, nullptr).data) << "state " << s;
    LensEvalRequest er;
    er.promptIds = {x};
    const LensEvalResult r = evaluateLenses(m, {zero}, {""}, er);
    ASSERT_EQ(r.lenses, (std::vector<std::string>{"logit", "tuned"}));
    for (int s = 0; s < N; ++s) {
        EXPECT_EQ(r.kl.at2(0, s), r.kl.at2(1, s));
        EXPECT_EQ(r.ce.at2(0, s), r.ce.at2(1, s));
        EXPECT_EQ(r.top1.at2(0, s), r.top1.at2(1, s));
        EXPECT_EQ(r.rank.at2(0, s), r.rank.at2(1, s));
    }
    EXPECT_GT(r.kl.at2(0, 0), 0.0);
}

TEST_P(LensModels, JacobianLensIsTheFiniteDifferenceJacobian) {
    const Model& m = bundled(GetParam());
    const int64_t d = m.config().dModel, N = m.config().nLayers;
    auto x = ids(m, kText);
    x.resize(24);
    LensFitRequest r;
    r.kind = LensKind::Jacobian;
    r.promptIds = {x};
    r.skipFirst = 4;
    r.dimBatch = 32;
    const Lens lens = fitLens(m, r);
    ASSERT_EQ(lens.nPrompts, 1);
    ASSERT_EQ(static_cast<int64_t>(lens.layers.size()), N - 1);
    // Central differences: perturb h_l[t, j] at each valid t, sum h_final[t', :] over valid t',
    // average over t. That is column j of J_l (all output rows at once).
    auto& net = *m.impl().net;
    net.eval();
    torch::NoGradGuard noGrad;
    const auto T = static_cast<int64_t>(x.size());
    std::vector<int64_t> xv(x.begin(), x.end());
    const torch::Tensor tok = torch::tensor(xv, torch::kLong).view({1, T});
    std::vector<torch::Tensor> states{net.embed(tok)};
    for (const auto& b : net.blocks())
        states.push_back(b->forward(states.back(), nullptr));
    const auto suffix = [&](int l, torch::Tensor h) {
        for (int64_t k = l + 1; k < N; ++k)
            h = net.blocks()[static_cast<size_t>(k)]->forward(h, nullptr);
        return h[0].narrow(0, r.skipFirst, T - 1 - r.skipFirst).sum(0).to(torch::kDouble);
    };
    const double eps = 1e-2;
    double worst = 0, scale = 0;
    for (int l : {0, static_cast<int>(N) - 2})
        for (int64_t j : {int64_t{3}, d - 5}) {
            torch::Tensor col = torch::zeros({d}, torch::kDouble);
            for (int64_t t = r.skipFirst; t < T - 1; ++t) {
                torch::Tensor up = states[static_cast<size_t>(l + 1)].clone(), down = up.clone();
                up[0][t][j] += eps;
                down[0][t][j] -= eps;
                col += (suffix(l, up) - suffix(l, down)) / (2 * eps);
            }
            col /= static_cast<double>(T - 1 - r.skipFirst);
            const FloatArray& J = lens.matrix[static_cast<size_t>(l)];
            for (int64_t i = 0; i < d; ++i) {
                worst = std::max(worst, std::abs(J.at2(i, j) - col[i].item<double>()));
                scale = std::max(scale, std::abs(col[i].item<double>()));
            }
        }
    std::printf("[%s] max |J - finite difference| = %.3g (max |J| %.3g)\n", GetParam().c_str(), worst, scale);
    EXPECT_GT(scale, 1e-2);
    EXPECT_LT(worst, 2e-3 * std::max(1.0, scale));
}

TEST_P(LensModels, TunedLensBeatsTheLogitLensOnHeldOutText) {
    const Model& m = bundled(GetParam());
    LensFitRequest r;
    r.kind = LensKind::Tuned;
    r.files = {prompt("pride-opening.txt"), prompt("emma-opening.txt"), prompt("mansfield-visit.txt"),
               prompt("persuasion-letter.txt")};
    r.window = 16;
    r.maxPrompts = 0;
    r.steps = 10;
    r.tokensPerStep = 128;
    const Lens lens = fitLens(m, r);
    ASSERT_TRUE(lens.complete);
    LensEvalRequest er;
    er.files = {prompt("sense-marianne.txt")};
    er.window = 64;
    const LensEvalResult e = evaluateLenses(m, {lens}, {""}, er);
    std::printf("[%s] tuned lens: %.2f s;", GetParam().c_str(), lens.seconds);
    for (int64_t s = 0; s < e.nLayers; ++s) {
        std::printf(" s%lld %.3f<%.3f", static_cast<long long>(s), e.kl.at2(1, s), e.kl.at2(0, s));
        EXPECT_LT(e.kl.at2(1, s), e.kl.at2(0, s)) << "state " << s;
    }
    std::printf("\n");
}

TEST_P(LensModels, TunedFitRepeatsForASeedAndResumesExactly) {
    const Model& m = bundled(GetParam());
    LensFitRequest r;
    r.kind = LensKind::Tuned;
    const auto x = ids(m, kText);
    for (size_t k = 0; k + 8 <= x.size(); k += 8)
        r.promptIds.emplace_back(x.begin() + static_cast<long>(k), x.begin() + static_cast<long>(k + 8));
    ASSERT_GE(r.promptIds.size(), 4u);
    r.window = 8;
    r.steps = 4;
    r.tokensPerStep = 8;
    r.seed = 7;
    const Lens a = fitLens(m, r), b = fitLens(m, r);
    for (size_t s = 0; s < a.matrix.size(); ++s) {
        EXPECT_EQ(a.matrix[s].data, b.matrix[s].data);
        EXPECT_EQ(a.bias[s].data, b.bias[s].data);
    }
    // Stop after 2 steps, write and read the partial lens, resume: the same lens as one run.
    TmpDir tmp;
    const Lens part = fitLens(m, r, [](const LensProgress& p) { return p.done < 2; });
    ASSERT_FALSE(part.complete);
    ASSERT_EQ(part.stepsDone, 2);
    writeLens(part, tmp.path.string());
    const Lens back = readLens(tmp.path.string());
    ASSERT_FALSE(back.complete);
    const Lens resumed = fitLens(m, r, {}, nullptr, &back);
    ASSERT_TRUE(resumed.complete);
    for (size_t s = 0; s < a.matrix.size(); ++s) {
        EXPECT_EQ(a.matrix[s].data, resumed.matrix[s].data);
        EXPECT_EQ(a.bias[s].data, resumed.bias[s].data);
    }
    r.seed = 8;
    const Lens c = fitLens(m, r);
    EXPECT_NE(a.matrix[0].data, c.matrix[0].data) << "another seed reads other windows";
}

INSTANTIATE_TEST_SUITE_P(Bundled, LensModels, ::testing::Values("grassmann", "transformer"));

// The readout the Lens figure draws: its numbers are lensLogits' (top-1, rank, KL to the model's own
// output), the zero tuned lens reads as the logit lens, the Jacobian lens has no row at s = 0.
TEST_P(LensModels, ReadoutIsTheLensLogitsNumbers) {
    const Model& m = bundled(GetParam());
    const int64_t d = m.config().dModel, N = m.config().nLayers;
    const auto x = ids(m, kText.substr(0, 60));
    const auto T = static_cast<int64_t>(x.size());
    const LensReadout logit = lensReadout(m, x, nullptr);
    ASSERT_EQ(logit.top1.shape, (std::vector<int64_t>{N + 1, T}));
    EXPECT_EQ(logit.lens, "logit");
    EXPECT_TRUE(logit.sameModel);
    const FloatArray final = lensLogits(m, x, static_cast<int>(N), nullptr);
    for (int64_t s = 0; s <= N; ++s) {
        const torch::Tensor lg =
            torch::from_blob(const_cast<float*>(lensLogits(m, x, static_cast<int>(s), nullptr).data.data()),
                             {T, m.config().vocabSize}, torch::kFloat)
                .clone();
        const torch::Tensor fin =
            torch::from_blob(const_cast<float*>(final.data.data()), {T, m.config().vocabSize}, torch::kFloat);
        const torch::Tensor logp = torch::log_softmax(lg, -1), logpF = torch::log_softmax(fin, -1);
        const torch::Tensor kl = (logpF.exp() * (logpF - logp)).sum(-1);
        for (int64_t t = 0; t < T; ++t) {
            EXPECT_EQ(logit.top1.at2(s, t), lg[t].argmax().item<int64_t>()) << "s " << s << " t " << t;
            EXPECT_NEAR(logit.top1Prob.at2(s, t), logp[t].max().exp().item<float>(), 1e-5);
            EXPECT_NEAR(logit.kl.at2(s, t), s == N ? 0.0f : std::max(0.0f, kl[t].item<float>()), 1e-4);
            if (t + 1 < T)
                EXPECT_EQ(logit.nextRank.at2(s, t),
                          lg[t].gt(lg[t][x[static_cast<size_t>(t + 1)]]).sum().item<int64_t>());
            else
                EXPECT_EQ(logit.nextRank.at2(s, t), -1);
        }
        EXPECT_TRUE(logit.pieces.count(logit.top1.at2(s, 0)));
    }
    EXPECT_GT(logit.kl.at2(0, 1), 0.0f);
    Lens zero;
    zero.kind = LensKind::Tuned;
    zero.dModel = d;
    zero.nLayers = N;
    zero.modelName = "elsewhere";
    zero.modelHash = "not this model";
    for (int s = 0; s < N; ++s) {
        zero.layers.push_back(s);
        zero.matrix.push_back(FloatArray::zeros({d, d}));
        zero.bias.push_back(FloatArray::zeros({d}));
    }
    const LensReadout tuned = lensReadout(m, x, &zero, "dir");
    EXPECT_EQ(tuned.top1.data, logit.top1.data);
    EXPECT_EQ(tuned.kl.data, logit.kl.data);
    EXPECT_EQ(tuned.lens, "tuned");
    EXPECT_EQ(tuned.folder, "dir");
    EXPECT_EQ(tuned.fittedOn, "elsewhere");
    EXPECT_FALSE(tuned.sameModel);
    Lens jac;
    jac.kind = LensKind::Jacobian;
    jac.dModel = d;
    jac.nLayers = N;
    for (int l = 0; l + 1 < N; ++l) {
        jac.layers.push_back(l);
        FloatArray eye = FloatArray::zeros({d, d});
        for (int64_t i = 0; i < d; ++i)
            eye.data[static_cast<size_t>(i * d + i)] = 1.0f;
        jac.matrix.push_back(eye);
    }
    const LensReadout j = lensReadout(m, x, &jac);
    EXPECT_FALSE(j.hasState(0));
    EXPECT_TRUE(std::isnan(j.kl.at2(0, 0)));
    for (int64_t s = 1; s <= N; ++s) {
        EXPECT_TRUE(j.hasState(s));
        for (int64_t t = 0; t < T; ++t)
            EXPECT_EQ(j.top1.at2(s, t), logit.top1.at2(s, t)); // J = I is the logit lens
    }
    Lens wide = zero;
    wide.dModel = d + 1;
    EXPECT_THROW(lensReadout(m, x, &wide, "w"), std::invalid_argument);
}

TEST(Lens, JacobianShardsMergeIntoTheWholeFitAndFilesRoundTrip) {
    const Model& m = bundled("transformer");
    LensFitRequest r;
    r.kind = LensKind::Jacobian;
    const auto x = ids(m, kText);
    for (int k = 0; k < 3; ++k)
        r.promptIds.emplace_back(x.begin() + 3 * k, x.begin() + 3 * k + 12);
    r.skipFirst = 2;
    r.dimBatch = 64;
    const Lens whole = fitLens(m, r);
    EXPECT_EQ(whole.nPrompts, 3);
    std::vector<Lens> shards;
    for (int i = 0; i < 2; ++i) {
        LensFitRequest s = r;
        s.shardIndex = i;
        s.shardCount = 2;
        shards.push_back(fitLens(m, s));
    }
    EXPECT_EQ(shards[0].nPrompts, 2);
    EXPECT_EQ(shards[1].nPrompts, 1);
    TmpDir tmp;
    std::vector<Lens> read;
    for (int i = 0; i < 2; ++i) {
        const std::string dir = (tmp.path / std::to_string(i)).string();
        writeLens(shards[static_cast<size_t>(i)], dir);
        read.push_back(readLens(dir));
        EXPECT_EQ(read.back().matrix[1].data, shards[static_cast<size_t>(i)].matrix[1].data);
        EXPECT_EQ(read.back().nPrompts, shards[static_cast<size_t>(i)].nPrompts);
    }
    const Lens merged = mergeLenses(read);
    EXPECT_EQ(merged.nPrompts, 3);
    EXPECT_TRUE(merged.complete);
    double worst = 0;
    for (size_t l = 0; l < whole.matrix.size(); ++l)
        for (size_t k = 0; k < whole.matrix[l].data.size(); ++k)
            worst = std::max(worst, static_cast<double>(std::abs(whole.matrix[l].data[k] - merged.matrix[l].data[k])));
    EXPECT_LT(worst, 1e-5);
    EXPECT_THROW(mergeLenses({read[0], read[0]}), std::invalid_argument) << "a prompt in two shards";
}

TEST(Lens, BadInputGetsAClearMessage) {
    const Model& m = bundled("grassmann");
    const auto message = [&](LensFitRequest r) {
        try {
            fitLens(m, r);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    LensFitRequest r;
    r.promptIds = {ids(m, kText)};
    LensFitRequest bad = r;
    bad.kind = LensKind::Logit;
    EXPECT_NE(message(bad).find("nothing to fit"), std::string::npos);
    bad = r;
    bad.shardIndex = 2;
    bad.shardCount = 2;
    EXPECT_NE(message(bad).find("--shard"), std::string::npos);
    bad = r;
    bad.window = 4096;
    EXPECT_NE(message(bad).find("max_len"), std::string::npos);
    bad = r;
    bad.promptIds = {{1, 2, 3}};
    EXPECT_NE(message(bad).find("too short"), std::string::npos);
    bad = r;
    bad.promptIds = {{1, 2, 99999}};
    EXPECT_NE(message(bad).find("outside the vocabulary"), std::string::npos);
    bad = r;
    bad.files = {"/nonexistent/text.txt"};
    bad.promptIds.clear();
    EXPECT_NE(message(bad).find("no prompts"), std::string::npos);
    EXPECT_THROW(lensKindFromName("tunned"), std::invalid_argument);
    TmpDir tmp;
    fs::create_directories(tmp.path);
    EXPECT_THROW(readLens(tmp.path.string()), std::runtime_error);
    // A lens of another model's shape is refused by name.
    Lens other;
    other.kind = LensKind::Jacobian;
    other.dModel = 64;
    other.nLayers = 6;
    EXPECT_THROW(evaluateLenses(m, {other}, {"other"}, LensEvalRequest{{}, {ids(m, kText)}, 128, 0}),
                 std::invalid_argument);
}

} // namespace
