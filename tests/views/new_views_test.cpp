// Read-out, logit-lens and saliency views: their tables are the trace/analysis numbers, undefined
// values read "—" with a reason, and the selection policy picks a token every view can show.
#include "synthetic_data.h"

#include "gwb/views/attention_view.h"
#include "gwb/views/chart_widget.h"
#include "gwb/views/compare_view.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/lens_view.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/readout_view.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/selection_policy.h"
#include "gwb/views/token_strip.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::views;

namespace {
struct Fixture {
    WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    Fixture() {
        synthetic::ensureApp();
        s.setExtents(d);
    }
};
} // namespace

TEST(NewViews, ReadoutTablesAreTheAnalysis) {
    Fixture f;
    f.s.setLayer(1);
    f.s.setToken(9);
    ReadoutView v;
    v.setSelection(&f.s);
    v.setData(f.d);
    ASSERT_TRUE(v.hasContent());
    const auto& a = f.d.grassmannAnalysis->grassmann[1];
    const auto tables = v.dataTables();
    ASSERT_EQ(tables.size(), 3u);
    const auto& per = tables[0];
    const int64_t d = static_cast<int64_t>(a.readoutResidual.size());
    ASSERT_EQ(per.values.shape, (std::vector<int64_t>{d, 5}));
    for (int64_t c = 0; c < d; ++c) {
        EXPECT_EQ(per.values.at2(c, 0), a.readoutResidual[static_cast<size_t>(c)]);
        EXPECT_EQ(per.values.at2(c, 1), a.readoutPlanarity[static_cast<size_t>(c)]);
        EXPECT_EQ(per.values.at2(c, 2), a.readoutContribution.at2(9, c));
        EXPECT_EQ(per.values.at2(c, 3), a.readoutAngles.at3(9, c, 0));
    }
    // The channel follows the token's top channel; its spectrum is the analysis row.
    const std::vector<int> top = gwb::engine::topReadoutChannels(a, 9, ReadoutView::kTopChannels);
    ASSERT_FALSE(top.empty());
    EXPECT_EQ(v.channel(), top.front());
    EXPECT_EQ(v.topChannels(), top);
    for (int64_t k = 0; k < a.readoutSpectrum.dim(1); ++k)
        EXPECT_EQ(tables[1].values.data[static_cast<size_t>(k)], a.readoutSpectrum.at2(top.front(), k));
    ASSERT_EQ(v.table()->rowCount(), static_cast<int>(top.size()));
    EXPECT_EQ(v.table()->item(0, 0)->text().toInt(), top.front());
    // Ranked by planarity: ascending.
    const std::vector<int> ranked = v.rankedChannels();
    for (size_t i = 1; i < ranked.size(); ++i)
        EXPECT_LE(a.readoutPlanarity[static_cast<size_t>(ranked[i - 1])],
                  a.readoutPlanarity[static_cast<size_t>(ranked[i])]);
    // Another layer: the channel follows that layer's top channel for the token.
    f.s.setLayer(2);
    const auto top2 = gwb::engine::topReadoutChannels(f.d.grassmannAnalysis->grassmann[2], 9, 1);
    ASSERT_EQ(top2.size(), 1u);
    EXPECT_EQ(v.channel(), top2.front());
    // Token 0 has no valid offset: no top channels, and the message says why.
    f.s.setToken(0);
    EXPECT_TRUE(v.topChannels().empty());
    EXPECT_FALSE(v.table()->toolTip().isEmpty());
}

TEST(NewViews, PerOffsetMlpModelsSayWhatIsNotDefined) {
    // A Grassmann model whose planes each go through an MLP (aggregation per_offset_mlp) has no
    // B_t and no read-out planes: the Read-out view shows the reason instead of charts, the
    // Plücker view keeps its pair norms and says so in its caption.
    Fixture f;
    auto trace = std::make_shared<gwb::engine::Trace>(*f.d.grassmann);
    trace->config.aggregation = gwb::engine::Aggregation::PerOffsetMlp;
    trace->config.dGeom = 8;
    f.d.grassmann = trace;
    struct Probe : ReadoutView { // the reason the view shows in place of its charts
        using ReadoutView::missingDataMessage;
    } r;
    r.setSelection(&f.s);
    r.setData(f.d);
    EXPECT_FALSE(r.hasContent());
    EXPECT_TRUE(r.readoutUndefined());
    EXPECT_TRUE(r.missingDataMessage().contains(QStringLiteral("not defined for this model")))
        << r.missingDataMessage().toStdString();
    PluckerView p;
    p.setSelection(&f.s);
    p.setData(f.d);
    EXPECT_TRUE(p.hasContent());
    EXPECT_TRUE(p.caption().startsWith(QStringLiteral("B_t is not defined"))) << p.caption().toStdString();
    // The paper's model: read-out planes shown.
    ReadoutView paper;
    paper.setSelection(&f.s);
    paper.setData(synthetic::makeWorkbenchData());
    EXPECT_TRUE(paper.hasContent());
}

TEST(NewViews, LensGridShowsTopOneAndNextRank) {
    Fixture f;
    f.s.setToken(6);
    LensView v;
    v.setSelection(&f.s);
    v.setData(f.d);
    ASSERT_TRUE(v.hasContent());
    const auto& t = *f.d.grassmann;
    const gwb::engine::LogitLens& lens = *t.lens;
    const LensGridData g = v.gridData(f.d.grassmann);
    const int64_t L = lens.topIds.dim(0), T = t.length(), K = lens.topK();
    ASSERT_EQ(g.rows(), L);
    for (int r = 0; r < g.rows(); ++r)
        for (int c = 0; c < g.cols(); ++c) {
            const int64_t tok = g.firstToken + c;
            const int32_t id = lens.topIds.data[static_cast<size_t>((r * T + tok) * K)];
            EXPECT_EQ(g.text[static_cast<size_t>(r * g.cols() + c)], QString::fromStdString(lens.pieces.at(id)));
            EXPECT_NEAR(g.prob[static_cast<size_t>(r * g.cols() + c)],
                        std::exp(lens.topLogProbs.data[static_cast<size_t>((r * T + tok) * K)]), 1e-6);
        }
    EXPECT_EQ(g.firstToken + g.markCol, 6);
    const ChartData rank = v.rankChart();
    ASSERT_EQ(rank.series.size(), 2u);
    for (int64_t l = 0; l < L; ++l)
        EXPECT_EQ(rank.series[0].y[static_cast<size_t>(l)], lens.nextRank.at2(l, 6) + 1); // 1 = top-1, log axis
    EXPECT_TRUE(rank.logY);
    // The last token has no next token: rank undefined, shown as a gap.
    f.s.setToken(static_cast<int>(T - 1));
    EXPECT_TRUE(std::isnan(v.rankChart().series[0].y[0]));
    const auto tables = v.dataTables();
    ASSERT_EQ(tables.size(), 4u);
    EXPECT_EQ(tables[0].values.shape, (std::vector<int64_t>{L, T}));
}

TEST(NewViews, SaliencySharesAndComparisons) {
    Fixture f;
    f.s.setLayer(1);
    f.s.setToken(9);
    SaliencyView v;
    v.setSelection(&f.s);
    int requests = 0;
    QString lastTarget = QStringLiteral("?");
    QObject::connect(&v, &SaliencyView::saliencyRequested, [&](int token, const QString& target) {
        ++requests;
        EXPECT_EQ(token, 9);
        lastTarget = target;
    });
    v.setData(f.d);
    EXPECT_EQ(requests, 1);
    EXPECT_TRUE(lastTarget.isEmpty());   // default: the actual next token
    EXPECT_TRUE(v.dataTables().empty()); // nothing until the application answers
    SaliencyResult r;
    r.token = 9;
    const int64_t T = f.d.grassmann->length();
    for (int64_t j = 0; j < T; ++j) {
        r.grassmann.push_back(j <= 9 ? static_cast<float>(j % 3) - 1.0f : 0.0f);
        r.baseline.push_back(j <= 9 ? 0.5f : 0.0f);
    }
    v.setSaliency(r);
    const std::vector<float> share = saliencyShares(r.grassmann, 9);
    double sum = 0;
    for (float x : share)
        sum += x;
    EXPECT_NEAR(sum, 1.0, 1e-6);
    EXPECT_NEAR(share[0], 1.0 / 7.0, 1e-6); // |s| = 1,0,1,1,0,1,1,0,1,1 over j = 0..9: 7 in all
    const auto comps = v.comparisons();
    ASSERT_GE(comps.size(), 3u);
    const RowComparison ref = compareDistributions(share, influenceRow(f.d.grassmannAnalysis->grassmann[1], 9));
    EXPECT_NEAR(comps[0].js, ref.jsDivergence, 1e-12);
    EXPECT_EQ(comps[0].top1, ref.top1Agrees);
    EXPECT_EQ(v.table()->rowCount(), static_cast<int>(comps.size()));
    // A stale result (another token) is ignored; a new target asks again.
    SaliencyResult stale = r;
    stale.token = 3;
    v.setSaliency(stale);
    EXPECT_EQ(v.saliency().token, 9);
    v.setTarget(QStringLiteral("the"));
    EXPECT_EQ(requests, 2);
    EXPECT_EQ(lastTarget, QStringLiteral("the"));
}

TEST(NewViews, UndefinedValuesReadDashWithAReason) {
    Fixture f;
    f.s.setToken(0);
    AttentionView a;
    a.setSelection(&f.s);
    a.setData(f.d);
    auto* table = a.findChild<QTableWidget*>();
    ASSERT_TRUE(table);
    bool sawDash = false;
    for (int r = 0; r < table->rowCount(); ++r)
        for (int c = 0; c < table->columnCount(); ++c) {
            const auto* item = table->item(r, c);
            ASSERT_TRUE(item);
            EXPECT_FALSE(item->text().contains(QStringLiteral("nan"), Qt::CaseInsensitive));
            if (item->text() == QStringLiteral("\u2014")) {
                sawDash = true;
                EXPECT_FALSE(item->toolTip().isEmpty());
            }
        }
    EXPECT_TRUE(sawDash); // H / log(t+1) at t = 0
}

TEST(NewViews, SelectionPolicyPicksAFullyDefinedToken) {
    Fixture f;
    // Synthetic offsets: the largest one is where every offset becomes valid.
    const int m = maxOffset(f.d);
    ASSERT_GT(m, 0);
    EXPECT_EQ(defaultToken(f.d), m);
    EXPECT_TRUE(tokenFullyDefined(f.d, m));
    EXPECT_FALSE(tokenFullyDefined(f.d, m - 1));
    EXPECT_EQ(tokenAfterRun(f.d, m + 1), m + 1); // the user's valid choice is kept
    EXPECT_EQ(tokenAfterRun(f.d, 0), m);         // token 0 is moved
    EXPECT_EQ(defaultToken(WorkbenchData{}), -1);
}

TEST(NewViews, TokenStripTooltipExplainsUndefinedValues) {
    Fixture f;
    TokenStrip strip;
    strip.setData(f.d);
    strip.setScalar(TokenStrip::Scalar::Surprisal);
    const QString first = strip.tokenToolTip(0);
    EXPECT_TRUE(first.contains(QStringLiteral("\u2014"))) << first.toStdString();
    EXPECT_TRUE(first.contains(QStringLiteral("no prediction"))) << first.toStdString();
    EXPECT_FALSE(first.contains(QStringLiteral("nan"), Qt::CaseInsensitive));
    const QString later = strip.tokenToolTip(5);
    EXPECT_FALSE(later.contains(QStringLiteral("\u2014"))) << later.toStdString();
}

TEST(NewViews, AttentionSaysWhereItsColourScaleSaturatesAndHeadersReadWhole) {
    // Issue 52: the colour bar ended at the 95th percentile of the rows' maxima (about 0.33) while
    // cells reach 1, and only the figure's caption said so; the "cost ΣaⱼCⱼ" header was clipped.
    Fixture f;
    f.s.setToken(8);
    AttentionView a;
    a.setSelection(&f.s);
    a.setData(f.d);
    a.resize(1280, 620);
    a.show();
    const double top = a.heatmap()->colorScale().effectiveHigh();
    auto* note = a.findChild<QLabel*>(QStringLiteral("attentionScaleNote"));
    ASSERT_TRUE(note);
    ASSERT_LT(top, 0.999) << "the synthetic heads should not reach 1 in every row";
    EXPECT_TRUE(note->isVisible());
    EXPECT_TRUE(note->text().contains(QStringLiteral("saturate"))) << note->text().toStdString();
    EXPECT_TRUE(note->text().contains(QString::number(top, 'g', 2))) << note->text().toStdString();
    EXPECT_LE(QFontMetrics(note->font()).horizontalAdvance(note->text()), note->width() + 1)
        << "the note reads whole at 1280 px";
    auto* table = a.findChild<QTableWidget*>();
    ASSERT_TRUE(table);
    const QFontMetrics fm(table->horizontalHeader()->font());
    for (int c = 0; c < table->columnCount(); ++c) {
        const QString text = table->horizontalHeaderItem(c)->text();
        EXPECT_LE(fm.horizontalAdvance(text), table->columnWidth(c)) << text.toStdString();
    }
}

TEST(NewViews, SaliencyComparisonRowsReadWholeAt1280) {
    // Issue 52: the comparison rows ("Grassmann saliency vs influence (layer 1)") were cut to "(lay…".
    Fixture f;
    f.s.setLayer(1);
    f.s.setToken(9);
    SaliencyView v;
    v.setSelection(&f.s);
    v.setData(f.d);
    SaliencyResult r;
    r.token = 9;
    for (int64_t j = 0; j < f.d.grassmann->length(); ++j) {
        r.grassmann.push_back(j <= 9 ? 0.1f * static_cast<float>(j + 1) : 0.0f);
        r.baseline.push_back(j <= 9 ? 0.5f : 0.0f);
    }
    v.setSaliency(r);
    v.resize(1280, 620);
    v.show();
    QTableWidget* t = v.table();
    ASSERT_GT(t->rowCount(), 2);
    EXPECT_TRUE(t->horizontalHeaderItem(0)->text().contains(QStringLiteral("layer 1")));
    const QFontMetrics fm(t->font());
    for (int row = 0; row < t->rowCount(); ++row) {
        const QString text = t->item(row, 0)->text();
        EXPECT_LE(fm.horizontalAdvance(text) + 8, t->columnWidth(0)) << text.toStdString();
    }
}
