// Paths view: both models' senders x receivers matrices on one diverging scale, hover text with
// the raw metric and the effect ("—" with the reason where a receiver is at or before the sender's
// layer), clicks asking for a cell's top pieces, the figure whole at both widths, stale marking,
// and "Trace paths from here" (the inputs a Patching cell gives).
#include "svg_text.h"
#include "synthetic_data.h"

#include "gwb/views/figure_export.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/paths_view.h"

#include <QFile>
#include <QFontMetrics>
#include <QLabel>
#include <QScrollArea>
#include <QScrollBar>
#include <QTest>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::views;

namespace {

struct Fixture {
    bool app = (synthetic::ensureApp(), true);
    WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    PathsView v;
    Fixture() {
        s.setExtents(d);
        v.setSelection(&s);
        v.setData(d);
        v.resize(1100, 600);
    }
};

} // namespace

TEST(PathsView, ShowsBothMatricesOnOneScaleWithReasonsWhereUndefined) {
    Fixture f;
    EXPECT_FALSE(f.v.hasContent());
    const PathsData data = synthetic::makePathsData(f.d);
    f.v.setInputs(data.inputs);
    f.v.setResult(data);
    ASSERT_TRUE(f.v.hasContent());
    const double m = pathsScale(data);
    EXPECT_GT(m, 0.3);
    for (int model : {0, 1}) {
        HeatmapWidget* h = f.v.heatmap(model);
        ASSERT_TRUE(h->hasMatrix());
        EXPECT_DOUBLE_EQ(h->colorScale().effectiveLow(), -m);
        EXPECT_DOUBLE_EQ(h->colorScale().effectiveHigh(), m);
    }
    // Row 0 is a layer-0 sender: resid.1 (column 1) is defined, and the hover gives both values.
    QString why;
    const QString text = f.v.cellText(0, 0, 1, &why);
    EXPECT_TRUE(text.contains(QStringLiteral("metric"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("effect"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("resid.1")));
    EXPECT_TRUE(why.isEmpty());
    // The last sender (last layer) does not reach resid.1: undefined, with the reason.
    const int64_t last = data.grassmann.rows() - 1;
    const QString undefined = f.v.cellText(0, last, 1, &why);
    EXPECT_TRUE(undefined.contains(QStringLiteral("\u2014"))) << undefined.toStdString();
    EXPECT_FALSE(undefined.contains(QStringLiteral("nan")));
    EXPECT_TRUE(why.contains(QStringLiteral("at or before the sender's layer"))) << why.toStdString();
    EXPECT_TRUE(f.v.heatmap(0)->readout(last, 1).contains(QStringLiteral("at or before")));
    // Its data: effect and metric of each model, NaN where undefined.
    const auto tables = f.v.dataTables();
    ASSERT_EQ(tables.size(), 4u);
    EXPECT_TRUE(std::isnan(tables[0].values.data[static_cast<size_t>(last * data.grassmann.cols() + 1)]));
}

TEST(PathsView, BadInputIsAMessageAndAnEarlierResultIsMarkedStale) {
    Fixture f;
    PathsInputs in = synthetic::makePathsData(f.d).inputs;
    in.corrupt.clear();
    QSignalSpy runs(&f.v, &PathsView::runRequested);
    f.v.setInputs(in);
    f.v.run();
    EXPECT_EQ(runs.count(), 0);
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("corrupted prompt")));
    const PathsData data = synthetic::makePathsData(f.d);
    f.v.setInputs(data.inputs);
    f.v.run();
    EXPECT_EQ(runs.count(), 1);
    f.v.setResult(data);
    EXPECT_TRUE(f.v.heatmap(0)->staleNote().isEmpty());
    PathsData refused;
    refused.error = "the prompts tokenize to different lengths";
    f.v.setResult(refused);
    EXPECT_TRUE(f.v.heatmap(0)->staleNote().contains(QStringLiteral("refused")));
    EXPECT_TRUE(f.v.message().contains(QStringLiteral("different lengths")));
    f.v.setResult(data);
    PathsInputs edited = data.inputs;
    edited.receivers = "logits";
    f.v.setInputs(edited);
    EXPECT_TRUE(f.v.heatmap(1)->staleNote().contains(QStringLiteral("changed")));
}

TEST(PathsView, FigureKeepsEveryWordAtBothWidths) {
    Fixture f;
    f.v.setResult(synthetic::makePathsData(f.d));
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("direct effect")));
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        SCOPED_TRACE(o.widthInches);
        const QString path = dir.filePath(QStringLiteral("paths_%1.svg").arg(o.widthInches));
        const ExportResult r = exportFigure(f.v, o, path);
        ASSERT_TRUE(r.ok) << r.message.toStdString();
        QFile file(path);
        ASSERT_TRUE(file.open(QIODevice::ReadOnly));
        const QStringList texts = gwb::test::svgTexts(file.readAll());
        EXPECT_TRUE(texts.contains(QStringLiteral("Grassmann")));
        EXPECT_TRUE(texts.contains(QStringLiteral("Transformer")));
        EXPECT_TRUE(texts.contains(QStringLiteral("normalised effect")));
        const QStringList cut = gwb::test::cutTexts(texts);
        EXPECT_TRUE(cut.isEmpty()) << cut.join(QStringLiteral(" | ")).toStdString();
    }
}

TEST(PathsView, APatchingCellGivesThePathsInputsAndItsSender) {
    synthetic::ensureApp();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    PatchingData p = synthetic::makePatchingData(d);
    std::string sender;
    PathsInputs in = pathsFromPatchingCell(p, 0, 2, 3, &sender);
    EXPECT_EQ(in.corrupt, p.inputs.corrupt);
    EXPECT_EQ(in.answer, p.inputs.answer);
    EXPECT_EQ(in.senders, QStringLiteral("all")); // a block input: every earlier component writes it
    EXPECT_EQ(in.position, 3);
    EXPECT_TRUE(sender.empty());
    p.grassmann.site = "offset";
    p.grassmann.colLabels = {"D=1", "D=2", "D=4"};
    in = pathsFromPatchingCell(p, 0, 3, 1, &sender);
    EXPECT_EQ(in.senders, QStringLiteral("offset/head"));
    EXPECT_EQ(in.position, -1);
    EXPECT_EQ(sender, QStringLiteral("offset.3.2"));
    p.transformer.site = "ffn";
    in = pathsFromPatchingCell(p, 1, 1, 4, &sender);
    EXPECT_EQ(in.senders, QStringLiteral("ffn"));
    EXPECT_EQ(in.position, 4);
    EXPECT_EQ(sender, QStringLiteral("ffn.1"));
    // The view outlines that sender's row.
    Fixture f;
    PathsData data = synthetic::makePathsData(f.d);
    f.v.setResult(data);
    f.v.markSender(QString::fromStdString(data.grassmann.senders.at(2)));
    EXPECT_EQ(f.v.heatmap(0)->marks().row, 2);
}

TEST(PathsView, EverySenderRowIsLabelledOnScreenAndInPrint) {
    // 54 senders (a 6-layer Grassmann model: six offsets, mixer, gate and FFN a layer) were squeezed
    // into ~200 px with every 7th row labelled, and every 3rd in a 3.5 in figure (issue 41).
    Fixture f;
    PathsData data = synthetic::makePathsData(f.d);
    PathsGrid& g = data.grassmann;
    const QStringList kinds = {"offset.%1.1",  "offset.%1.2", "offset.%1.4", "offset.%1.8", "offset.%1.12",
                               "offset.%1.16", "mixer.%1",    "gate.%1",     "ffn.%1"};
    g.senders.clear();
    g.senderLayers.clear();
    g.receivers = {"logits"};
    for (int M = 1; M <= 6; ++M)
        g.receivers.push_back((QStringLiteral("resid.%1").arg(M)).toStdString());
    for (int l = 0; l < 6; ++l)
        for (const QString& k : kinds) {
            g.senders.push_back((k.arg(l)).toStdString());
            g.senderLayers.push_back(l);
        }
    g.effect.assign(static_cast<size_t>(g.rows() * g.cols()), 0.25);
    g.metric.assign(g.effect.size(), 0.5);
    ASSERT_EQ(g.rows(), 54);
    f.v.setResult(data);
    // On screen: each row as tall as a line of text; the matrices scroll instead of shrinking.
    EXPECT_GE(f.v.rowPitchOnScreen(0), QFontMetrics(f.v.font()).height());
    EXPECT_TRUE(f.v.findChild<QScrollArea*>(QStringLiteral("pathsScroll")));
    // In print: every sender's label, at both widths.
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        SCOPED_TRACE(o.widthInches);
        QString error;
        const QStringList texts =
            gwb::test::figureTexts(f.v, o, dir.filePath(QStringLiteral("paths54_%1.svg").arg(o.widthInches)), &error);
        ASSERT_FALSE(texts.isEmpty()) << error.toStdString();
        QStringList missing;
        for (const QString& s : stdToQ(g.senders))
            if (!texts.contains(s)) missing << s;
        EXPECT_TRUE(missing.isEmpty()) << missing.join(QStringLiteral(", ")).toStdString();
        EXPECT_TRUE(gwb::test::cutTexts(texts).isEmpty());
    }
}

TEST(PathsView, ScrolledMatricesKeepTheirColourBarInViewAndHoverSaysWhyACellIsGrey) {
    // Issue 52: at 1280 x 720 the matrices scroll, and their colour bars and row titles sat at the
    // middle of the whole matrix, cut at the viewport ("ffect", "ayer)"); a grey cell's reason was
    // cut off ("normalised effect = — (U…").
    Fixture f;
    PathsData data = synthetic::makePathsData(f.d);
    PathsGrid& g = data.grassmann;
    g.senders.clear();
    g.senderLayers.clear();
    for (int l = 0; l < 6; ++l)
        for (int k = 0; k < 9; ++k) {
            g.senders.push_back((QStringLiteral("offset.%1.%2").arg(l).arg(k + 1)).toStdString());
            g.senderLayers.push_back(l);
        }
    g.receivers = {"logits", "resid.1"};
    g.effect.assign(static_cast<size_t>(g.rows() * g.cols()), 0.25);
    g.effect[static_cast<size_t>(g.cols() - 1)] = std::nan(""); // row 0, resid.1: grey
    g.metric.assign(g.effect.size(), 0.5);
    f.v.setResult(data);
    f.v.resize(1280, 560);
    f.v.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&f.v));
    auto* scroll = f.v.findChild<QScrollArea*>(QStringLiteral("pathsScroll"));
    ASSERT_TRUE(scroll);
    ASSERT_GT(scroll->verticalScrollBar()->maximum(), 0) << "the matrix fits: nothing to check";
    HeatmapWidget* h = f.v.heatmap(0);
    for (int value : {0, scroll->verticalScrollBar()->maximum() / 2, scroll->verticalScrollBar()->maximum()}) {
        scroll->verticalScrollBar()->setValue(value);
        h->repaint();
        const QRect shown = h->visibleRegion().boundingRect();
        const QRectF bar = h->colorbarRect();
        ASSERT_FALSE(bar.isEmpty());
        EXPECT_GE(bar.top(), shown.top() - 1) << "scrolled to " << value;
        EXPECT_LE(bar.bottom(), shown.bottom() + 1) << "scrolled to " << value;
    }
    Q_EMIT h->cellHovered(0, g.cols() - 1, QString());
    auto* hover = f.v.findChild<QLabel*>(QStringLiteral("pathsHover"));
    ASSERT_TRUE(hover);
    EXPECT_TRUE(hover->text().contains(g.undefinedReason(0, g.cols() - 1).empty()
                                           ? QStringLiteral("undefined")
                                           : QString::fromStdString(g.undefinedReason(0, g.cols() - 1))))
        << hover->text().toStdString();
    EXPECT_TRUE(hover->wordWrap());
}

TEST(PathsView, APairsFilesEstimatesLeadWithTheVerdictAndASingleRunLeavesPairsMode) {
    // Issue 65: paths over pairs in the window. The matrices show each cell's estimate over the pairs
    // (the mean raw effect here: half the pairs reversed, nothing to localise), Holm's marks, and
    // the status and caption lead with the verdict; the fields changing marks them stale.
    Fixture f;
    const PathsData single = synthetic::makePathsData(f.d);
    f.v.setInputs(single.inputs);
    PathsPairsData d;
    d.inputs.file = "/data/name-swap.jsonl";
    d.lines = 4;
    const int64_t P = 4, S = 3, R = 2;
    const std::vector<double> clean = {2.0, -2.0, 2.0, -2.0}, corrupt(4, 0.0);
    std::vector<double> metric(static_cast<size_t>(P * S * R), 0.0);
    for (int64_t p = 0; p < P; ++p)
        metric[static_cast<size_t>(p * S * R)] = clean[static_cast<size_t>(p)];
    for (int m : {0, 1}) {
        gwb::engine::PairsGrid& g = m == 0 ? d.grassmann : d.transformer;
        g.model = m == 0 ? "Grassmann" : "Transformer";
        g.site = "paths";
        g.rows = S;
        g.cols = R;
        g.rowLabels = {"offset.0.1", "mixer.0", "ffn.1"};
        g.colLabels = {"logits", "resid.2"};
        g.rowTitle = "sender";
        g.colTitle = "receiver";
        g.lines = {1, 2, 3, 4};
        g.estimates = gwb::engine::estimatePairs(metric, clean, corrupt, true, P, S * R, 0.05, 100, 1);
        g.shownEstimate = "mean raw effect (logits)";
        g.mean = g.estimates.raw;
        g.low = g.estimates.rawLow;
        g.high = g.estimates.rawHigh;
        g.n = g.estimates.n;
        g.values = metric;
        g.usable = P;
    }
    f.v.setPairsResult(d);
    ASSERT_TRUE(f.v.pairsMode());
    EXPECT_TRUE(f.v.hasContent());
    EXPECT_TRUE(f.v.message().startsWith(QStringLiteral("Grassmann: clean - corrupted over 4 pairs")))
        << f.v.message().toStdString();
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("no effect to localise"))) << f.v.caption().toStdString();
    EXPECT_TRUE(f.v.caption().contains(QStringLiteral("Holm"))) << f.v.caption().toStdString();
    EXPECT_TRUE(f.v.cellText(0, 0, 0).contains(QStringLiteral("mean raw effect (logits)")));
    EXPECT_TRUE(f.v.heatmap(0)->staleNote().isEmpty());
    PathsInputs in = f.v.inputs();
    in.receivers = "logits";
    f.v.setInputs(in);
    EXPECT_FALSE(f.v.heatmap(0)->staleNote().isEmpty());
    f.v.setResult(single);
    EXPECT_FALSE(f.v.pairsMode());
}
