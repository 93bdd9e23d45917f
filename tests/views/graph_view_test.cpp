// The Graph view's marks and dashboards as a person uses them, offscreen on hand-made graphs:
// hovering a feature asks the application for its dashboard once and the tooltip then shows its
// top contexts; a pinned feature's dashboard is in the panel; pins and named supernodes go into the
// saved JSON's qParams (one file per model); an unwritable path is refused with its name.

#include "synthetic_data.h"

#include "gwb/views/figure_export.h"
#include "gwb/views/graph_view.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QImage>
#include <QJsonObject>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>

#include <gtest/gtest.h>

using namespace gwb::views;
using gwb::engine::GraphNodeKind;

namespace {

/// The first node of `kind` in model m's graph that pruning kept.
int64_t firstKept(const gwb::engine::GraphPair& pair, int m, GraphNodeKind kind) {
    const auto& g = pair.graphs[m];
    for (int64_t i = 0; i < g.nodeCount(); ++i)
        if (g.nodes[static_cast<size_t>(i)].kind == kind && pair.pruning[m].nodeKept[static_cast<size_t>(i)]) return i;
    return -1;
}

} // namespace

TEST(GraphViewMarks, AFeaturesDashboardIsAskedForOnceAndShownOnHoverAndPin) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    GraphView view;
    view.setData(data);
    view.setGraphs(synthetic::makeGraphPair(data));
    QSignalSpy asked(&view, &GraphView::dashboardRequested);
    const int64_t f = firstKept(*view.graphs(), 0, GraphNodeKind::Feature);
    ASSERT_GE(f, 0);
    const auto& node = view.graphs()->graphs[0].nodes[static_cast<size_t>(f)];
    view.requestDashboard(0, f);
    view.requestDashboard(0, f); // a second hover while it is computed asks nothing more
    ASSERT_EQ(asked.count(), 1);
    EXPECT_EQ(asked.at(0).at(0).toInt(), 0);
    EXPECT_EQ(asked.at(0).at(1).toInt(), node.layer);
    EXPECT_EQ(asked.at(0).at(2).toLongLong(), node.index);
    EXPECT_TRUE(view.nodeTip(0, f).contains(QStringLiteral("Computing the feature")))
        << view.nodeTip(0, f).toStdString();
    // A token or logit has no dashboard.
    view.requestDashboard(0, firstKept(*view.graphs(), 0, GraphNodeKind::Token));
    EXPECT_EQ(asked.count(), 1);

    const FeatureDataPtr features = synthetic::makeFeatureData(data, false);
    FeatureDashboard d = synthetic::makeFeatureDashboard(*features, node.index);
    view.setDashboard(0, node.layer, d);
    const QString tip = view.nodeTip(0, f);
    EXPECT_TRUE(tip.contains(QStringLiteral("Top-activating contexts"))) << tip.toStdString();
    EXPECT_TRUE(tip.contains(QStringLiteral("truth"))) << tip.toStdString();
    EXPECT_FALSE(tip.contains(QStringLiteral("Computing"))) << tip.toStdString();
    // The other model's feature of the same index and layer is another feature.
    EXPECT_EQ(view.dashboard(1, node.layer, node.index), nullptr);
    // Pinned: the panel has it.
    view.togglePin(0, f);
    const QString panel = view.findChild<QTextBrowser*>()->toPlainText();
    EXPECT_TRUE(panel.contains(QStringLiteral("Top-activating contexts"))) << panel.toStdString();
    EXPECT_EQ(asked.count(), 1); // known already
    // New graphs: the dashboards are asked for again (the sets may have been trained since).
    view.setGraphs(synthetic::makeGraphPair(data));
    EXPECT_EQ(view.dashboard(0, node.layer, node.index), nullptr);
    view.requestDashboard(0, f);
    EXPECT_EQ(asked.count(), 2);
}

TEST(GraphViewMarks, PinsAndSupernodesAreSavedInEachModelsJson) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    GraphView view;
    view.setData(data);
    const GraphPairPtr pair = synthetic::makeGraphPair(data);
    view.setGraphs(pair);
    const int64_t f = firstKept(*pair, 0, GraphNodeKind::Feature);
    const int64_t logit = pair->graphs[0].nodeCount() - 2;
    view.togglePin(0, f);
    view.group(0, {f, logit}, QStringLiteral("say the"));
    view.group(1, {firstKept(*pair, 1, GraphNodeKind::Feature), pair->graphs[1].nodeCount() - 2});
    EXPECT_EQ(view.groupNames(1), QStringList{QStringLiteral("group 1")});
    QTemporaryDir dir;
    const QStringList files = view.saveJson(dir.filePath(QStringLiteral("g.json")));
    ASSERT_EQ(files, (QStringList{dir.filePath(QStringLiteral("g.grassmann.json")),
                                  dir.filePath(QStringLiteral("g.transformer.json"))}));
    QFile file(files[0]);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(file.readAll()).object();
    const QJsonObject q = doc.value(QStringLiteral("qParams")).toObject();
    const QString fId = QString::fromStdString(pair->graphs[0].nodeId(f));
    EXPECT_EQ(q.value(QStringLiteral("pinnedIds")).toArray(), QJsonArray{fId});
    const QJsonArray super = q.value(QStringLiteral("supernodes")).toArray();
    ASSERT_EQ(super.size(), 1);
    EXPECT_EQ(super[0].toArray(),
              (QJsonArray{QStringLiteral("say the"), fId, QString::fromStdString(pair->graphs[0].nodeId(logit))}));
    // Every pinned or grouped node is a node of the saved graph.
    QStringList ids;
    for (const auto& n : doc.value(QStringLiteral("nodes")).toArray())
        ids << n.toObject().value(QStringLiteral("node_id")).toString();
    EXPECT_TRUE(ids.contains(fId));
    QFile other(files[1]);
    ASSERT_TRUE(other.open(QIODevice::ReadOnly));
    EXPECT_EQ(QJsonDocument::fromJson(other.readAll())
                  .object()
                  .value(QStringLiteral("qParams"))
                  .toObject()
                  .value(QStringLiteral("supernodes"))
                  .toArray()
                  .at(0)
                  .toArray()
                  .at(0)
                  .toString(),
              QStringLiteral("group 1"));
    // A folder that does not exist: refused with the file's name, nothing half-written.
    try {
        view.saveJson(dir.filePath(QStringLiteral("missing/g.json")));
        ADD_FAILURE() << "saved into a missing folder";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    }
}

TEST(GraphViewMarks, AGraphOfAnEarlierPromptIsMarkedStaleAndCannotBeSavedAsCurrent) {
    // Issue 67: after another prompt ran, the Graph view kept the old graph with no banner, Save
    // JSON enabled and an export that did not name the prompt. Now it is greyed under a banner, Save
    // JSON is off, and the caption names the prompt and says it is an earlier one.
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    GraphView view;
    view.setData(data);
    view.setGraphs(synthetic::makeGraphPair(data));
    EXPECT_FALSE(view.message().startsWith(QStringLiteral("Earlier graph")));
    EXPECT_TRUE(view.caption().contains(QStringLiteral("next token after"))) << view.caption().toStdString();
    WorkbenchData other = synthetic::makeWorkbenchData();
    auto shorter = std::make_shared<gwb::engine::Trace>(*other.grassmann);
    shorter->tokens.pop_back();
    other.grassmann = shorter;
    view.setData(other);
    EXPECT_TRUE(view.message().startsWith(QStringLiteral("Earlier graph: of the prompt")))
        << view.message().toStdString();
    EXPECT_TRUE(view.caption().startsWith(QStringLiteral("Earlier graph"))) << view.caption().toStdString();
    int saves = 0;
    for (QPushButton* b : view.findChildren<QPushButton*>())
        if (b->text().startsWith(QStringLiteral("Save JSON"))) {
            EXPECT_FALSE(b->isEnabled());
            ++saves;
        }
    EXPECT_EQ(saves, 1);
}

TEST(GraphViewMarks, AOneColumnFigureDrawsTheStrongestPathsAndSaysWhatItLeftOut) {
    // Issue 67: at 3.5 in the pruned graph was an unreadable hairball. A figure narrower than 5 in
    // draws the logits, the 16 most influential other nodes and the 32 strongest edges among them,
    // and its caption says how many of the kept nodes and edges it drew; a two-column figure draws
    // them all and says nothing of the kind.
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    auto pair = std::make_shared<gwb::engine::GraphPair>(*synthetic::makeGraphPair(data));
    for (int m = 0; m < 2; ++m)
        if (pair->ran[m]) pair->pruning[m] = gwb::engine::pruneGraph(pair->graphs[m], 1.0, 1.0); // keep all
    ASSERT_GT(pair->pruning[0].keptEdges, 32);
    GraphFigure f;
    f.setData(data);
    f.setGraphs(pair);
    const QString narrow = f.captionAt(3.5 * 72), wide = f.captionAt(7 * 72);
    EXPECT_EQ(wide, f.caption());
    EXPECT_TRUE(narrow.startsWith(f.caption()));
    EXPECT_TRUE(narrow.contains(QStringLiteral("At one column only the strongest paths are drawn")))
        << narrow.toStdString();
    EXPECT_TRUE(narrow.contains(QStringLiteral("32 of %1 kept edges").arg(pair->pruning[0].keptEdges)))
        << narrow.toStdString();
    EXPECT_TRUE(narrow.contains(QStringLiteral("the data export holds every kept node and edge")));
    // The data export keeps every kept edge at any width.
    int64_t edges = 0;
    for (const DataTable& t : f.dataTables())
        if (t.name.endsWith(QStringLiteral("_edges"))) edges += t.values.shape[0];
    EXPECT_EQ(edges, pair->pruning[0].keptEdges + pair->pruning[1].keptEdges);
    // And the figure draws at one column (its caption wrapped under the stacked panels).
    const QImage img = renderFigureImage(f, FigureOptions::oneColumn());
    EXPECT_FALSE(img.isNull());
}
