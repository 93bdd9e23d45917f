// The Graph view in the window as a person uses it: after a Run, open each model's transcoder set,
// press Run, and both graphs arrive off the GUI thread with progress; the window stays responsive;
// a click pins a node and lists its inputs, a clicked edge shows its split across offsets or heads;
// a hovered feature's dashboard is computed off the GUI thread; Cancel keeps the previous graphs;
// without transcoders Run says what to do.

#include "gui/graph_job.h"
#include "gui/main_window.h"

#include "app_test_util.h"
#include "window_run_util.h"

#include "gwb/engine/features.h"
#include "gwb/engine/model.h"
#include "gwb/views/graph_view.h"

#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>

#include <gtest/gtest.h>

#include <fstream>

using namespace gwb::app;
using gwb::app::test::ensureApp;

namespace {

constexpr int kWaitMs = 180000;

/// A small transcoder set per bundled model (a few steps on a short corpus).
struct Sets {
    QTemporaryDir dir;
    QString folders[2];
    Sets() {
        const std::string corpus = dir.filePath(QStringLiteral("corpus.txt")).toStdString();
        std::ofstream f(corpus);
        for (int i = 0; i < 60; ++i)
            f << "It is a truth universally acknowledged, that a single man in possession of a good fortune, must "
                 "be in want of a wife; and she said so.\n";
        f.close();
        const char* files[2] = {"grassmann-austen.gwb", "transformer-austen.gwb"};
        for (int m = 0; m < 2; ++m) {
            const gwb::engine::Model model =
                gwb::engine::Model::load(gwb::app::test::bundledModelPath(files[m]), "cpu");
            gwb::engine::FeatureTrainOptions o;
            o.files = {corpus};
            o.dSae = 64;
            o.k = 4;
            o.tokens = 4 * 256;
            o.batch = 256;
            o.contextSize = 32;
            o.device = "cpu";
            folders[m] = dir.filePath(m == 0 ? QStringLiteral("g") : QStringLiteral("t"));
            gwb::engine::trainTranscoderSet(model, o, folders[m].toStdString());
        }
    }
};

Sets& sets() {
    static Sets s;
    return s;
}

QPushButton* button(QWidget* w, const QString& text) {
    for (auto* b : w->findChildren<QPushButton*>())
        if (b->text() == text) return b;
    return nullptr;
}

} // namespace

TEST(GraphInWindow, BothGraphsArriveAndAClickShowsAnEdgesSplit) {
    const QString folders[2] = {sets().folders[0], sets().folders[1]};
    auto w = gwb::app::test::windowAfterARun(QStringLiteral("It is a truth universally acknowledged, that a single"),
                                             kWaitMs);
    ASSERT_NE(w, nullptr);
    auto* gv = qobject_cast<gwb::views::GraphView*>(w->view(QStringLiteral("graph")));
    ASSERT_NE(gv, nullptr);
    w->showView(QStringLiteral("graph"));
    // Run without transcoders: told what to do.
    button(gv, QStringLiteral("Run"))->click();
    EXPECT_TRUE(gv->message().contains(QStringLiteral("transcoder set"))) << gv->message().toStdString();
    for (int m = 0; m < 2; ++m)
        gv->setTranscoders(m, folders[m]);
    auto* progress = gv->findChild<QProgressBar*>();
    ASSERT_NE(progress, nullptr);
    button(gv, QStringLiteral("Run"))->click();
    EXPECT_TRUE(progress->isVisible());
    // The GUI thread keeps serving events while the graphs are computed.
    int ticks = 0;
    ASSERT_TRUE(QTest::qWaitFor(
        [&] {
            ++ticks;
            return gv->hasContent() && !progress->isVisible();
        },
        kWaitMs));
    EXPECT_GT(ticks, 1);
    const gwb::engine::GraphPair* pair = gv->graphs();
    ASSERT_NE(pair, nullptr);
    for (int m = 0; m < 2; ++m) {
        EXPECT_TRUE(pair->ran[m]);
        EXPECT_TRUE(pair->errors[m].empty()) << pair->errors[m];
        EXPECT_GT(pair->pruning[m].keptEdges, 0);
        for (double c : pair->graphs[m].completeness)
            EXPECT_LT(c, 1e-9);
    }
    EXPECT_TRUE(gv->message().contains(QStringLiteral("Grassmann:"))) << gv->message().toStdString();
    // Pin the top logit: the panel lists its strongest inputs.
    const auto& g = pair->graphs[0];
    const int64_t top = g.nodeCount() - g.logits;
    gv->togglePin(0, top);
    const QString details = gv->findChild<QTextBrowser*>()->toPlainText();
    EXPECT_TRUE(details.contains(QStringLiteral("logit"))) << details.toStdString();
    EXPECT_TRUE(details.contains(QStringLiteral("from"))) << details.toStdString();
    // A kept edge from an earlier token into it: its split across the offsets of each block.
    const size_t n = static_cast<size_t>(g.nodeCount());
    const size_t row = g.rowNodes.size() - static_cast<size_t>(g.logits);
    int64_t source = -1;
    for (size_t j = 0; j < n; ++j)
        if (pair->pruning[0].edgeKept[row * n + j] && g.nodes[j].position < g.nodes[static_cast<size_t>(top)].position)
            source = static_cast<int64_t>(j);
    if (source >= 0) {
        gv->selectEdge(0, top, source);
        const QString split = gv->findChild<QTextBrowser*>()->toPlainText();
        EXPECT_TRUE(split.contains(QStringLiteral("offset"))) << split.toStdString();
        EXPECT_TRUE(split.contains(QStringLiteral("skip"))) << split.toStdString();
    }
    // A feature's dashboard, as hovering asks for it: computed off the GUI thread over the set's
    // training corpus, then in the node's tooltip.
    int64_t feature = -1;
    for (int64_t i = 0; i < g.nodeCount() && feature < 0; ++i)
        if (g.nodes[static_cast<size_t>(i)].kind == gwb::engine::GraphNodeKind::Feature &&
            pair->pruning[0].nodeKept[static_cast<size_t>(i)])
            feature = i;
    ASSERT_GE(feature, 0);
    const auto& fnode = g.nodes[static_cast<size_t>(feature)];
    gv->requestDashboard(0, feature);
    ASSERT_TRUE(QTest::qWaitFor([&] { return gv->dashboard(0, fnode.layer, fnode.index) != nullptr; }, kWaitMs));
    const gwb::engine::FeatureDashboardRun* dash = gv->dashboard(0, fnode.layer, fnode.index);
    EXPECT_TRUE(dash->error.empty()) << dash->error;
    EXPECT_FALSE(dash->top.empty());
    EXPECT_GT(dash->fired, 0);
    EXPECT_TRUE(gv->nodeTip(0, feature).contains(QStringLiteral("Top-activating contexts")));
    // Cancel right after Run: the previous graphs stay.
    button(gv, QStringLiteral("Run"))->click();
    button(gv, QStringLiteral("Cancel"))->click();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !progress->isVisible(); }, kWaitMs));
    EXPECT_TRUE(gv->hasContent());
}
