// The Corpus view's numbers (box quartiles, mean, 95% interval, position curve) against values
// worked out by hand from a hand-built statistics struct, and its figure and data export.

#include "synthetic_data.h"

#include "gwb/views/corpus_summary.h"
#include "gwb/views/corpus_view.h"
#include "gwb/views/figure_export.h"

#include <QFile>
#include <QLabel>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <gtest/gtest.h>
#include <cmath>

using namespace gwb::views;
using gwb::engine::CorpusStats;
using gwb::engine::StatQuantity;

namespace {

/// Edges 0,1,2,3,4 and two layers:
///   layer 0: 10 values in each of the four bins, n 40, sum 80, sum_sq 200
///   layer 1: 5 below 0, 20 in [2,3), 5 at or above 4, n 30, sum 75, sum_sq 250
StatQuantity handQuantity(const std::string& def) {
    StatQuantity q;
    q.definition = def;
    q.axes = {"layer"};
    q.groupShape = {2};
    q.edges = {0, 1, 2, 3, 4};
    q.positions = 3;
    q.allocate();
    q.counts = {0, 10, 10, 10, 10, 0, /**/ 5, 0, 0, 20, 0, 5};
    q.n = {40, 30};
    q.sum = {80, 75};
    q.sumSq = {200, 250};
    q.posN = {10, 0, 30, /**/ 4, 4, 4};
    q.posSum = {5, 0, 60, /**/ 4, 8, 12};
    return q;
}

std::shared_ptr<CorpusStats> handStats() {
    auto s = std::make_shared<CorpusStats>();
    s->window = 3;
    s->stride = 3;
    s->windowsPlanned = 10;
    s->windowsTotal = 10;
    s->windows = {0, 1, 2};
    s->files = {"/x/a.txt"};
    s->skipped = {{"/x/bad.txt", "fewer than 2 tokens"}};
    s->totals = {{"model.tokens_scored", 6.0}};
    s->quantities["model.q"] = handQuantity("a test quantity");
    StatQuantity b = handQuantity("a test quantity");
    // The baseline's layer 0 is shifted by one bin: quartiles 2, 3, 4.
    b.counts = {0, 0, 10, 10, 10, 10, /**/ 0, 0, 0, 0, 0, 0};
    b.n = {40, 0};
    b.sum = {120, 0};
    b.sumSq = {400, 0};
    s->quantities["baseline.q"] = b;
    // Marks the roles' kinds (as gwb stats files do).
    StatQuantity g;
    g.edges = {0, 1};
    g.allocate();
    s->quantities["model.gate_mean"] = g;
    s->quantities["baseline.attn_entropy"] = g;
    return s;
}

double ci(double mean, double sumSq, double sum, double n, int sign) {
    const double sd = std::sqrt((sumSq - sum * sum / n) / (n - 1));
    return mean + sign * 1.959963984540054 * sd / std::sqrt(n);
}

} // namespace

TEST(CorpusSummary, QuantilesFromTheHistogram) {
    const StatQuantity q = handQuantity("x");
    const DistributionSummary a = summarize(q, {0});
    EXPECT_EQ(a.n, 40);
    EXPECT_DOUBLE_EQ(a.mean, 2.0);
    EXPECT_NEAR(a.sd, std::sqrt(40.0 / 39.0), 1e-12);
    EXPECT_NEAR(a.q1, 1.0, 1e-12);
    EXPECT_NEAR(a.median, 2.0, 1e-12);
    EXPECT_NEAR(a.q3, 3.0, 1e-12);
    EXPECT_NEAR(a.p025, 0.1, 1e-12); // 1 of 40 values: a tenth into the first bin
    EXPECT_NEAR(a.p975, 3.9, 1e-12);
    EXPECT_NEAR(a.ciLow, ci(2, 200, 80, 40, -1), 1e-12);
    EXPECT_NEAR(a.ciHigh, ci(2, 200, 80, 40, +1), 1e-12);
    const DistributionSummary b = summarize(q, {1});
    EXPECT_EQ(b.below, 5);
    EXPECT_EQ(b.above, 5);
    EXPECT_NEAR(b.q1, 2.125, 1e-12); // (7.5 - 5) / 20 into [2, 3)
    EXPECT_NEAR(b.median, 2.5, 1e-12);
    EXPECT_NEAR(b.q3, 2.875, 1e-12);
    EXPECT_DOUBLE_EQ(b.p025, 0.0); // in the underflow bin: read as the first edge
    EXPECT_DOUBLE_EQ(b.p975, 4.0);
    // Pooled: counts and sums add.
    const DistributionSummary both = summarize(q, {0, 1});
    EXPECT_EQ(both.n, 70);
    EXPECT_DOUBLE_EQ(both.mean, 155.0 / 70.0);
    EXPECT_EQ(both.counts, (std::vector<int64_t>{5, 10, 10, 30, 10, 5}));
    // Empty: NaN, not zero.
    StatQuantity e = q;
    e.counts.assign(e.counts.size(), 0);
    e.n = {0, 0};
    EXPECT_TRUE(std::isnan(summarize(e, {0}).median));
    EXPECT_TRUE(std::isnan(summarize(e, {0}).mean));
    // Log-spaced edges interpolate geometrically: half-way through [1, 100) is 10.
    EXPECT_TRUE(isLogEdges({0.01, 1, 100}));
    EXPECT_FALSE(isLogEdges({0, 1, 2}));
    EXPECT_NEAR(histogramQuantile({0.01, 1, 100}, {0, 0, 10, 0}, 0.5), 10.0, 1e-9);
}

TEST(CorpusSummary, PositionMeanIsPosSumOverPosN) {
    const StatQuantity q = handQuantity("x");
    const auto m0 = positionMean(q, {0});
    ASSERT_EQ(m0.size(), 3u);
    EXPECT_DOUBLE_EQ(m0[0], 0.5);
    EXPECT_TRUE(std::isnan(m0[1])); // no value seen there
    EXPECT_DOUBLE_EQ(m0[2], 2.0);
    const auto pooled = positionMean(q, {0, 1});
    EXPECT_DOUBLE_EQ(pooled[0], 9.0 / 14.0);
    EXPECT_DOUBLE_EQ(pooled[1], 2.0);
    EXPECT_DOUBLE_EQ(pooled[2], 72.0 / 34.0);
}

TEST(CorpusView, ExportedSummaryMatchesTheHandBuiltStats) {
    synthetic::ensureApp();
    WorkbenchData d;
    d.corpus = handStats();
    d.corpusPath = "/x/S.npz";
    CorpusView v;
    v.setData(d);
    EXPECT_EQ(CorpusView::quantityKeys(*d.corpus), (QStringList{"attn_entropy", "gate_mean", "q"}));
    EXPECT_EQ(CorpusView::keyFor(*d.corpus, QStringLiteral("baseline.q")), QStringLiteral("q"));
    EXPECT_EQ(CorpusView::keyFor(*d.corpus, QStringLiteral("nope")), QString());
    v.setQuantity(QStringLiteral("q"));
    ASSERT_TRUE(v.hasContent());
    const auto tables = v.dataTables();
    ASSERT_EQ(tables.size(), 3u);
    const DataTable& t = tables[0];
    EXPECT_EQ(t.name, QStringLiteral("q_summary"));
    EXPECT_EQ(t.rowLabels, (QStringList{"Grassmann L0", "Grassmann L1", "Transformer L0", "Transformer L1"}));
    const auto col = [&](const char* name) { return static_cast<int64_t>(t.colLabels.indexOf(QLatin1String(name))); };
    // Grassmann layer 0 and 1, Transformer layer 0: quartiles, mean, interval.
    EXPECT_FLOAT_EQ(t.values.at2(0, col("n")), 40);
    EXPECT_FLOAT_EQ(t.values.at2(0, col("q1")), 1);
    EXPECT_FLOAT_EQ(t.values.at2(0, col("median")), 2);
    EXPECT_FLOAT_EQ(t.values.at2(0, col("q3")), 3);
    EXPECT_FLOAT_EQ(t.values.at2(0, col("mean")), 2);
    EXPECT_FLOAT_EQ(t.values.at2(0, col("ci95_low")), static_cast<float>(ci(2, 200, 80, 40, -1)));
    EXPECT_FLOAT_EQ(t.values.at2(0, col("ci95_high")), static_cast<float>(ci(2, 200, 80, 40, +1)));
    EXPECT_FLOAT_EQ(t.values.at2(1, col("q1")), 2.125f);
    EXPECT_FLOAT_EQ(t.values.at2(1, col("mean")), 2.5f);
    EXPECT_FLOAT_EQ(t.values.at2(1, col("below")), 5);
    EXPECT_FLOAT_EQ(t.values.at2(2, col("q1")), 2);
    EXPECT_FLOAT_EQ(t.values.at2(2, col("median")), 3);
    EXPECT_FLOAT_EQ(t.values.at2(2, col("q3")), 4);
    EXPECT_FLOAT_EQ(t.values.at2(2, col("mean")), 3);
    EXPECT_FLOAT_EQ(t.values.at2(3, col("n")), 0);
    EXPECT_TRUE(std::isnan(t.values.at2(3, col("median")))); // no values: undefined, not 0
    // The drawn chart holds the same boxes.
    const DistributionChartData chart = v.distributionChart();
    ASSERT_EQ(chart.series.size(), 2u);
    EXPECT_EQ(chart.series[0].name, QStringLiteral("Grassmann"));
    EXPECT_DOUBLE_EQ(chart.series[1].boxes[0].q3, 4.0);
    // Histogram counts behind the boxes.
    EXPECT_EQ(tables[1].values.dim(1), 6);
    EXPECT_FLOAT_EQ(tables[1].values.at2(1, 3), 20);
    // Curve against position: all layers pooled, then one layer.
    const DataTable& pos = tables[2];
    EXPECT_EQ(pos.rowLabels, (QStringList{"Grassmann", "Transformer"}));
    EXPECT_FLOAT_EQ(pos.values.at2(0, 0), 9.0f / 14.0f);
    v.setCurveIndex(0);
    EXPECT_FLOAT_EQ(v.dataTables()[2].values.at2(0, 0), 0.5f);
    EXPECT_TRUE(std::isnan(v.dataTables()[2].values.at2(0, 1)));
    // Header: windows covered/planned, tokens, files, skipped files.
    const QString h = v.headerText();
    EXPECT_TRUE(h.contains(QStringLiteral("3 of 10 windows covered (partial)"))) << h.toStdString();
    EXPECT_TRUE(h.contains(QStringLiteral("9 tokens"))) << h.toStdString();
    EXPECT_TRUE(h.contains(QStringLiteral("a.txt"))) << h.toStdString();
    EXPECT_TRUE(h.contains(QStringLiteral("bad.txt (fewer than 2 tokens)"))) << h.toStdString();
    EXPECT_TRUE(v.caption().contains(QStringLiteral("95% normal interval")));
}

TEST(CorpusView, TrailingGroupsSelectOrPool) {
    synthetic::ensureApp();
    WorkbenchData d;
    d.corpus = synthetic::makeCorpusStats(3, 4, 12);
    CorpusView v;
    v.setData(d);
    EXPECT_EQ(v.quantity(), QString()); // default: surprisal
    EXPECT_EQ(v.settings().value("quantity").toString(), QStringLiteral("surprisal"));
    EXPECT_EQ(v.dataTables()[0].rowLabels, (QStringList{"Grassmann all", "Transformer all"}));
    v.setQuantity(QStringLiteral("attn_entropy"));
    const auto& ae = d.corpus->quantities.at("baseline.attn_entropy");
    auto t = v.dataTables()[0];
    ASSERT_EQ(t.values.dim(0), 3); // one row per layer, heads pooled
    EXPECT_FLOAT_EQ(t.values.at2(1, 0), static_cast<float>(ae.n[4] + ae.n[5] + ae.n[6] + ae.n[7]));
    v.setGroup(2);
    t = v.dataTables()[0];
    EXPECT_FLOAT_EQ(t.values.at2(1, 1), static_cast<float>(ae.mean(1 * 4 + 2)));
    EXPECT_FLOAT_EQ(t.values.at2(1, 7), static_cast<float>(summarize(ae, {6}).median));
    // Settings round trip, and violins draw.
    CorpusView w;
    v.setViolin(true);
    w.setSettings(v.settings());
    EXPECT_EQ(w.settings(), v.settings());
    EXPECT_TRUE(w.violin());
    EXPECT_EQ(w.group(), 2);
}

TEST(CorpusView, FigureAndDataFilesForEveryQuantity) {
    synthetic::ensureApp();
    WorkbenchData d;
    d.corpus = synthetic::makeCorpusStats(3, 4, 12);
    d.corpusPath = "/x/S.npz";
    QTemporaryDir dir;
    for (const QString& key : CorpusView::quantityKeys(*d.corpus)) {
        SCOPED_TRACE(key.toStdString());
        for (const bool violin : {false, true}) {
            QJsonObject settings{{"quantity", key}, {"shape", violin ? "violin" : "box"}};
            const QString svg = dir.filePath(key + (violin ? "_v.svg" : ".svg"));
            const ExportResult r = exportViewFigure(QStringLiteral("corpus"), d, {}, settings,
                                                    FigureOptions::twoColumn(), svg, dir.filePath(key));
            ASSERT_TRUE(r.ok) << r.message.toStdString();
            EXPECT_TRUE(QSvgRenderer(svg).isValid());
        }
        QFile json(dir.filePath(key + ".json"));
        ASSERT_TRUE(json.open(QIODevice::ReadOnly));
        const QJsonObject meta = QJsonDocument::fromJson(json.readAll()).object();
        EXPECT_EQ(meta.value("view").toString(), QStringLiteral("corpus"));
        EXPECT_EQ(meta.value("corpus").toObject().value("windows_covered").toInt(), 4);
        EXPECT_EQ(meta.value("settings").toObject().value("quantity").toString(), key);
    }
}

TEST(CorpusView, SaysWhenValuesLieBeyondTheHistogram) {
    synthetic::ensureApp();
    auto s = std::make_shared<CorpusStats>();
    s->window = 8;
    s->stride = 8;
    s->windows = {0};
    s->windowsPlanned = 1;
    s->complete = true;
    s->files = {"/data/a.txt", "/data/b.txt"};
    s->maxWindows = 1;
    auto& su = s->quantity("model.surprisal", "-log p", {}, {}, gwb::engine::linearEdges(0, 20, 80), 8);
    for (int i = 0; i < 90; ++i)
        su.add(0, 2.0 + 0.1 * (i % 7), 1);
    for (int i = 0; i < 10; ++i)
        su.add(0, 25.0, 1); // 10% beyond the last edge
    auto& gm = s->quantity("model.gate_mean", "mean gate", {"layer"}, {1}, gwb::engine::linearEdges(0, 1, 50), 8);
    for (int i = 0; i < 100; ++i)
        gm.add(0, 0.80 + 0.15 * (i % 10) / 10.0, 1);
    WorkbenchData d;
    d.corpus = s;
    CorpusView v;
    v.setData(d);
    v.setQuantity(QStringLiteral("surprisal"));
    const DistributionChartData dist = v.distributionChart();
    EXPECT_TRUE(dist.note.contains(QStringLiteral("10.0% of a group's values lie above 20")))
        << dist.note.toStdString();
    // A capped run may not reach the later files: the header does not claim them.
    EXPECT_TRUE(v.headerText().contains(QStringLiteral("may not be covered"))) << v.headerText().toStdString();
    v.setQuantity(QStringLiteral("gate_mean"));
    EXPECT_TRUE(v.distributionChart().note.isEmpty()); // every value inside the edges
}

TEST(CorpusView, WithoutStatisticsTheMessageIsSaidOnce) {
    // Both the header and the plot said "No corpus statistics: ..." (seen under Xvfb, issue 41).
    synthetic::ensureApp();
    CorpusView v;
    v.setData(WorkbenchData{});
    auto* header = v.findChild<QLabel*>(QStringLiteral("corpusHeader"));
    ASSERT_TRUE(header);
    EXPECT_TRUE(header->isHidden());
    EXPECT_TRUE(header->text().isEmpty());
    // With statistics the header is back.
    v.setData(synthetic::makeWorkbenchData());
    EXPECT_FALSE(header->isHidden());
    EXPECT_FALSE(header->text().isEmpty());
}
