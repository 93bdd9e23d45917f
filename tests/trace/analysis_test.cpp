#include "gwb/engine/analysis.h"
#include "gwb/geometry/bivector.h"
#include "gwb/geometry/plucker.h"
#include "gwb/geometry/subspace.h"
#include "trace_builders.h"

#include <Eigen/Dense>
#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::engine;
using gwb::engine::test::attentionTrace;
using gwb::engine::test::grassmannTrace;
namespace geo = gwb::geometry;

namespace {
Eigen::VectorXd zRow(const GrassmannLayerTrace& g, int64_t t) {
    const int64_t r = g.z.dim(1);
    Eigen::VectorXd v(r);
    for (int64_t i = 0; i < r; ++i)
        v[i] = g.z.at2(t, i);
    return v;
}
Eigen::MatrixXd asMatrix(const FloatArray& a) {
    Eigen::MatrixXd m(a.dim(0), a.dim(1));
    for (int64_t i = 0; i < a.dim(0); ++i)
        for (int64_t j = 0; j < a.dim(1); ++j)
            m(i, j) = a.at2(i, j);
    return m;
}
} // namespace

TEST(Analysis, AggregatedBivectorIsAlwaysAPlane) {
    // Every p^(D) of token t contains z_t (current x past), so B_t = z_t ^ w_t with
    // w_t = mean_D z_{t-D} / max(||p_D||, eps): a plane for every t, not only single-offset tokens.
    // Residual and planarity therefore measure rounding only (this test documents that fact).
    const Trace tr = grassmannTrace(12, 16, 6, 2, {1, 2, 4}, 1);
    const TraceAnalysis an = analyzeTrace(tr);
    ASSERT_EQ(an.grassmann.size(), 2u);
    const GrassmannLayerAnalysis& L = an.grassmann[0];
    EXPECT_TRUE(std::isnan(L.residual[0]));
    EXPECT_TRUE(std::isnan(L.planarity[0]));
    for (int64_t t = 1; t < 12; ++t) {
        EXPECT_LE(L.residual[static_cast<size_t>(t)], 1e-10f) << t;
        EXPECT_NEAR(L.planarity[static_cast<size_t>(t)], 1.0f, 1e-6f) << t;
    }
    // A mean of planes that do not share a vector is not a plane: the measure itself can see it.
    const GrassmannLayerTrace& g = *tr.layers[0].grassmann;
    const Eigen::VectorXd b =
        geo::normalizedWedge(zRow(g, 5), zRow(g, 4)).p + geo::normalizedWedge(zRow(g, 3), zRow(g, 2)).p;
    EXPECT_GT(geo::pluckerResidual(b), 1e-3);
}

TEST(Analysis, ResidualAndPairNormMatchDirectRecomputation) {
    const Trace tr = grassmannTrace(10, 12, 5, 1, {1, 3}, 2);
    const TraceAnalysis an = analyzeTrace(tr);
    const GrassmannLayerTrace& g = *tr.layers[0].grassmann;
    const GrassmannLayerAnalysis& L = an.grassmann[0];
    const int64_t t = 7;
    const auto p1 = geo::normalizedWedge(zRow(g, t), zRow(g, t - 1), 1e-8);
    const auto p3 = geo::normalizedWedge(zRow(g, t), zRow(g, t - 3), 1e-8);
    const Eigen::VectorXd b = 0.5 * (p1.p + p3.p);
    EXPECT_NEAR(L.residual[t], geo::pluckerResidual(b), 1e-6);
    EXPECT_NEAR(L.pairNorm.at2(t, 1), p3.norm, 1e-5 * p3.norm);
    EXPECT_TRUE(std::isnan(L.pairNorm.at2(2, 1)));
}

TEST(Analysis, InfluenceRowsSumToOneAndMatchDefinition) {
    const Trace tr = grassmannTrace(20, 16, 6, 1, {1, 2, 4}, 3);
    const TraceAnalysis an = analyzeTrace(tr);
    const GrassmannLayerTrace& g = *tr.layers[0].grassmann;
    const GrassmannLayerAnalysis& L = an.grassmann[0];
    for (int64_t t = 0; t < 20; ++t) {
        double sum = 0;
        int valid = 0;
        for (int64_t o = 0; o < 3; ++o) {
            const float v = L.influence.at2(t, o);
            if (t - g.offsets[static_cast<size_t>(o)] < 0) {
                EXPECT_TRUE(std::isnan(v));
            } else {
                sum += v;
                ++valid;
            }
        }
        if (valid > 0) {
            EXPECT_NEAR(sum, 1.0, 1e-6) << "t = " << t;
        }
    }
    // Direct: c_o = ||(1 - a_t) * (W_plu p^(D))|| (the 1/|W_t| cancels in the normalization).
    const int64_t t = 9;
    const Eigen::MatrixXd wPlu = asMatrix(g.wPlu);
    double c[3], total = 0;
    for (int o = 0; o < 3; ++o) {
        const Eigen::VectorXd y = wPlu * geo::normalizedWedge(zRow(g, t), zRow(g, t - g.offsets[o]), 1e-8).p;
        double n2 = 0;
        for (int64_t i = 0; i < 16; ++i)
            n2 += std::pow((1.0 - g.gate.at2(t, i)) * y[i], 2);
        total += (c[o] = std::sqrt(n2));
    }
    for (int o = 0; o < 3; ++o)
        EXPECT_NEAR(L.influence.at2(t, o), c[o] / total, 1e-6);
    // Gate statistics.
    double mean = 0;
    int above = 0;
    for (int64_t i = 0; i < 16; ++i) {
        mean += g.gate.at2(t, i) / 16.0;
        above += g.gate.at2(t, i) > 0.5f;
    }
    EXPECT_NEAR(L.meanGate[t], mean, 1e-6);
    EXPECT_NEAR(L.gateAboveHalf[t], above / 16.0, 1e-7);

    const FloatArray m = influenceMatrix(L, 20);
    EXPECT_EQ(m.at2(t, t - 4), L.influence.at2(t, 2));
    EXPECT_EQ(m.at2(t, t - 3), 0.0f);
    EXPECT_EQ(m.at2(t, t), 0.0f);
    EXPECT_THROW(influenceMatrix(L, 19), std::invalid_argument);
}

TEST(Analysis, InfluenceIsTheSameThroughEitherProjection) {
    // Two offsets (or one, as GrassLM's layers have) project each pair's plane through W_plu; more
    // form M_t = sum_i z_ti A_i once per token. Both are checked against the definition.
    for (const std::vector<int>& offsets : {std::vector<int>{1}, std::vector<int>{1, 3}, std::vector<int>{1, 2, 4}}) {
        const Trace tr = grassmannTrace(14, 16, 6, 1, offsets, 11);
        const TraceAnalysis an = analyzeTrace(tr);
        const GrassmannLayerTrace& g = *tr.layers[0].grassmann;
        const Eigen::MatrixXd wPlu = asMatrix(g.wPlu);
        for (int64_t t = 4; t < 14; t += 3) {
            std::vector<double> c(offsets.size());
            double total = 0;
            for (size_t o = 0; o < offsets.size(); ++o) {
                const Eigen::VectorXd y = wPlu * geo::normalizedWedge(zRow(g, t), zRow(g, t - offsets[o]), 1e-8).p;
                double n2 = 0;
                for (int64_t i = 0; i < 16; ++i)
                    n2 += std::pow((1.0 - g.gate.at2(t, i)) * y[i], 2);
                total += (c[o] = std::sqrt(n2));
            }
            for (size_t o = 0; o < offsets.size(); ++o)
                EXPECT_NEAR(an.grassmann[0].influence.at2(t, static_cast<int64_t>(o)), c[o] / total, 1e-6)
                    << offsets.size() << " offsets, t = " << t << ", o = " << o;
        }
    }
}

TEST(Analysis, InfluenceWeighsGByItsShareOfTheMix) {
    // The share of g in the block's mix: 1 - a for the paper gate (a x + (1 - a) g), a for
    // geometry_only (a g). Before, geometry_only was weighed by 1 - a, the share it does not have.
    Trace tr = grassmannTrace(12, 16, 6, 1, {1, 2, 4}, 5);
    tr.config.gate = GateVariant::GeometryOnly;
    const TraceAnalysis an = analyzeTrace(tr);
    const GrassmannLayerTrace& g = *tr.layers[0].grassmann;
    const Eigen::MatrixXd wPlu = asMatrix(g.wPlu);
    const int64_t t = 8;
    double c[3], paper[3], total = 0, paperTotal = 0;
    for (int o = 0; o < 3; ++o) {
        const Eigen::VectorXd y = wPlu * geo::normalizedWedge(zRow(g, t), zRow(g, t - g.offsets[o]), 1e-8).p;
        double n2 = 0, p2 = 0;
        for (int64_t i = 0; i < 16; ++i) {
            n2 += std::pow(g.gate.at2(t, i) * y[i], 2);
            p2 += std::pow((1.0 - g.gate.at2(t, i)) * y[i], 2);
        }
        total += (c[o] = std::sqrt(n2));
        paperTotal += (paper[o] = std::sqrt(p2));
    }
    double apart = 0;
    for (int o = 0; o < 3; ++o) {
        EXPECT_NEAR(an.grassmann[0].influence.at2(t, o), c[o] / total, 1e-6);
        apart = std::max(apart, std::abs(c[o] / total - paper[o] / paperTotal));
    }
    EXPECT_GT(apart, 1e-3); // the two weightings differ on this trace: the check can see the change
}

TEST(Analysis, AnglesBetweenIdenticalLayersAreZero) {
    Trace tr = grassmannTrace(15, 16, 5, 3, {1, 2}, 4);
    tr.layers[1] = tr.layers[0]; // layer 1 identical to layer 0
    const TraceAnalysis an = analyzeTrace(tr);
    const FloatArray& a0 = an.grassmann[0].anglesNext;
    ASSERT_EQ(a0.shape, (std::vector<int64_t>{15, 2, 2}));
    for (int64_t t = 2; t < 15; ++t)
        for (int64_t o = 0; o < 2; ++o)
            for (int64_t k = 0; k < 2; ++k)
                EXPECT_LE(a0.at3(t, o, k), 1e-6f);
    EXPECT_TRUE(std::isnan(a0.at3(0, 0, 0)));
    EXPECT_TRUE(std::isnan(an.grassmann[2].anglesNext.at3(5, 0, 0))); // last layer
    // Layer 1 -> 2 against a direct computation through Eigen's pseudo-inverse.
    const GrassmannLayerTrace& g1 = *tr.layers[1].grassmann;
    const GrassmannLayerTrace& g2 = *tr.layers[2].grassmann;
    const Eigen::MatrixXd p1 = asMatrix(g1.wRed).completeOrthogonalDecomposition().pseudoInverse();
    const Eigen::MatrixXd p2 = asMatrix(g2.wRed).completeOrthogonalDecomposition().pseudoInverse();
    const int64_t t = 8, D = 2;
    Eigen::MatrixXd a(16, 2), b(16, 2);
    a << p1 * zRow(g1, t), p1 * zRow(g1, t - D);
    b << p2 * zRow(g2, t), p2 * zRow(g2, t - D);
    const Eigen::VectorXd th = geo::principalAngles(a, b).angles;
    EXPECT_NEAR(an.grassmann[1].anglesNext.at3(t, 1, 0), th[0], 1e-5);
    EXPECT_NEAR(an.grassmann[1].anglesNext.at3(t, 1, 1), th[1], 1e-5);
    EXPECT_GT(th[1], 0.1);
    // Reading subspaces: identical W_red -> 0; all distances symmetric, diagonal 0.
    const FloatArray& rd = an.readingSubspaceDistance;
    EXPECT_LE(rd.at2(0, 1), 1e-5f);
    EXPECT_GT(rd.at2(0, 2), 0.1f);
    const FloatArray& pd = an.promptSubspaceDistance;
    for (int64_t i = 0; i < 3; ++i) {
        EXPECT_LE(pd.at2(i, i), 1e-5f);
        for (int64_t j = 0; j < 3; ++j)
            EXPECT_NEAR(pd.at2(i, j), pd.at2(j, i), 1e-5f);
    }
    EXPECT_LE(pd.at2(0, 1), 1e-5f);
}

TEST(Analysis, PromptSubspaceMatchesGeometryLibrary) {
    const Trace tr = grassmannTrace(30, 10, 4, 2, {1}, 5);
    AnalysisOptions opt;
    opt.promptSubspaceK = 3;
    const TraceAnalysis an = analyzeTrace(tr, opt);
    EXPECT_EQ(an.promptSubspaceK, 3);
    geo::RowMatrixXd h0 = asMatrix(tr.layers[0].h), h1 = asMatrix(tr.layers[1].h);
    const geo::Basis b0 = geo::principalSubspace(h0, 3, true), b1 = geo::principalSubspace(h1, 3, true);
    EXPECT_NEAR(an.promptSubspaceDistance.at2(0, 1), geo::geodesicDistance(geo::principalAnglesOrthonormal(b0.q, b1.q)),
                1e-5);
}

TEST(Analysis, RankDropsAreWarnings) {
    Trace tr = grassmannTrace(3, 8, 4, 1, {1}, 6); // 3 tokens: centred rank <= 2 < k = 4
    auto& g = *tr.layers[0].grassmann;
    for (int64_t c = 0; c < 8; ++c)
        g.wRed.data[static_cast<size_t>(3 * 8 + c)] = g.wRed.at2(0, c); // W_red rank 3
    const TraceAnalysis an = analyzeTrace(tr);
    bool prompt = false, reading = false;
    for (const std::string& w : an.warnings) {
        prompt |= w.find("prompt subspace has rank") != std::string::npos;
        reading |= w.find("W_red has rank 3") != std::string::npos;
    }
    EXPECT_TRUE(prompt);
    EXPECT_TRUE(reading);
}

TEST(Analysis, AttentionMetricsFromDenseAndRecomputedRows) {
    const Trace dense = attentionTrace(9, 16, 2, 2, true, 7);
    Trace sparse = dense;
    for (LayerTrace& L : sparse.layers)
        L.attention->attn = FloatArray();
    const TraceAnalysis a = analyzeTrace(dense), b = analyzeTrace(sparse);
    ASSERT_EQ(a.attention.size(), 2u);
    EXPECT_TRUE(a.grassmann.empty());
    EXPECT_TRUE(a.readingSubspaceDistance.empty());
    EXPECT_EQ(a.promptSubspaceDistance.shape, (std::vector<int64_t>{2, 2}));
    const AttentionLayerTrace& at = *dense.layers[1].attention;
    // attentionRow recomputed from q, k equals the dense softmax.
    for (int64_t t = 0; t < 9; ++t) {
        const std::vector<float> r1 = attentionRow(at, 1, t), r2 = attentionRow(*sparse.layers[1].attention, 1, t);
        for (int64_t j = 0; j <= t; ++j)
            EXPECT_NEAR(r1[static_cast<size_t>(j)], r2[static_cast<size_t>(j)], 1e-6f);
    }
    const AttentionLayerAnalysis &x = a.attention[1], &y = b.attention[1];
    // Every metric of the recomputed rows (from the scores, one pass) equals the dense rows'.
    for (size_t i = 0; i < x.entropy.data.size(); ++i) {
        EXPECT_NEAR(x.entropy.data[i], y.entropy.data[i], 1e-5f);
        EXPECT_NEAR(x.transportCost.data[i], y.transportCost.data[i], 1e-4f);
        EXPECT_NEAR(x.sparsity.data[i], y.sparsity.data[i], 1e-5f);
        EXPECT_NEAR(x.top1.data[i], y.top1.data[i], 1e-6f);
        EXPECT_NEAR(x.effSupport.data[i], y.effSupport.data[i], 1e-4f);
        if (i % 9 == 0) // row 0 has one entry: no spread
            EXPECT_TRUE(std::isnan(y.normEntropy.data[i]));
        else
            EXPECT_NEAR(x.normEntropy.data[i], y.normEntropy.data[i], 1e-5f);
    }
    // Direct: row (head 1, t = 6).
    const int64_t t = 6, dh = 8;
    double h = 0, cost = 0, top = 0;
    for (int64_t j = 0; j <= t; ++j) {
        const double p = at.attn.at3(1, t, j);
        double dot = 0;
        for (int64_t c = 0; c < dh; ++c)
            dot += static_cast<double>(at.q.at3(1, t, c)) * at.k.at3(1, j, c);
        h -= p * std::log(p);
        cost -= p * dot;
        top = std::max(top, p);
    }
    EXPECT_NEAR(x.entropy.at2(1, t), h, 1e-5);
    EXPECT_NEAR(x.normEntropy.at2(1, t), h / std::log(7.0), 1e-5);
    EXPECT_NEAR(x.effSupport.at2(1, t), std::exp(h), 1e-4);
    EXPECT_NEAR(x.top1.at2(1, t), top, 1e-6);
    EXPECT_NEAR(x.transportCost.at2(1, t), cost, 1e-4);
    EXPECT_EQ(x.entropy.at2(0, 0), 0.0f);
    EXPECT_TRUE(std::isnan(x.normEntropy.at2(0, 0)));
}

TEST(Analysis, CompareRows) {
    const std::vector<float> p = {0.0f, 0.7f, 0.3f}, q = {0.2f, 0.6f, 0.2f}, r = {1.0f, 0.0f, 0.0f};
    EXPECT_NEAR(compareRows(p, p).jsDivergence, 0.0, 1e-12);
    EXPECT_TRUE(compareRows(p, q).top1Agrees);
    EXPECT_FALSE(compareRows(p, r).top1Agrees);
    EXPECT_NEAR(compareRows(p, r).jsDivergence, std::log(2.0), 1e-7);
    EXPECT_THROW(compareRows(p, {0.5f, 0.5f}), std::invalid_argument);
    EXPECT_THROW(compareRows({0.0f, 0.0f}, {0.5f, 0.5f}), std::invalid_argument);
}

TEST(Analysis, ProgressAndCancel) {
    const Trace tr = grassmannTrace(40, 8, 4, 2, {1, 2}, 8);
    int64_t last = -1, total = 0;
    bool monotone = true;
    analyzeTrace(tr, {}, [&](int64_t done, int64_t tot) {
        monotone &= done >= last;
        last = done;
        total = tot;
        return true;
    });
    EXPECT_TRUE(monotone);
    EXPECT_EQ(last, total);
    EXPECT_GT(total, 0);
    EXPECT_THROW(analyzeTrace(tr, {}, [](int64_t, int64_t) { return false; }), Cancelled);
}

TEST(Analysis, BadInputThrows) {
    EXPECT_THROW(analyzeTrace(Trace{}), std::invalid_argument);
    Trace tr = grassmannTrace(6, 8, 4, 1, {1}, 9);
    Trace badZ = tr;
    badZ.layers[0].grassmann->z.data[3] = NAN;
    try {
        analyzeTrace(badZ);
        FAIL() << "NaN in z accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("layer 0"), std::string::npos) << e.what();
    }
    Trace badShape = tr;
    badShape.layers[0].grassmann->wPlu = FloatArray::zeros({8, 5});
    EXPECT_THROW(analyzeTrace(badShape), std::invalid_argument);
    Trace noOffsets = tr;
    noOffsets.layers[0].grassmann->offsets.clear();
    EXPECT_THROW(analyzeTrace(noOffsets), std::invalid_argument);
    AnalysisOptions opt;
    opt.promptSubspaceK = 0;
    EXPECT_THROW(analyzeTrace(tr, opt), std::invalid_argument);
}

TEST(Analysis, DefinitionsCoverEveryArray) {
    for (const char* key : {"residual", "planarity", "coherence", "pairNorm", "anglesNext", "influence", "meanGate",
                            "gateAboveHalf", "entropy", "normEntropy", "sparsity", "top1", "effSupport",
                            "transportCost", "promptSubspaceDistance", "readingSubspaceDistance", "jsDivergence"})
        EXPECT_TRUE(definitions().count(key)) << key;
}

TEST(Analysis, CoherenceIsNormOfMeanUnitPlane) {
    // z_t = e0, z_{t-1} = e1, z_{t-2} = e2: p^(1) = e0^e1 and p^(2) = e0^e2 are orthonormal, so
    // ||B_t|| = ||(p1 + p2) / 2|| = sqrt(2)/2. A token with one valid offset has coherence 1.
    Trace tr = grassmannTrace(3, 8, 3, 1, {1, 2}, 3);
    GrassmannLayerTrace& g = *tr.layers[0].grassmann;
    std::fill(g.z.data.begin(), g.z.data.end(), 0.0f);
    g.z.data[0 * 3 + 2] = 1.0f; // z_0 = e2
    g.z.data[1 * 3 + 1] = 1.0f; // z_1 = e1
    g.z.data[2 * 3 + 0] = 1.0f; // z_2 = e0
    const TraceAnalysis an = analyzeTrace(tr);
    const GrassmannLayerAnalysis& L = an.grassmann[0];
    EXPECT_TRUE(std::isnan(L.coherence[0]));
    EXPECT_NEAR(L.coherence[1], 1.0f, 1e-6f);
    EXPECT_NEAR(L.coherence[2], std::sqrt(2.0f) / 2.0f, 1e-6f);
    // Two offsets giving the same plane with the same orientation: coherence 1.
    g.z.data.assign(g.z.data.size(), 0.0f);
    g.z.data[0 * 3 + 1] = 2.0f; // z_0 = 2 e1
    g.z.data[1 * 3 + 1] = 1.0f; // z_1 = e1
    g.z.data[2 * 3 + 0] = 1.0f; // z_2 = e0
    const TraceAnalysis same = analyzeTrace(tr);
    EXPECT_NEAR(same.grassmann[0].coherence[2], 1.0f, 1e-6f);
}

TEST(Analysis, LayersInParallelGiveTheSameResultProgressAndCancel) {
    // threads only changes who computes each layer: every array, the warnings (in layer order) and
    // the progress total are those of the one-thread analysis; a cancel still throws Cancelled.
    auto same = [](const FloatArray& a, const FloatArray& b) {
        return a.shape == b.shape && std::equal(a.data.begin(), a.data.end(), b.data.begin(), [](float x, float y) {
                   return x == y || (std::isnan(x) && std::isnan(y));
               });
    };
    Trace g = grassmannTrace(30, 8, 4, 5, {1, 2, 4}, 21);
    // Layer 3 gets a rank-deficient prompt subspace (all states equal) so there are warnings to order.
    for (float& v : g.layers[3].h.data)
        v = 0.5f;
    const Trace a = attentionTrace(30, 8, 2, 3, true, 22);
    for (const Trace* tr : {static_cast<const Trace*>(&g), &a}) {
        AnalysisOptions one, many;
        many.threads = 3;
        int64_t total1 = 0, total3 = 0, last3 = -1;
        bool monotone = true;
        const TraceAnalysis x = analyzeTrace(*tr, one, [&](int64_t, int64_t t) {
            total1 = t;
            return true;
        });
        const TraceAnalysis y = analyzeTrace(*tr, many, [&](int64_t done, int64_t t) {
            monotone &= done >= last3;
            last3 = done;
            total3 = t;
            return true;
        });
        EXPECT_EQ(total1, total3);
        EXPECT_EQ(last3, total3);
        EXPECT_TRUE(monotone);
        EXPECT_EQ(x.warnings, y.warnings);
        EXPECT_TRUE(same(x.promptSubspaceDistance, y.promptSubspaceDistance));
        ASSERT_EQ(x.grassmann.size(), y.grassmann.size());
        for (size_t l = 0; l < x.grassmann.size(); ++l) {
            EXPECT_TRUE(same(x.grassmann[l].influence, y.grassmann[l].influence)) << l;
            EXPECT_TRUE(same(x.grassmann[l].anglesNext, y.grassmann[l].anglesNext)) << l;
            EXPECT_TRUE(same(x.grassmann[l].readoutAngles, y.grassmann[l].readoutAngles)) << l;
            EXPECT_EQ(x.grassmann[l].coherence.size(), y.grassmann[l].coherence.size()) << l;
        }
        ASSERT_EQ(x.attention.size(), y.attention.size());
        for (size_t l = 0; l < x.attention.size(); ++l) {
            EXPECT_TRUE(same(x.attention[l].entropy, y.attention[l].entropy)) << l;
            EXPECT_TRUE(same(x.attention[l].transportCost, y.attention[l].transportCost)) << l;
        }
        EXPECT_THROW(analyzeTrace(*tr, many, [](int64_t, int64_t) { return false; }), Cancelled);
    }
    EXPECT_FALSE(analyzeTrace(g, {}).warnings.empty());
}
