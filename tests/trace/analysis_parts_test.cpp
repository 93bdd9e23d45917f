// An analysis computed in parts (what the window's visible views need first, the rest after)
// equals the analysis computed at once: every array bit for bit, the warnings in the same order.
#include "gwb/engine/analysis.h"
#include "trace_builders.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace gwb::engine;
using gwb::engine::test::attentionTrace;
using gwb::engine::test::grassmannTrace;

namespace {

bool same(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
               return x == y || (std::isnan(x) && std::isnan(y));
           });
}
bool same(const FloatArray& a, const FloatArray& b) {
    return a.shape == b.shape && same(a.data, b.data);
}

void expectSameAnalysis(const TraceAnalysis& x, const TraceAnalysis& y) {
    EXPECT_EQ(x.parts, y.parts);
    EXPECT_EQ(x.warnings, y.warnings);
    EXPECT_EQ(x.warningParts, y.warningParts);
    EXPECT_TRUE(same(x.promptSubspaceDistance, y.promptSubspaceDistance));
    EXPECT_TRUE(same(x.readingSubspaceDistance, y.readingSubspaceDistance));
    ASSERT_EQ(x.grassmann.size(), y.grassmann.size());
    for (size_t l = 0; l < x.grassmann.size(); ++l) {
        const GrassmannLayerAnalysis &a = x.grassmann[l], &b = y.grassmann[l];
        EXPECT_EQ(a.offsets, b.offsets) << l;
        for (const auto& [u, v] :
             {std::pair{&a.residual, &b.residual}, std::pair{&a.planarity, &b.planarity},
              std::pair{&a.coherence, &b.coherence}, std::pair{&a.meanGate, &b.meanGate},
              std::pair{&a.gateAboveHalf, &b.gateAboveHalf}, std::pair{&a.readoutResidual, &b.readoutResidual},
              std::pair{&a.readoutPlanarity, &b.readoutPlanarity}})
            EXPECT_TRUE(same(*u, *v)) << l;
        for (const auto& [u, v] :
             {std::pair{&a.pairNorm, &b.pairNorm}, std::pair{&a.anglesNext, &b.anglesNext},
              std::pair{&a.influence, &b.influence}, std::pair{&a.readoutSpectrum, &b.readoutSpectrum},
              std::pair{&a.readoutTopPlane, &b.readoutTopPlane},
              std::pair{&a.readoutContribution, &b.readoutContribution}, std::pair{&a.readoutAngles, &b.readoutAngles}})
            EXPECT_TRUE(same(*u, *v)) << l;
    }
    ASSERT_EQ(x.attention.size(), y.attention.size());
    for (size_t l = 0; l < x.attention.size(); ++l)
        EXPECT_TRUE(same(x.attention[l].entropy, y.attention[l].entropy)) << l;
}

/// Grassmann traces with warnings in every part: a constant state (prompt subspace, core), a zero
/// W_plu row (read-out), a rank-deficient W_red (angles between layers, reading subspaces).
std::vector<std::pair<std::string, Trace>> cases() {
    std::vector<std::pair<std::string, Trace>> out;
    for (const std::vector<int>& offsets : {std::vector<int>{1}, std::vector<int>{1, 3}, std::vector<int>{1, 2, 4}}) {
        Trace tr = grassmannTrace(16, 10, 5, 3, offsets, 40 + offsets.size());
        for (float& v : tr.layers[0].h.data)
            v = 0.25f;
        GrassmannLayerTrace& g0 = *tr.layers[0].grassmann; // token 5's z is 0: degenerate pairs (core)
        std::fill_n(g0.z.data.begin() + 5 * g0.z.dim(1), g0.z.dim(1), 0.0f);
        GrassmannLayerTrace& g1 = *tr.layers[1].grassmann;
        for (int64_t k = 0; k < g1.wPlu.dim(1); ++k)
            g1.wPlu.data[static_cast<size_t>(2 * g1.wPlu.dim(1) + k)] = 0.0f;
        GrassmannLayerTrace& g2 = *tr.layers[2].grassmann;
        for (int64_t c = 0; c < g2.wRed.dim(1); ++c)
            g2.wRed.data[static_cast<size_t>(4 * g2.wRed.dim(1) + c)] = g2.wRed.at2(0, c);
        out.emplace_back(std::to_string(offsets.size()) + " offsets", tr);
    }
    Trace pastFirst = grassmannTrace(12, 8, 4, 2, {2}, 50);
    pastFirst.config.stages.wedgePastFirst = true;
    out.emplace_back("past first", pastFirst);
    Trace normed = grassmannTrace(12, 8, 4, 2, {1, 2}, 51);
    normed.config.stages.reductionNorm = true; // angles between layers undefined, with a warning
    out.emplace_back("normalised z", normed);
    return out;
}

} // namespace

TEST(AnalysisParts, EveryFirstStageCompletesToTheWholeAnalysis) {
    for (const auto& [name, tr] : cases()) {
        SCOPED_TRACE(name);
        const TraceAnalysis whole = analyzeTrace(tr);
        EXPECT_EQ(whole.parts, static_cast<unsigned>(kAnalysisAll));
        EXPECT_EQ(whole.warnings.size(), whole.warningParts.size());
        unsigned warned = 0;
        for (unsigned part : whole.warningParts)
            warned |= part;
        const unsigned expected = name.find("offsets") != std::string::npos ? kAnalysisAll
                                  : name == "normalised z"                  ? kAnalysisLayerAngles
                                                                            : 0u;
        EXPECT_EQ(warned, expected);
        for (unsigned first = 0; first <= kAnalysisAll; ++first) {
            SCOPED_TRACE("first parts " + std::to_string(first));
            AnalysisOptions o;
            o.parts = first;
            o.threads = 2;
            const TraceAnalysis partial = analyzeTrace(tr, o);
            EXPECT_EQ(partial.parts, first);
            // What was not asked for is empty, never a stale or half-computed value.
            for (const GrassmannLayerAnalysis& a : partial.grassmann) {
                EXPECT_EQ(a.residual.empty(), !(first & kAnalysisCore));
                EXPECT_EQ(a.influence.empty(), !(first & kAnalysisCore));
                EXPECT_EQ(a.readoutContribution.empty(), !(first & kAnalysisReadout));
                EXPECT_EQ(a.anglesNext.empty(), !(first & kAnalysisLayerAngles));
            }
            EXPECT_EQ(partial.readingSubspaceDistance.empty(), !(first & kAnalysisReadingSubspaces));
            EXPECT_EQ(partial.promptSubspaceDistance.empty(), !(first & kAnalysisPromptSubspaces));
            int64_t done = 0, total = -1;
            const TraceAnalysis completed = completeAnalysis(tr, partial, {}, [&](int64_t d, int64_t t) {
                done = d;
                total = t;
                return true;
            });
            expectSameAnalysis(completed, whole);
            if (first != kAnalysisAll) {
                EXPECT_EQ(done, total);
            }
        }
    }
}

TEST(AnalysisParts, ATransformerAnalysisIsAlwaysWholeAndCompletionCanBeCancelled) {
    const Trace a = attentionTrace(10, 8, 2, 2, true, 9);
    AnalysisOptions o;
    o.parts = kAnalysisReadout;
    const TraceAnalysis an = analyzeTrace(a, o);
    EXPECT_EQ(an.parts, static_cast<unsigned>(kAnalysisAll));
    EXPECT_EQ(an.attention.size(), 2u);
    expectSameAnalysis(completeAnalysis(a, an), an);

    const Trace g = grassmannTrace(10, 8, 4, 2, {1}, 10);
    o.parts = kAnalysisCore;
    const TraceAnalysis core = analyzeTrace(g, o);
    EXPECT_THROW(completeAnalysis(g, core, {}, [](int64_t, int64_t) { return false; }), Cancelled);
    EXPECT_EQ(analysisPartNames(kAnalysisAll & ~kAnalysisCore),
              (std::vector<std::string>{"read-out planes", "angles between layers", "reading subspaces",
                                        "prompt subspaces"}));
}
