// The Lens figure with lenses beside the logit lens (LensFigure::setComparison) and with gwb lens
// eval's summary (setEvalSummaries), from hand-built readouts: the grids' numbers, the charts, the
// caption naming each lens and where it was fitted, and whole text at 3.5 in and 7 in.

#include "svg_text.h"
#include "synthetic_data.h"

#include "gwb/views/figure_export.h"
#include "gwb/views/lens_figure.h"

#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::views;
using gwb::engine::LensReadout;

namespace {

/// A readout of `kind` on trace `t`: top-1 id (s + t) % 7 (id 3 is "Elizabeth"), probability
/// 0.1 + 0.1 s, KL (N - s) * 0.5 (+ 0.25 for lenses other than the logit lens), ranks s; kind
/// "jacobian" has no row at s = 0.
LensReadout readout(const gwb::engine::Trace& t, const std::string& kind, bool sameModel = true) {
    LensReadout r;
    r.lens = kind;
    r.folder = kind == "logit" ? std::string() : "/lenses/" + kind;
    r.fittedOn = kind == "logit" ? std::string() : "elsewhere-model";
    r.sameModel = sameModel;
    r.modelName = t.modelName;
    r.grassmann = t.isGrassmann();
    const int64_t N = static_cast<int64_t>(t.layers.size()), T = t.length();
    r.nLayers = N;
    std::vector<int32_t> top, rank;
    std::vector<float> prob, kl;
    for (int64_t s = 0; s <= N; ++s)
        for (int64_t i = 0; i < T; ++i) {
            const bool none = kind == "jacobian" && s == 0;
            top.push_back(none ? -1 : static_cast<int32_t>((s + i) % 7));
            prob.push_back(none ? std::nanf("") : 0.1f + 0.1f * static_cast<float>(s));
            kl.push_back(none ? std::nanf("")
                              : static_cast<float>(N - s) * 0.5f + (kind == "logit" || s == N ? 0.0f : 0.25f));
            rank.push_back(none || i + 1 == T ? -1 : static_cast<int32_t>(s));
        }
    r.top1 = gwb::engine::IntArray({N + 1, T}, top);
    r.top1Prob = gwb::engine::FloatArray({N + 1, T}, prob);
    r.kl = gwb::engine::FloatArray({N + 1, T}, kl);
    r.nextRank = gwb::engine::IntArray({N + 1, T}, rank);
    for (int32_t id = 0; id < 7; ++id)
        r.pieces[id] = id == 3 ? "Elizabeth" : "w" + std::to_string(id);
    return r;
}

std::unique_ptr<LensFigure> comparisonFigure(const WorkbenchData& data, bool tunedSameModel = true) {
    auto c = std::make_shared<gwb::engine::LensComparison>();
    c->grassmann = {readout(*data.grassmann, "logit"), readout(*data.grassmann, "tuned", tunedSameModel),
                    readout(*data.grassmann, "jacobian")};
    c->baseline = {readout(*data.baseline, "logit"), readout(*data.baseline, "jacobian")};
    c->notes = {"the tuned lens in '/x' does not fit Transformer"};
    auto f = std::make_unique<LensFigure>();
    f->setData(data);
    f->setSelection({2, 0, 0, 0});
    f->setComparison(c);
    return f;
}

} // namespace

TEST(LensCompare, GridsShowEachLensTop1ColouredByKl) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const auto f = comparisonFigure(data);
    ASSERT_TRUE(f->comparing());
    EXPECT_TRUE(f->hasContent());
    const int64_t N = data.grassmann->layers.size();
    const LensGridData g = f->readoutGrid(f->comparison()->grassmann[1], 5);
    ASSERT_EQ(g.rows(), N + 1);
    ASSERT_EQ(g.cols(), 5);
    EXPECT_EQ(g.firstToken, 0); // token 2 centred in a window of 5
    EXPECT_EQ(g.rowLabels.last(), QStringLiteral("final"));
    EXPECT_EQ(g.text[1], QStringLiteral("w1")); // s = 0, token 1: id 1
    EXPECT_EQ(g.text[3], QStringLiteral("Elizabeth"));
    EXPECT_FLOAT_EQ(g.prob[0], static_cast<float>(N) * 0.5f + 0.25f); // the colour is KL, not probability
    EXPECT_FLOAT_EQ(g.prob[static_cast<size_t>(N * 5)], 0.0f);        // the final row: KL 0
    EXPECT_FLOAT_EQ(g.scaleMax, static_cast<float>(N) * 0.5f + 0.25f);
    EXPECT_EQ(g.title, QStringLiteral("Grassmann \u00b7 tuned lens")); // fitted on this model: the caption says where
    const auto other = comparisonFigure(data, false);
    EXPECT_EQ(other->readoutGrid(other->comparison()->grassmann[1], 5).title,
              QStringLiteral("Grassmann \u00b7 tuned lens (fitted on elsewhere-model: another model)"));
    // The Jacobian lens has no map at L0 in: a dash and no colour.
    const LensGridData j = f->readoutGrid(f->comparison()->grassmann[2], 5);
    EXPECT_EQ(j.text[0], QStringLiteral("\u2014"));
    EXPECT_TRUE(std::isnan(j.prob[0]));
    EXPECT_EQ(j.text[5], QStringLiteral("w1"));
    // A cell whose top-1 is the actual next token is marked.
    const auto& tr = *data.grassmann;
    for (int c = 0; c < g.cols(); ++c)
        EXPECT_EQ(g.hitsNext[static_cast<size_t>(c)], tr.tokens[static_cast<size_t>(c + 1)].id == c % 7) << c;
}

TEST(LensCompare, ChartsHaveASeriesPerModelAndLens) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const auto f = comparisonFigure(data, false);
    const ChartData rank = f->readoutRankChart();
    ASSERT_EQ(rank.series.size(), 5u);
    EXPECT_EQ(rank.series[0].name, QStringLiteral("Grassmann logit"));
    EXPECT_EQ(rank.series[1].name, QStringLiteral("Grassmann tuned *")); // fitted on another model
    EXPECT_EQ(rank.series[4].name, QStringLiteral("Transformer Jacobian"));
    EXPECT_DOUBLE_EQ(rank.series[0].y[2], 3.0); // rank 2 at s = 2, drawn as 1 = top-1
    EXPECT_TRUE(std::isnan(rank.series[2].y[0]));
    const ChartData kl = f->readoutKlChart();
    ASSERT_EQ(kl.series.size(), 5u);
    const auto N = static_cast<double>(data.grassmann->layers.size());
    EXPECT_DOUBLE_EQ(kl.series[1].y[0], N * 0.5 + 0.25); // the mean over tokens of a constant
    EXPECT_DOUBLE_EQ(kl.series[0].y.back(), 0.0);
    f->setSelection({static_cast<int>(data.tokenCount()) - 1, 0, 0, 0});
    EXPECT_FALSE(f->readoutRankChart().hasData()); // the last token has no next token
}

TEST(LensCompare, CaptionNamesEachLensWhereItWasFittedAndWhatWasNotDrawn) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const QString same = comparisonFigure(data)->caption();
    EXPECT_TRUE(same.contains(QStringLiteral("tuned lens /lenses/tuned (Grassmann): fitted on elsewhere-model")))
        << same.toStdString();
    EXPECT_TRUE(same.contains(QStringLiteral("Jacobian lens /lenses/jacobian (Transformer)"))) << same.toStdString();
    EXPECT_FALSE(same.contains(QStringLiteral("not the model drawn")));
    EXPECT_TRUE(same.contains(QStringLiteral("Not drawn: the tuned lens in '/x' does not fit Transformer")));
    const QString other = comparisonFigure(data, false)->caption();
    EXPECT_TRUE(other.contains(QStringLiteral("not the model drawn"))) << other.toStdString();
}

TEST(LensCompare, PrintsWholeAtOneAndTwoColumns) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const auto f = comparisonFigure(data, false);
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        SCOPED_TRACE(o.widthInches);
        const QStringList texts = gwb::test::figureTexts(*f, o, dir.filePath(QStringLiteral("c.svg")));
        const QString all = texts.join(QLatin1Char(' '));
        EXPECT_TRUE(all.contains(QStringLiteral("Elizabeth"))) << all.toStdString();
        EXPECT_TRUE(all.contains(QStringLiteral("KL to final (nats)")));
        EXPECT_TRUE(all.contains(QStringLiteral("another model")));
        EXPECT_TRUE(gwb::test::cutTexts(texts).isEmpty()) << gwb::test::cutTexts(texts).join(" | ").toStdString();
        EXPECT_EQ(f->dataTables().size(), 15u); // KL, rank and top-1 probability of each of 5 readouts
        // Printable on a page: at most 9.5 in tall at either width.
        EXPECT_LE(f->aspect(o.widthInches) * o.widthInches, 9.5);
    }
}

TEST(LensCompare, OneColumnDrawsEachModelsLensesAtTheSelectedToken) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const auto f = comparisonFigure(data, false);
    const LensGridData g = f->selectedTokenGrid(true);
    ASSERT_EQ(g.cols(), 3);
    EXPECT_EQ(g.colLabels,
              (QStringList{QStringLiteral("logit"), QStringLiteral("tuned*"), QStringLiteral("Jacobian")}));
    EXPECT_TRUE(g.title.contains(QStringLiteral("fitted on another model")));
    EXPECT_EQ(g.rows(), static_cast<int>(data.grassmann->layers.size()) + 1);
    // Row s, column c: lens c's top-1 at the selected token 2 ((s + 2) mod 7: "Elizabeth" at s = 1).
    EXPECT_EQ(g.text[static_cast<size_t>(1 * g.cols())], QStringLiteral("Elizabeth"));
    EXPECT_EQ(g.text[static_cast<size_t>(2)], QStringLiteral("\u2014")); // the Jacobian lens has no map at L0 in
    EXPECT_EQ(f->selectedTokenGrid(false).cols(), 2);
    const QString narrow = f->captionAt(3.5 * 72), wide = f->captionAt(7 * 72);
    EXPECT_TRUE(narrow.contains(QStringLiteral("at token 2 only"))) << narrow.toStdString();
    EXPECT_TRUE(wide.contains(QStringLiteral("tokens around token 2"))) << wide.toStdString();
}

TEST(LensCompare, EvalSummaryChartsPerLayer) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    auto e = std::make_shared<gwb::engine::LensEvalResult>();
    e->lenses = {"logit", "tuned", "jacobian"};
    e->lensFolders = {"", "/l/t", "/l/j"};
    e->lensModels = {"", "m", "other"};
    e->sameModel = {true, true, false};
    e->modelName = "m";
    e->nLayers = 3;
    e->prompts = 4;
    e->positions = 60;
    const double nan = std::nan("");
    e->kl = gwb::engine::Array<double>({3, 3}, {3, 2, 1, 2, 1, 0.5, nan, 1.5, 0.8});
    e->ce = e->kl;
    e->top1 = gwb::engine::Array<double>({3, 3}, {0.1, 0.3, 0.6, 0.2, 0.5, 0.8, nan, 0.4, 0.7});
    e->rank = gwb::engine::Array<double>({3, 3}, {100, 10, 1, 50, 5, 0, nan, 8, 2});
    e->finalCe = gwb::engine::Array<double>({1}, {1.0});
    LensFigure f;
    f.setData(data);
    EXPECT_FALSE(f.comparing());
    f.setEvalSummaries({e});
    EXPECT_TRUE(f.hasContent());
    const auto charts = f.evalCharts();
    ASSERT_EQ(charts.size(), 4u);
    ASSERT_EQ(charts[0].series.size(), 3u);
    EXPECT_EQ(charts[0].series[2].name, QStringLiteral("m Jacobian *"));
    EXPECT_DOUBLE_EQ(charts[0].series[1].y[2], 0.5);
    EXPECT_DOUBLE_EQ(charts[2].series[0].y[2], 0.6);
    EXPECT_DOUBLE_EQ(charts[3].series[1].y[2], 1.0); // mean rank 0 is drawn as 1 = top-1
    EXPECT_TRUE(charts[3].logY);
    EXPECT_EQ(charts[0].categories, (QStringList{"L0 in", "L1 in", "L2 in"}));
    EXPECT_TRUE(f.caption().contains(QStringLiteral("4 prompts, 60 positions"))) << f.caption().toStdString();
    EXPECT_TRUE(f.caption().contains(QStringLiteral("fitted on other, another model")));
    EXPECT_EQ(f.dataTables().size(), 4u);
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        const QStringList texts = gwb::test::figureTexts(f, o, dir.filePath(QStringLiteral("e.svg")));
        EXPECT_TRUE(texts.join(QLatin1Char(' ')).contains(QStringLiteral("Top-1 agreement")));
        EXPECT_TRUE(gwb::test::cutTexts(texts).isEmpty()) << gwb::test::cutTexts(texts).join(" | ").toStdString();
    }
}
