// Patching view: both models' grids on one diverging scale centred at 0, hover text with raw and
// normalised values ("—" with a reason where undefined, never NaN), bad input shown as a message
// that changes nothing, clicks asking for a cell's top-K, data tables and figure text.
#include "svg_text.h"
#include "synthetic_data.h"

#include "gwb/engine/patch_pairs.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/patching_view.h"

#include <QApplication>
#include <QFile>
#include <QLabel>
#include <QMouseEvent>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

using namespace gwb::views;

namespace {

struct Fixture {
    bool app = (synthetic::ensureApp(), true); // before the first widget
    WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    PatchingView v;
    Fixture() {
        s.setExtents(d);
        v.setSelection(&s);
        v.setData(d);
        v.resize(1100, 600);
    }
};

/// A widget position over cell (r, c) of a heatmap, found through its own mapping.
std::optional<QPointF> pointOver(const HeatmapWidget& h, int64_t r, int64_t c) {
    for (int y = 0; y < h.height(); y += 2)
        for (int x = 0; x < h.width(); x += 2)
            if (const QPoint cell = h.cellAt(QPointF(x, y)); cell.x() == c && cell.y() == r) return QPointF(x, y);
    return std::nullopt;
}

void moveTo(HeatmapWidget* h, const QPointF& pos) {
    QMouseEvent e(QEvent::MouseMove, pos, h->mapToGlobal(pos), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(h, &e);
}

void clickAt(HeatmapWidget* h, const QPointF& pos) {
    QMouseEvent press(QEvent::MouseButtonPress, pos, h->mapToGlobal(pos), Qt::LeftButton, Qt::LeftButton,
                      Qt::NoModifier);
    QApplication::sendEvent(h, &press);
    QMouseEvent release(QEvent::MouseButtonRelease, pos, h->mapToGlobal(pos), Qt::LeftButton, Qt::NoButton,
                        Qt::NoModifier);
    QApplication::sendEvent(h, &release);
}

} // namespace

TEST(PatchingView, ShowsBothModelsOnOneDivergingScaleCentredAtZero) {
    Fixture f;
    EXPECT_FALSE(f.v.hasContent());
    const PatchingData data = synthetic::makePatchingData(f.d);
    f.v.setResult(data);
    ASSERT_TRUE(f.v.hasContent());
    const double m = patchingScale(data);
    EXPECT_GT(m, 0.5);
    for (int model : {0, 1}) {
        SCOPED_TRACE(model);
        HeatmapWidget* h = f.v.heatmap(model);
        ASSERT_TRUE(h->hasMatrix());
        const ColorScale cs = h->colorScale();
        EXPECT_EQ(cs.map, ColormapId::RdBu);
        EXPECT_DOUBLE_EQ(cs.effectiveLow(), -m);
        EXPECT_DOUBLE_EQ(cs.effectiveHigh(), m);
        EXPECT_DOUBLE_EQ(cs.normalized(0.0), 0.5); // 0 is the map's centre
        const PatchingGrid& g = model == 0 ? data.grassmann : data.transformer;
        EXPECT_EQ(h->source()->rows(), g.rows);
        EXPECT_EQ(h->source()->cols(), g.cols);
        EXPECT_EQ(h->axes().rowLabels, g.rowLabels);
        EXPECT_EQ(h->axes().colLabels, g.colLabels);
        std::vector<float> row(static_cast<size_t>(g.cols));
        h->source()->row(3, row.data());
        for (int64_t c = 0; c < g.cols; ++c)
            EXPECT_FLOAT_EQ(row[static_cast<size_t>(c)],
                            static_cast<float>(g.effect[static_cast<size_t>(3 * g.cols + c)]));
    }
    // The scale is the larger of the two models' ranges: the other model's extreme sets it.
    PatchingData bigger = data;
    bigger.transformer.effect[0] = -4.0;
    f.v.setResult(bigger);
    EXPECT_DOUBLE_EQ(f.v.heatmap(0)->colorScale().effectiveHigh(), 4.0);
    EXPECT_DOUBLE_EQ(f.v.heatmap(1)->colorScale().effectiveLow(), -4.0);
}

TEST(PatchingView, HoverGivesRawAndNormalisedValuesAndDashWhereUndefined) {
    Fixture f;
    const PatchingData data = synthetic::makePatchingData(f.d);
    f.v.setResult(data);
    QString why;
    const QString text = f.v.cellText(0, 3, 4, &why);
    const double eff = data.grassmann.effect[static_cast<size_t>(3 * data.grassmann.cols + 4)];
    const double raw = data.grassmann.metric[static_cast<size_t>(3 * data.grassmann.cols + 4)];
    EXPECT_TRUE(text.contains(QStringLiteral("metric %1 (raw").arg(QString::number(raw, 'g', 3))))
        << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("effect %1 (normalised)").arg(QString::number(eff, 'g', 3))))
        << text.toStdString();
    EXPECT_TRUE(why.isEmpty());
    // The cell that does not exist: "—", never NaN, and a reason for the tooltip.
    const QString undefined = f.v.cellText(0, 1, 2, &why);
    EXPECT_TRUE(undefined.contains(QStringLiteral("effect \u2014"))) << undefined.toStdString();
    EXPECT_FALSE(undefined.contains(QStringLiteral("nan"), Qt::CaseInsensitive)) << undefined.toStdString();
    EXPECT_FALSE(why.isEmpty());

    // Through the mouse: the hover label and the heatmap's tooltip follow.
    f.v.show();
    QApplication::processEvents();
    (void)f.v.grab(); // lays out and paints, so that the heatmaps know where their cells are
    HeatmapWidget* h = f.v.heatmap(0);
    const auto over = pointOver(*h, 3, 4);
    ASSERT_TRUE(over);
    moveTo(h, *over);
    EXPECT_EQ(f.v.hoverLabel()->text(), text);
    EXPECT_TRUE(h->toolTip().isEmpty());
    const auto overUndefined = pointOver(*h, 1, 2);
    ASSERT_TRUE(overUndefined);
    moveTo(h, *overUndefined);
    EXPECT_TRUE(f.v.hoverLabel()->text().contains(QStringLiteral("\u2014")));
    EXPECT_FALSE(f.v.hoverLabel()->text().contains(QStringLiteral("nan"), Qt::CaseInsensitive));
    EXPECT_FALSE(h->toolTip().isEmpty());
    EXPECT_EQ(h->toolTip(), f.v.hoverLabel()->toolTip());
}

TEST(PatchingView, AVanishingCleanCorruptedDifferenceShowsRawEffectsAndSaysWhy) {
    // Issue 65: a 0.00068-logit difference made every normalised effect a quotient of rounding
    // noise, drawn at full scale. Below the threshold the cells show the raw effect p - k (logits),
    // and the caption, the status line and the hover say why.
    Fixture f;
    PatchingData data = synthetic::makePatchingData(f.d);
    data.corruptTokens = data.cleanTokens; // a corrupted prompt was run
    for (PatchingGrid* g : {&data.grassmann, &data.transformer}) {
        g->corruptMetric = g->cleanMetric - 0.00068;
        const gwb::engine::EffectCondition e =
            gwb::engine::effectCondition(g->cleanMetric, g->corruptMetric, gwb::engine::kDefaultMinDifference);
        ASSERT_FALSE(e.defined);
        g->effectDefined = false;
        g->effectNote = e.reason;
        for (double& x : g->effect)
            x = std::nan("");
    }
    f.v.setResult(data);
    ASSERT_TRUE(f.v.hasContent());
    QString why;
    const QString text = f.v.cellText(1, 2, 3, &why);
    EXPECT_TRUE(text.contains(QStringLiteral("effect \u2014"))) << text.toStdString();
    EXPECT_FALSE(text.contains(QStringLiteral("nan"), Qt::CaseInsensitive));
    EXPECT_TRUE(why.contains(QStringLiteral("0.00068 logits, below 0.05"))) << why.toStdString();
    // The cells show the raw effect: patched - corrupted, a finite number in logits.
    EXPECT_EQ(data.transformer.shown(), PatchingGrid::Shown::MetricChange);
    const size_t i = static_cast<size_t>(2 * data.transformer.cols + 3);
    EXPECT_DOUBLE_EQ(data.transformer.value(2, 3), data.transformer.metric[i] - data.transformer.corruptMetric);
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("no normalised effect"))) << f.v.message().toStdString();
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("raw effects shown"))) << f.v.caption().toStdString();
    EXPECT_FALSE(f.v.caption().contains(QStringLiteral("cells give the normalised effect")));
    // Mixed: the Grassmann grid normalised, the Transformer raw: never on one scale.
    data.grassmann.corruptMetric = data.grassmann.cleanMetric - 1.0;
    data.grassmann.effectDefined = true;
    data.grassmann.effectNote.clear();
    double rawMax = 0;
    for (int64_t r = 0; r < data.transformer.rows; ++r)
        for (int64_t c = 0; c < data.transformer.cols; ++c)
            if (std::isfinite(data.transformer.value(r, c)))
                rawMax = std::max(rawMax, std::abs(data.transformer.value(r, c)));
    EXPECT_DOUBLE_EQ(gwb::engine::patchingScale(data, 1), rawMax);
}

// Issue 31: an ablation of the clean prompt with a metric but no corrupted prompt said "clean
// -5.64, corrupted -5.64 (equal: effect —)" although nothing was corrupted.
TEST(PatchingView, AnAblationWithoutACorruptedPromptSaysWhatWasComputed) {
    Fixture f;
    PatchingData data = synthetic::makePatchingData(f.d);
    data.corruptTokens.clear();
    data.inputs.mode = "zero";
    for (PatchingGrid* g : {&data.grassmann, &data.transformer}) {
        g->corruptMetric = g->cleanMetric;
        g->effectDefined = false;
    }
    f.v.setResult(data);
    const QString text = f.v.message();
    EXPECT_FALSE(text.contains(QStringLiteral("corrupted \u2212"))) << text.toStdString();
    EXPECT_FALSE(text.contains(QStringLiteral("(equal"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("zero ablation of the clean prompt (no corrupted prompt)")))
        << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("ablated \u2212 clean"))) << text.toStdString();
}

TEST(PatchingView, BadInputIsAMessageAndChangesNothing) {
    Fixture f;
    const PatchingData data = synthetic::makePatchingData(f.d);
    f.v.setResult(data);
    QSignalSpy runs(&f.v, &PatchingView::runRequested);
    PatchingInputs in = data.inputs;
    in.corrupt.clear();
    in.mode = "patch";
    f.v.setInputs(in);
    f.v.run();
    EXPECT_EQ(runs.count(), 0);
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("corrupted prompt"))) << f.v.message().toStdString();
    in.corrupt = "another prompt";
    in.wrong.clear();
    f.v.setInputs(in);
    f.v.run();
    EXPECT_EQ(runs.count(), 0);
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("wrong piece"))) << f.v.message().toStdString();
    // A problem found by the application (e.g. prompts of different token lengths) is shown as it
    // comes back, and the grids stay what they were.
    PatchingData bad;
    bad.error = "Grassmann model: the prompts tokenize to different lengths: clean 7 tokens, "
                "corrupted 9 tokens; they first differ at token 0";
    f.v.setResult(bad);
    EXPECT_EQ(f.v.message(), bad.error);
    ASSERT_TRUE(f.v.hasContent());
    ASSERT_EQ(f.v.result().grassmann.effect.size(), data.grassmann.effect.size());
    for (size_t i = 0; i < data.grassmann.effect.size(); ++i) // NaN where undefined: compare the bits
        EXPECT_EQ(std::isnan(f.v.result().grassmann.effect[i]) ? 0.0 : f.v.result().grassmann.effect[i],
                  std::isnan(data.grassmann.effect[i]) ? 0.0 : data.grassmann.effect[i]);
    std::vector<float> row(static_cast<size_t>(data.grassmann.cols));
    f.v.heatmap(0)->source()->row(3, row.data());
    EXPECT_FLOAT_EQ(row[4],
                    static_cast<float>(data.grassmann.effect[static_cast<size_t>(3 * data.grassmann.cols + 4)]));
    // Good input goes out with the window's prompt as the clean prompt.
    in.wrong = "he";
    f.v.setInputs(in);
    f.v.run();
    ASSERT_EQ(runs.count(), 1);
    const auto sent = runs.at(0).at(0).value<PatchingInputs>();
    EXPECT_EQ(sent.clean, f.d.prompt());
    EXPECT_EQ(sent.corrupt, QStringLiteral("another prompt"));
    // While running, Run is refused and Cancel is offered.
    f.v.setRunning(true);
    f.v.run();
    EXPECT_EQ(runs.count(), 1);
    EXPECT_TRUE(f.v.running());
    f.v.setResult(data);
    EXPECT_FALSE(f.v.running());
}

TEST(PatchingView, ClickingADefinedCellAsksForItsTopK) {
    Fixture f;
    f.v.setResult(synthetic::makePatchingData(f.d));
    f.v.show();
    QApplication::processEvents();
    (void)f.v.grab();
    QSignalSpy asks(&f.v, &PatchingView::topKRequested);
    HeatmapWidget* h = f.v.heatmap(0);
    const auto defined = pointOver(*h, 2, 5);
    const auto undefined = pointOver(*h, 1, 2);
    ASSERT_TRUE(defined && undefined);
    clickAt(h, *undefined);
    EXPECT_EQ(asks.count(), 0); // nothing to run there
    clickAt(h, *defined);
    ASSERT_EQ(asks.count(), 1);
    EXPECT_EQ(asks.at(0).at(0).toInt(), 0);
    EXPECT_EQ(asks.at(0).at(1).toLongLong(), 2);
    EXPECT_EQ(asks.at(0).at(2).toLongLong(), 5);
    PatchingTopK k;
    k.model = 0;
    k.row = 2;
    k.col = 5;
    k.pieces = {"\u2581she", "\u2581he"};
    k.probs = {0.6, 0.3};
    k.logits = {3.0, 2.3};
    f.v.setTopK(k);
    ASSERT_EQ(f.v.topKTable()->rowCount(), 2);
    EXPECT_EQ(f.v.topKTable()->item(0, 0)->text(), QStringLiteral("\u00b7she"));    // displayPiece's spelling
    EXPECT_EQ(f.v.topKTable()->item(0, 0)->toolTip(), QStringLiteral("\u2581she")); // the piece itself
    EXPECT_EQ(f.v.topKTable()->item(1, 1)->text(), QStringLiteral("0.3"));
}

TEST(PatchingView, DataTablesAreTheGridsWithNaNWhereUndefined) {
    Fixture f;
    const PatchingData data = synthetic::makePatchingData(f.d);
    f.v.setResult(data);
    const auto tables = f.v.dataTables();
    ASSERT_EQ(tables.size(), 6u); // effect, raw effect and metric of both models
    const DataTable& effect = tables[0];
    EXPECT_EQ(effect.name, QStringLiteral("patching_grassmann_resid_effect"));
    EXPECT_EQ(effect.values.shape, (std::vector<int64_t>{data.grassmann.rows, data.grassmann.cols}));
    EXPECT_FLOAT_EQ(effect.values.at2(3, 4), static_cast<float>(data.grassmann.effect[3 * data.grassmann.cols + 4]));
    EXPECT_TRUE(std::isnan(effect.values.at2(1, 2)));
    EXPECT_EQ(effect.rowLabels, data.grassmann.rowLabels);
    EXPECT_EQ(tables[1].name, QStringLiteral("patching_grassmann_resid_raw_effect"));
    EXPECT_FLOAT_EQ(tables[1].values.at2(0, 0),
                    static_cast<float>(data.grassmann.metric[0] - data.grassmann.corruptMetric));
    EXPECT_EQ(tables[2].name, QStringLiteral("patching_grassmann_resid_metric"));
    EXPECT_FLOAT_EQ(tables[2].values.at2(0, 0), static_cast<float>(data.grassmann.metric[0]));
    EXPECT_EQ(tables[3].name, QStringLiteral("patching_transformer_resid_effect"));
    // Settings keep the fields.
    f.v.setInputs(data.inputs);
    PatchingView w; // NOLINT: the QApplication exists (fixture)
    w.setSettings(f.v.settings());
    EXPECT_EQ(w.settings(), f.v.settings());
    EXPECT_EQ(w.inputs().corrupt, data.inputs.corrupt);
}

TEST(PatchingView, FigureKeepsEveryWordAndNamesTheMetric) {
    Fixture f;
    f.v.setResult(synthetic::makePatchingData(f.d));
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("(patched \u2212 corrupted) / (clean \u2212 corrupted)")));
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("\u00b7she")));
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        SCOPED_TRACE(o.widthInches);
        const QString path = dir.filePath(QStringLiteral("patching_%1.svg").arg(o.widthInches));
        const ExportResult r = exportFigure(f.v, o, path);
        ASSERT_TRUE(r.ok) << r.message.toStdString();
        QFile file(path);
        ASSERT_TRUE(file.open(QIODevice::ReadOnly));
        const QStringList texts = gwb::test::svgTexts(file.readAll());
        EXPECT_TRUE(texts.contains(QStringLiteral("Grassmann (resid)")));
        EXPECT_TRUE(texts.contains(QStringLiteral("Transformer (resid)")));
        // One colour bar for the pair, with its label, at both widths (the one-column figure had none).
        EXPECT_TRUE(texts.contains(QStringLiteral("normalised effect")))
            << texts.join(QStringLiteral(" | ")).toStdString();
        const QStringList cut = gwb::test::cutTexts(texts);
        EXPECT_TRUE(cut.isEmpty()) << cut.join(QStringLiteral(" | ")).toStdString();
    }
}

TEST(PatchingView, ASweepThatNoLongerMatchesItsInputsIsMarkedStale) {
    // A refused run (different lengths, an answer not in the vocabulary) left the previous
    // heatmaps on screen unmarked; so did edited fields. Now both are marked, and a new sweep
    // clears the mark.
    Fixture f;
    PatchingData data = synthetic::makePatchingData(f.d);
    f.v.setInputs(data.inputs);
    f.v.setResult(data);
    for (int m : {0, 1})
        EXPECT_TRUE(f.v.heatmap(m)->staleNote().isEmpty());
    PatchingData refused;
    refused.error = "the two prompts tokenize to different lengths";
    f.v.setResult(refused);
    for (int m : {0, 1})
        EXPECT_TRUE(f.v.heatmap(m)->staleNote().contains(QStringLiteral("refused")));
    f.v.setResult(data);
    EXPECT_TRUE(f.v.heatmap(0)->staleNote().isEmpty());
    PatchingInputs edited = data.inputs;
    edited.answer = "he";
    f.v.setInputs(edited);
    EXPECT_TRUE(f.v.heatmap(1)->staleNote().contains(QStringLiteral("changed")));
    f.v.setInputs(data.inputs);
    EXPECT_TRUE(f.v.heatmap(1)->staleNote().isEmpty());
    // The hover readout of an undefined cell gives the sweep's own reason.
    EXPECT_TRUE(f.v.heatmap(0)->readout(1, 2).contains(QStringLiteral("does not exist")))
        << f.v.heatmap(0)->readout(1, 2).toStdString();
}

namespace {

/// Two models over three pairs: 2 x 3 cells; cell (1, 2) is undefined for every pair of the
/// Grassmann model and cell (0, 0) for pair 1 only.
PairsData makePairsData() {
    PairsData d;
    d.inputs.file = "/data/name-swap.jsonl";
    d.inputs.site = "resid";
    d.lines = 4;
    const double nan = std::nan("");
    for (int m : {0, 1}) {
        PairsGrid& g = m == 0 ? d.grassmann : d.transformer;
        g.model = m == 0 ? "Grassmann" : "Transformer";
        g.site = "resid";
        g.rows = 2;
        g.cols = 3;
        g.rowLabels = {"h^0", "h^1"};
        g.colLabels = {"m-2", "m-1", "m"};
        g.rowTitle = "block input";
        g.colTitle = "position";
        g.lines = {1, 2, 4};
        g.usable = 3;
        for (int p = 0; p < 3; ++p)
            for (int i = 0; i < 6; ++i)
                g.values.push_back(m == 0 && i == 5               ? nan
                                   : (m == 0 && i == 0 && p == 1) ? nan
                                                                  : 0.1 * (i + 1) + 0.05 * p - 0.3 * m);
        g.mean.assign(6, nan);
        g.low.assign(6, nan);
        g.high.assign(6, nan);
        g.n.assign(6, 0);
        for (int i = 0; i < 6; ++i) {
            double sum = 0;
            for (int p = 0; p < 3; ++p)
                if (const double v = g.values[static_cast<size_t>(p * 6 + i)]; std::isfinite(v)) {
                    sum += v;
                    ++g.n[static_cast<size_t>(i)];
                }
            if (g.n[static_cast<size_t>(i)]) {
                g.mean[static_cast<size_t>(i)] = sum / static_cast<double>(g.n[static_cast<size_t>(i)]);
                g.low[static_cast<size_t>(i)] = g.mean[static_cast<size_t>(i)] - 0.04;
                g.high[static_cast<size_t>(i)] = g.mean[static_cast<size_t>(i)] + 0.04;
            }
        }
        g.scatterEstimate = {0.1, 0.2, -0.1, 0.4};
        g.scatterExact = {0.12, 0.18, -0.05, 0.5};
        g.spearman = gwb::engine::spearmanCorrelation(g.scatterEstimate, g.scatterExact);
        g.pearson = gwb::engine::pearsonCorrelation(g.scatterEstimate, g.scatterExact);
        g.skipped = {"line 3: the clean and corrupted prompts have different lengths"};
    }
    return d;
}

} // namespace

TEST(PatchingViewPairs, HeatmapsShowEachCellsMeanAndHoverGivesIntervalAndN) {
    Fixture f;
    QSignalSpy asked(&f.v, &PatchingView::pairsRequested);
    f.v.setPairsMethod(QStringLiteral("attribution"));
    f.v.runPairs(QStringLiteral("/data/name-swap.jsonl"));
    ASSERT_EQ(asked.size(), 1);
    const auto in = asked.front().front().value<PairsInputs>();
    EXPECT_EQ(in.file, QStringLiteral("/data/name-swap.jsonl"));
    EXPECT_EQ(in.method, QStringLiteral("attribution"));
    EXPECT_EQ(in.site, f.v.inputs().site);
    f.v.setPairsMethod(QStringLiteral("exact"));

    const PairsData d = makePairsData();
    f.v.setPairsResult(d);
    ASSERT_TRUE(f.v.pairsMode());
    ASSERT_TRUE(f.v.hasContent());
    for (int m : {0, 1}) {
        const HeatmapWidget* h = f.v.heatmap(m);
        ASSERT_TRUE(h->hasMatrix());
        for (int64_t r = 0; r < 2; ++r)
            for (int64_t c = 0; c < 3; ++c) {
                const double want = d.grid(m).mean[static_cast<size_t>(r * 3 + c)];
                float row[3];
                h->source()->row(r, row);
                const double got = row[c];
                if (std::isnan(want))
                    EXPECT_TRUE(std::isnan(got));
                else
                    EXPECT_NEAR(got, want, 1e-6);
            }
        // One scale for both models, centred at 0, from the largest |mean|.
        EXPECT_DOUBLE_EQ(h->colorScale().effectiveHigh(), -h->colorScale().effectiveLow());
    }
    // Cell (0, 0) of the Grassmann model: pairs 0 and 2 only.
    const QString text = f.v.cellText(0, 0, 0);
    EXPECT_TRUE(text.contains(QStringLiteral("95% paired-bootstrap interval"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("n = 2 of 3 pairs"))) << text.toStdString();
    EXPECT_TRUE(f.v.cellText(0, 1, 2).contains(QStringLiteral("n = 0"))) << f.v.cellText(0, 1, 2).toStdString();
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("1 line(s) skipped"))) << f.v.message().toStdString();
    // The side panel starts on the cell of largest |mean| whose pairs differ; a click moves it.
    EXPECT_EQ(f.v.pairsPlots()->cellModel(), 0);
    f.v.clickCell(1, 1, 1);
    EXPECT_EQ(f.v.pairsPlots()->cellModel(), 1);
    EXPECT_EQ(f.v.pairsPlots()->cellRow(), 1);
    EXPECT_EQ(f.v.pairsPlots()->cellCol(), 1);
    EXPECT_EQ(d.transformer.cellValues(1, 1).size(), 3u);
}

TEST(PatchingViewPairs, ARefusedFileKeepsTheMeansAndASinglePairSweepLeavesPairsMode) {
    Fixture f;
    f.v.setPairsResult(makePairsData());
    PairsData refused;
    refused.inputs.file = "/data/broken.jsonl";
    refused.error = "'/data/broken.jsonl' is not UTF-8 text";
    f.v.setPairsResult(refused);
    EXPECT_TRUE(f.v.pairsMode());
    EXPECT_EQ(f.v.pairsResult().inputs.file, QStringLiteral("/data/name-swap.jsonl"));
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("not UTF-8"))) << f.v.message().toStdString();
    // Changing the site marks the means stale.
    PatchingInputs in = f.v.inputs();
    in.site = "mixer";
    f.v.setInputs(in);
    EXPECT_FALSE(f.v.heatmap(0)->staleNote().isEmpty());
    f.v.setResult(synthetic::makePatchingData(f.d));
    EXPECT_FALSE(f.v.pairsMode());
    float row[64];
    ASSERT_LE(f.v.heatmap(0)->source()->cols(), 64);
    f.v.heatmap(0)->source()->row(0, row);
    EXPECT_NEAR(row[0], f.v.result().grassmann.value(0, 0), 1e-6);
}

TEST(PatchingViewPairs, CorrelationsAreSpearmanAndPearson) {
    // Ranks 1..4 both sides: Spearman 1 although the relation is not linear.
    EXPECT_NEAR(gwb::engine::spearmanCorrelation({1, 2, 3, 4}, {1, 4, 9, 100}), 1.0, 1e-12);
    EXPECT_LT(gwb::engine::pearsonCorrelation({1, 2, 3, 4}, {1, 4, 9, 100}), 0.9);
    EXPECT_NEAR(gwb::engine::pearsonCorrelation({1, 2, 3}, {2, 4, 6}), 1.0, 1e-12);
    EXPECT_NEAR(gwb::engine::spearmanCorrelation({1, 2, 3}, {3, 2, 1}), -1.0, 1e-12);
    // Ties share their mean rank; NaN points are left out; a constant side has none.
    EXPECT_NEAR(gwb::engine::spearmanCorrelation({1, 1, 2, std::nan("")}, {1, 1, 2, 5}), 1.0, 1e-12);
    EXPECT_TRUE(std::isnan(gwb::engine::pearsonCorrelation({1, 1, 1}, {1, 2, 3})));
    EXPECT_TRUE(std::isnan(gwb::engine::spearmanCorrelation({1}, {1})));
}

TEST(PatchingViewPairs, DataTablesAndFiguresAtBothWidthsKeepEveryWord) {
    Fixture f;
    const PairsData d = makePairsData();
    f.v.setPairsResult(d);
    const std::vector<DataTable> tables = f.v.dataTables();
    QStringList names;
    for (const DataTable& t : tables)
        names << t.name;
    for (const char* want : {"pairs_grassmann_resid_effect_mean", "pairs_grassmann_resid_effect_ci_low",
                             "pairs_grassmann_resid_effect_ci_high", "pairs_grassmann_resid_effect_n",
                             "pairs_grassmann_resid_effect_per_pair", "pairs_transformer_resid_estimate_vs_exact"})
        EXPECT_TRUE(names.contains(QLatin1String(want)))
            << want << " in " << names.join(QStringLiteral(", ")).toStdString();
    for (const DataTable& t : tables)
        if (t.name == QLatin1String("pairs_grassmann_resid_effect_per_pair")) {
            ASSERT_EQ(t.values.shape, (std::vector<int64_t>{3, 6}));
            EXPECT_TRUE(std::isnan(t.values.data[static_cast<size_t>(6 + 0)])); // pair 1, cell (0, 0)
            EXPECT_EQ(t.rowLabels.front(), QStringLiteral("line 1"));
        }
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("name-swap.jsonl"))) << f.v.caption().toStdString();
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        SCOPED_TRACE(o.widthInches);
        const QString path = dir.filePath(QStringLiteral("pairs_%1.svg").arg(o.widthInches));
        const ExportResult r = exportFigure(f.v, o, path);
        ASSERT_TRUE(r.ok) << r.message.toStdString();
        QFile file(path);
        ASSERT_TRUE(file.open(QIODevice::ReadOnly));
        const QStringList texts = gwb::test::svgTexts(file.readAll());
        const QString all = texts.join(QStringLiteral(" "));
        EXPECT_TRUE(all.contains(QStringLiteral("Grassmann (resid), mean"))) << all.toStdString();
        EXPECT_TRUE(all.contains(QStringLiteral("Spearman"))) << all.toStdString();
        EXPECT_TRUE(all.contains(QStringLiteral("mean effect"))) << all.toStdString();
        EXPECT_TRUE(all.contains(QStringLiteral("pairs"))) << all.toStdString();
        const QStringList cut = gwb::test::cutTexts(texts);
        EXPECT_TRUE(cut.isEmpty()) << cut.join(QStringLiteral(" | ")).toStdString();
    }
}

TEST(PatchingViewPairs, PairsWithNothingToExplainSayItFirstAndShowRawEffects) {
    // Issue 65: half the pairs reversed. Each pair's ratio is 1 at cell 0 (the old mean of ratios
    // read as a confident full effect); the pairs' clean - corrupted averages 0, so the caption and
    // status lead with the verdict and the cells show the mean raw effect in logits.
    Fixture f;
    PairsData d = makePairsData();
    const int64_t P = 3, C = 6;
    std::vector<double> clean = {2.0, -2.0, 2.0}, corrupt = {0.0, 0.0, 0.0}, metric(P * C, 0.0);
    for (int64_t p = 0; p < P; ++p)
        metric[static_cast<size_t>(p * C)] = clean[static_cast<size_t>(p)];
    for (int m : {0, 1}) {
        PairsGrid& g = m == 0 ? d.grassmann : d.transformer;
        g.estimates = gwb::engine::estimatePairs(metric, clean, corrupt, true, P, C, 0.05, 200, 1);
        g.shownEstimate = "mean raw effect (logits)";
        g.mean = g.estimates.raw;
        g.low = g.estimates.rawLow;
        g.high = g.estimates.rawHigh;
        g.n = g.estimates.n;
        ASSERT_FALSE(g.estimates.difference.effect);
    }
    f.v.setPairsResult(d);
    EXPECT_TRUE(f.v.caption().startsWith(QStringLiteral("Grassmann: clean - corrupted over 3 pairs")))
        << f.v.caption().toStdString();
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("no effect to localise"))) << f.v.caption().toStdString();
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("mean raw effect"))) << f.v.caption().toStdString();
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("Holm"))) << f.v.caption().toStdString();
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("no effect to localise"))) << f.v.message().toStdString();
    const QString hover = f.v.cellText(0, 0, 0, nullptr);
    EXPECT_TRUE(hover.contains(QStringLiteral("mean raw effect (logits)"))) << hover.toStdString();
    EXPECT_TRUE(hover.contains(QStringLiteral("mean of ratios 1"))) << hover.toStdString();
    EXPECT_TRUE(hover.contains(QStringLiteral("not marked by Holm"))) << hover.toStdString();
}

TEST(PatchingViewPairs, AShortViewScrollsThePairsPlotsInsteadOfSqueezingThem) {
    // Issue 67: at 1280 x 720 with a long prompt the side panel's histogram and scatter collapsed
    // to their titles. The plots keep the height they need and the panel scrolls.
    Fixture f;
    f.v.setPairsResult(makePairsData());
    ASSERT_TRUE(f.v.pairsMode());
    f.v.resize(1100, 300);
    f.v.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&f.v));
    PairsPlotsWidget* plots = f.v.pairsPlots();
    ASSERT_TRUE(plots->isVisible());
    EXPECT_GE(plots->height(), PairsPlotsWidget::kMinimumHeight);
    auto* scroll = f.v.findChild<QScrollArea*>(QStringLiteral("patchingPairsScroll"));
    ASSERT_NE(scroll, nullptr);
    EXPECT_LT(scroll->viewport()->height(), plots->height());
    EXPECT_GT(scroll->verticalScrollBar()->maximum(), 0);
}
