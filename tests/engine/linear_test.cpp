// Direct logit attribution (linearAttribution, gwb paths --linear): on every pre-norm variant the
// terms sum to the metric minus the bias term (the required identity); the per-channel split sums
// to the offsets' terms; the FFN and attention terms equal the values the hooks see read along the
// frozen final LayerNorm, computed here from the parameters; every other arrangement is refused.

#include "engine_test_util.h"

#include "gwb/engine/hooks.h"
#include "gwb/engine/patching.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace gwb::engine;

namespace {

PathRequest request(const ModelConfig& c) {
    PathRequest q;
    std::mt19937 rng(5);
    for (int i = 0; i < 11; ++i) {
        const int64_t id = static_cast<int64_t>(rng() % static_cast<uint32_t>(c.vocabSize));
        q.clean.push_back(id);
        q.corrupt.push_back(i == 3 || i == 7 ? (id + 5) % c.vocabSize : id);
    }
    q.answer = 4;
    q.wrong = 9;
    return q;
}

/// v = P(gamma * (E[a] - E[w])) / sigma of the final state row `h` (double), from the parameters.
std::vector<double> readout(const Model& m, const std::vector<float>& h, int64_t a, int64_t w) {
    const auto params = m.parameters();
    const FloatArray& E = params.at("tok_embed.weight");
    const FloatArray& gamma = params.at("ln_final.weight");
    const size_t d = h.size();
    double mean = 0, var = 0;
    for (float x : h)
        mean += x;
    mean /= static_cast<double>(d);
    for (float x : h)
        var += (x - mean) * (x - mean);
    const double sigma = std::sqrt(var / static_cast<double>(d) + m.config().layerNormEps);
    std::vector<double> u(d);
    double um = 0;
    for (size_t i = 0; i < d; ++i) {
        u[i] = gamma.data[i] * (static_cast<double>(E.data[a * d + i]) - E.data[w * d + i]);
        um += u[i];
    }
    for (double& x : u)
        x = (x - um / static_cast<double>(d)) / sigma;
    return u;
}

} // namespace

TEST(Linear, TermsSumToTheMetricOnEveryPreNormVariant) {
    int checked = 0;
    for (const ModelConfig& config : test::allVariants()) {
        SCOPED_TRACE(test::variantName(config));
        const Model m = test::randomModel(config, 91);
        const PathRequest q = request(config);
        if (config.norm != NormPlacement::Pre) {
            try {
                linearAttribution(m, q);
                ADD_FAILURE() << "not refused";
            } catch (const std::invalid_argument& e) {
                EXPECT_NE(std::string(e.what()).find("needs a pre-norm model"), std::string::npos) << e.what();
                EXPECT_NE(std::string(e.what()).find(normName(config.norm)), std::string::npos) << e.what();
            }
            continue;
        }
        // GrassmannGPTv3's stages: the mixer's write does not split by offset (the past x current
        // orientation is only the planes' sign).
        if (config.stages.anyBeyondOrientation()) {
            try {
                linearAttribution(m, q);
                ADD_FAILURE() << "not refused";
            } catch (const std::invalid_argument& e) {
                EXPECT_NE(std::string(e.what()).find("further stages"), std::string::npos) << e.what();
            }
            continue;
        }
        ++checked;
        const LinearResult r = linearAttribution(m, q);
        ASSERT_EQ(r.labels.size(), r.corrupt.size());
        ASSERT_EQ(r.labels.size(), r.clean.size());
        double sum = r.bias, scale = std::abs(r.bias);
        for (double t : r.corrupt) {
            sum += t;
            scale += std::abs(t);
        }
        EXPECT_NEAR(sum, r.corruptMetric, 1e-5) << "terms' scale " << scale;
        EXPECT_EQ(r.labels.front(), "embed");
        // Every block writes its FFN, and the mixer in parts (heads or offsets and biases).
        for (int l = 0; l < config.nLayers; ++l)
            EXPECT_NE(std::find(r.labels.begin(), r.labels.end(), "ffn." + std::to_string(l)), r.labels.end());
        if (config.kind == ModelKind::Grassmann) {
            ASSERT_EQ(r.channels, config.dModel);
            for (int l = 0; l < config.nLayers; ++l) {
                double offsets = 0, channels = 0;
                for (size_t i = 0; i < r.labels.size(); ++i)
                    if (r.labels[i].rfind("offset." + std::to_string(l) + ".", 0) == 0) offsets += r.corrupt[i];
                for (int64_t ch = 0; ch < r.channels; ++ch)
                    channels += r.channelCorrupt[static_cast<size_t>(l * r.channels + ch)];
                EXPECT_NEAR(channels, offsets, 1e-9) << "layer " << l;
            }
        }
        // The same prompt twice: the clean terms are the corrupted ones.
        PathRequest same = q;
        same.clean = same.corrupt;
        const LinearResult s = linearAttribution(m, same);
        for (size_t i = 0; i < s.corrupt.size(); ++i)
            EXPECT_DOUBLE_EQ(s.clean[i], s.corrupt[i]) << s.labels[i];
    }
    EXPECT_EQ(checked, 7); // with the per-offset MLP (CausalGrassmannMixer): its offsets' MLP outputs are the terms
}

TEST(Linear, FfnAndAttentionTermsAreTheHookedWritesReadThroughTheFinalNorm) {
    for (ModelKind kind : {ModelKind::Grassmann, ModelKind::Transformer}) {
        ModelConfig c = test::tinyConfig(kind);
        c.norm = NormPlacement::Pre;
        const Model m = test::randomModel(c, 17);
        const PathRequest q = request(c);
        const LinearResult r = linearAttribution(m, q);
        const int64_t T = static_cast<int64_t>(q.corrupt.size()), mpos = T - 1;
        std::map<std::string, FloatArray> seen;
        std::map<std::string, SiteHook> hooks;
        std::vector<std::string> names = {"resid." + std::to_string(c.nLayers)};
        for (int l = 0; l < c.nLayers; ++l) {
            names.push_back("ffn." + std::to_string(l));
            names.push_back("mixer." + std::to_string(l));
        }
        for (const std::string& n : names)
            hooks[n] = [&seen](const FloatArray& v, const std::string& name) -> std::optional<FloatArray> {
                seen[name] = v;
                return std::nullopt;
            };
        runWithHooks(m, q.corrupt, hooks);
        const FloatArray& fin = seen.at("resid." + std::to_string(c.nLayers));
        const std::vector<float> hN(fin.row(mpos), fin.row(mpos) + c.dModel);
        const std::vector<double> v = readout(m, hN, q.answer, q.wrong);
        auto dot = [&](const FloatArray& a) {
            double s = 0;
            for (int64_t i = 0; i < c.dModel; ++i)
                s += a.row(mpos)[i] * v[static_cast<size_t>(i)];
            return s;
        };
        auto term = [&](const std::string& label) {
            const auto it = std::find(r.labels.begin(), r.labels.end(), label);
            EXPECT_NE(it, r.labels.end()) << label;
            return it == r.labels.end() ? 0.0 : r.corrupt[static_cast<size_t>(it - r.labels.begin())];
        };
        for (int l = 0; l < c.nLayers; ++l) {
            const std::string L = std::to_string(l);
            EXPECT_NEAR(term("ffn." + L), dot(seen.at("ffn." + L)), 1e-5) << kindName(kind);
            if (kind == ModelKind::Transformer) {
                double heads = term("attn_bias." + L);
                for (int hd = 0; hd < c.nHeads; ++hd)
                    heads += term("head." + L + "." + std::to_string(hd));
                EXPECT_NEAR(heads, dot(seen.at("mixer." + L)), 1e-5);
            }
        }
    }
}
