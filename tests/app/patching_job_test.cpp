// The window's causal tests on the small test models: both models' sweeps (offset/head pairs
// Grassmann offsets with Transformer heads), bad input refusing the whole run, cancel, a clicked
// cell's top-K, the runner on its worker thread behind the Patching view, and the quick ablations
// (menu actions, delta log p over the token strip).

#include "gwb/engine/patch_input.h"
#include "gui/patching_job.h"
#include "gui/paths_job.h"
#include "gui/quick_ablation.h"

#include "../views/std_text.h"
#include "app_test_util.h"
#include "test_models.h"

#include "gwb/engine/model.h"
#include "gwb/engine/tracer.h"
#include "gwb/views/chart_widget.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/token_strip.h"

#include <QAction>
#include <QApplication>
#include <QContextMenuEvent>
#include <QMenu>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTimer>

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::app;
using gwb::app::test::testModels;

namespace {

const QString kClean = QStringLiteral("emma was in the");
const QString kCorrupt = QStringLiteral("she was in the");

PatchingJobRequest request(const QString& site, const QString& mode = QStringLiteral("patch")) {
    PatchingJobRequest r;
    r.grassmannPath = testModels().grassmann;
    r.baselinePath = testModels().transformer;
    r.device = QStringLiteral("cpu");
    r.inputs.clean = kClean.toStdString();
    r.inputs.corrupt = mode == QLatin1String("patch") ? kCorrupt.toStdString() : std::string();
    r.inputs.answer = "her";
    r.inputs.wrong = "the";
    r.inputs.site = site.toStdString();
    r.inputs.mode = mode.toStdString();
    r.inputs.minDifference = 0; // the test models' metrics differ by ~1e-3: the quotient at any difference
    return r;
}

gwb::views::WorkbenchData traced(const QString& prompt) {
    gwb::views::WorkbenchData d;
    d.grassmann =
        gwb::engine::trace(gwb::engine::Model::load(testModels().grassmann.toStdString(), "cpu"), prompt.toStdString());
    d.baseline = gwb::engine::trace(gwb::engine::Model::load(testModels().transformer.toStdString(), "cpu"),
                                    prompt.toStdString());
    return d;
}

} // namespace

TEST(PatchingJob, OffsetHeadRunsGrassmannOffsetsNextToTransformerHeads) {
    ModelCache cache;
    PatchingRuns runs;
    double last = -1;
    int calls = 0;
    const gwb::views::PatchingData d = computePatching(
        cache, request(QStringLiteral("offset/head")),
        [&](double f) {
            EXPECT_GE(f, last - 1e-12); // monotone
            last = f;
            ++calls;
            return true;
        },
        &runs);
    ASSERT_TRUE(d.error.empty()) << d.error;
    EXPECT_GT(calls, 0);
    EXPECT_LE(last, 1.0 + 1e-12);
    const auto& g = d.grassmann;
    const auto& t = d.transformer;
    ASSERT_TRUE(g.hasGrid()) << g.error;
    ASSERT_TRUE(t.hasGrid()) << t.error;
    EXPECT_EQ(g.site, QStringLiteral("offset"));
    EXPECT_EQ(t.site, QStringLiteral("head"));
    EXPECT_EQ(g.rows, 2);
    EXPECT_EQ(g.cols, 3); // D = 1, 2, 3 over both layers
    EXPECT_EQ(g.defined, (std::vector<uint8_t>{1, 1, 0, 1, 0, 1}));
    EXPECT_EQ(t.cols, 2); // heads
    EXPECT_TRUE(g.hasMetric && g.effectDefined);
    EXPECT_TRUE(std::isnan(g.value(0, 2))); // layer 0 has no offset 3
    EXPECT_FALSE(g.undefinedReason(0, 2).empty());
    EXPECT_TRUE(std::isfinite(g.value(0, 0)));
    EXPECT_EQ(d.answerPiece, QStringLiteral("her"));
    EXPECT_EQ(d.metricPosition, 3);
    EXPECT_EQ(d.cleanTokens.size(), 4);
    EXPECT_EQ(runs.cells[0].size(), 6u);
    EXPECT_TRUE(runs.requests[0] && runs.requests[1]);
}

TEST(PatchingJob, ResidColumnsAreTheTokensAndTheEffectIsExactWhereCausalityFixesIt) {
    ModelCache cache;
    const gwb::views::PatchingData d = computePatching(cache, request(QStringLiteral("resid")));
    ASSERT_TRUE(d.error.empty()) << d.error;
    for (const auto* g : {&d.grassmann, &d.transformer}) {
        SCOPED_TRACE(g->model);
        ASSERT_TRUE(g->hasGrid());
        EXPECT_EQ(g->rows, 3);
        EXPECT_EQ(g->colLabels, (QStringList{"emma/she", "was", "in", "the"}));
        EXPECT_NEAR(g->value(0, 0), 1.0, 1e-3);           // the only differing token: the clean run
        EXPECT_NEAR(g->value(g->rows - 1, 3), 1.0, 1e-3); // the final state at the metric position
        EXPECT_NEAR(g->value(0, 1), 0.0, 1e-9);           // equal values: nothing changes
    }
}

TEST(PatchingJob, BadInputRefusesTheWholeRunAndAMissingSiteOnlyItsModel) {
    ModelCache cache;
    PatchingJobRequest r = request(QStringLiteral("resid"));
    r.inputs.corrupt = "emma is a truth universally";
    gwb::views::PatchingData d = computePatching(cache, r);
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("different lengths"))) << d.error;
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("'was' vs 'is'"))) << d.error;
    EXPECT_FALSE(d.hasGrid());
    r = request(QStringLiteral("resid"));
    r.inputs.answer = "zebra";
    d = computePatching(cache, r);
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("not in the vocabulary"))) << d.error;
    EXPECT_FALSE(d.hasGrid());
    // The gate exists only in the Grassmann model: the Transformer's panel says so.
    d = computePatching(cache, request(QStringLiteral("gate")));
    EXPECT_TRUE(d.error.empty()) << d.error;
    EXPECT_TRUE(d.grassmann.hasGrid());
    EXPECT_FALSE(d.transformer.hasGrid());
    EXPECT_TRUE(QString::fromStdString(d.transformer.error).contains(QStringLiteral("Grassmann site")))
        << d.transformer.error;
    // Cancel: the result says so and carries no grid (the view keeps what it had).
    d = computePatching(cache, request(QStringLiteral("resid")), [](double) { return false; });
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("Cancelled"))) << d.error;
    EXPECT_FALSE(d.hasGrid());
}

TEST(PatchingJob, TopKOfACellIsItsChangedRun) {
    ModelCache cache;
    PatchingRuns runs;
    const gwb::views::PatchingData d = computePatching(cache, request(QStringLiteral("resid")), {}, &runs);
    ASSERT_TRUE(d.error.empty());
    // Two cells whose changed run is the clean run at the metric position: the same top-K.
    const gwb::views::PatchingTopK a = computePatchingTopK(cache, runs, 0, 0, 0, 5);
    const gwb::views::PatchingTopK b = computePatchingTopK(cache, runs, 0, 2, 3, 5);
    ASSERT_TRUE(a.error.empty()) << a.error;
    ASSERT_EQ(a.pieces.size(), 5);
    EXPECT_EQ(a.pieces, b.pieces);
    double sum = 0;
    for (size_t i = 0; i < a.probs.size(); ++i) {
        EXPECT_NEAR(a.probs[i], b.probs[i], 1e-5);
        if (i > 0) {
            EXPECT_LE(a.logits[i], a.logits[i - 1]);
        }
        sum += a.probs[i];
    }
    EXPECT_LE(sum, 1.0 + 1e-9);
    // A cell that changed nothing (position 1 of h^0: equal tokens) gives the corrupted run's top-K,
    // which differs from the clean one in probabilities.
    const gwb::views::PatchingTopK c = computePatchingTopK(cache, runs, 0, 0, 1, 5);
    ASSERT_TRUE(c.error.empty());
    double diff = 0;
    for (size_t i = 0; i < c.probs.size(); ++i)
        diff += std::abs(c.probs[i] - a.probs[i]);
    EXPECT_GT(diff, 0.0);
    EXPECT_FALSE(computePatchingTopK(cache, runs, 0, 9, 0).error.empty());
    EXPECT_FALSE(computePatchingTopK(cache, PatchingRuns{}, 1, 0, 0).error.empty());
}

TEST(PatchingJob, RunnerComputesOffTheGuiThreadBehindTheView) {
    test::ensureApp();
    gwb::views::PatchingView view;
    gwb::views::Selection selection;
    const gwb::views::WorkbenchData data = traced(kClean);
    selection.setExtents(data);
    view.setSelection(&selection);
    view.setData(data);
    PatchingRunner* runner = wirePatching(&view, [] {
        PatchingJobRequest r;
        r.grassmannPath = testModels().grassmann;
        r.baselinePath = testModels().transformer;
        r.device = QStringLiteral("cpu");
        return r;
    });
    QSignalSpy done(runner, &PatchingRunner::finished);
    gwb::views::PatchingInputs in;
    in.corrupt = kCorrupt.toStdString();
    in.answer = "her";
    in.wrong = "the";
    in.site = "resid";
    in.mode = "patch";
    view.setInputs(in);
    view.run();
    EXPECT_TRUE(view.running());
    ASSERT_TRUE(done.wait(60000));
    EXPECT_FALSE(view.running());
    ASSERT_TRUE(view.hasContent()) << view.message().toStdString();
    EXPECT_EQ(view.result().inputs.clean, kClean);
    EXPECT_EQ(view.result().grassmann.rows, 3);
    // A click's top-K comes back into the view's table.
    QSignalSpy topK(runner, &PatchingRunner::topKReady);
    Q_EMIT view.topKRequested(1, 0, 0);
    ASSERT_TRUE(topK.wait(60000));
    EXPECT_EQ(view.topKTable()->rowCount(), 10);
    // Bad input found by the job: a message, and the grids stay.
    in.corrupt = "emma is a truth universally";
    view.setInputs(in);
    view.run();
    ASSERT_TRUE(done.wait(60000));
    EXPECT_TRUE(view.message().contains(QStringLiteral("different lengths"))) << view.message().toStdString();
    EXPECT_EQ(view.result().inputs.corrupt, kCorrupt);
    EXPECT_TRUE(view.hasContent());
}

TEST(QuickAblation, MenuActionsRunOnTheWorkerAndDrawOverTheTokenStrip) {
    test::ensureApp();
    const gwb::views::WorkbenchData data = traced(QStringLiteral("it is a truth universally acknowledged"));
    QMenu menu;
    addAblationActions(&menu, data, 1, /*offsets=*/true, 0);
    QStringList texts;
    for (QAction* a : menu.actions())
        if (!a->isSeparator()) texts << a->text();
    EXPECT_TRUE(texts.contains(QStringLiteral("Ablate offset 3 in layer 1"))) << texts.join(", ").toStdString();
    EXPECT_TRUE(texts.contains(QStringLiteral("Mean-ablate offset 1 in layer 1")));
    EXPECT_FALSE(texts.contains(QStringLiteral("Ablate offset 2 in layer 1"))); // layer 1 has {1, 3}
    QMenu heads;
    addAblationActions(&heads, data, 0, /*offsets=*/false, 1);
    ASSERT_FALSE(heads.actions().isEmpty());
    EXPECT_EQ(heads.actions().front()->text(), QStringLiteral("Ablate head 1 in layer 0"));

    AblationContext c;
    c.grassmannPath = testModels().grassmann;
    c.baselinePath = testModels().transformer;
    c.device = QStringLiteral("cpu");
    c.data = data;
    AblationRequest r;
    QString error;
    ASSERT_TRUE(ablationRequest(heads.actions().front()->data().toString(), c, r, &error)) << error.toStdString();
    EXPECT_EQ(r.intervention.site, gwb::engine::PatchSite::Head);
    EXPECT_EQ(r.intervention.head, 1);
    EXPECT_EQ(r.ids.size(), static_cast<size_t>(data.baseline->length()));
    ModelCache cache;
    const std::vector<double> delta = computeAblation(cache, r, &error);
    ASSERT_EQ(delta.size(), r.ids.size()) << error.toStdString();
    EXPECT_TRUE(std::isnan(delta.back()));
    for (size_t t = 0; t + 1 < delta.size(); ++t)
        EXPECT_TRUE(std::isfinite(delta[t]));
    // An offset the layer lacks is refused with a message.
    AblationRequest wrong = r;
    wrong.path = testModels().grassmann;
    wrong.intervention.site = gwb::engine::PatchSite::Offset;
    wrong.intervention.layer = 1;
    wrong.intervention.offset = 2;
    EXPECT_TRUE(computeAblation(cache, wrong, &error).empty());
    EXPECT_TRUE(error.contains(QStringLiteral("not an offset of layer 1"))) << error.toStdString();

    // Through the runner onto the strip: signed bars and the value in the token's tooltip.
    gwb::views::TokenStrip strip;
    strip.setData(data);
    PatchingRunner runner;
    QObject::connect(&runner, &PatchingRunner::ablationReady, &strip,
                     [&strip](const QString& label, const std::vector<double>& d, const QString&) {
                         showAblationOnStrip(&strip, label, d);
                     });
    QSignalSpy ready(&runner, &PatchingRunner::ablationReady);
    runner.requestAblation(r);
    ASSERT_TRUE(ready.wait(60000));
    ASSERT_EQ(strip.overlay().size(), delta.size());
    EXPECT_TRUE(strip.overlaySigned());
    EXPECT_NEAR(strip.overlay()[1], delta[1], 1e-6);
    EXPECT_TRUE(strip.tokenToolTip(1).contains(QStringLiteral("\u0394 log p"))) << strip.tokenToolTip(1).toStdString();
}

TEST(QuickAblation, RightClickOnThePluckerBarsAblatesAnOffsetOverTheStrip) {
    test::ensureApp();
    const gwb::views::WorkbenchData data = traced(QStringLiteral("it is a truth universally acknowledged"));
    gwb::views::Selection selection;
    selection.setExtents(data);
    selection.setLayer(1);
    auto plucker = gwb::views::createView(QStringLiteral("plucker"));
    plucker->setSelection(&selection);
    plucker->setData(data);
    gwb::views::TokenStrip strip;
    strip.setData(data);
    PatchingRunner runner;
    QString status;
    wireQuickAblations(
        &runner, plucker.get(), nullptr, &strip, &selection,
        [&data] {
            AblationContext c;
            c.grassmannPath = testModels().grassmann;
            c.baselinePath = testModels().transformer;
            c.device = QStringLiteral("cpu");
            c.data = data;
            return c;
        },
        [&status](const QString& s) { status = s; });
    auto* chart = qobject_cast<gwb::views::PluckerView*>(plucker.get())->chart();
    ASSERT_EQ(chart->contextMenuPolicy(), Qt::CustomContextMenu);
    // The menu is modal: pick "Ablate offset 3 in layer 1" once it is up.
    QStringList offered;
    QTimer::singleShot(50, [&offered] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        if (!menu) return;
        for (QAction* a : menu->actions())
            offered << a->text();
        for (QAction* a : menu->actions())
            if (a->text() == QLatin1String("Ablate offset 3 in layer 1")) {
                a->trigger();
                menu->close();
                return;
            }
        menu->close();
    });
    QSignalSpy ready(&runner, &PatchingRunner::ablationReady);
    QContextMenuEvent e(QContextMenuEvent::Mouse, QPoint(20, 20), chart->mapToGlobal(QPoint(20, 20)));
    QApplication::sendEvent(chart, &e);
    EXPECT_TRUE(offered.contains(QStringLiteral("Ablate offset 1 in layer 1"))) << offered.join(", ").toStdString();
    ASSERT_TRUE(ready.wait(60000)) << status.toStdString();
    EXPECT_TRUE(strip.overlaySigned());
    EXPECT_EQ(strip.overlay().size(), static_cast<size_t>(data.grassmann->length()));
    EXPECT_TRUE(status.contains(QStringLiteral("offset 3 of layer 1"))) << status.toStdString();
}

TEST(QuickAblation, RightClickOnAnAttentionThumbnailAblatesTheHead) {
    test::ensureApp();
    const gwb::views::WorkbenchData data = traced(QStringLiteral("it is a truth universally acknowledged"));
    gwb::views::Selection selection;
    selection.setExtents(data);
    selection.setLayer(0);
    selection.setHead(1);
    auto attention = gwb::views::createView(QStringLiteral("attention"));
    attention->setSelection(&selection);
    attention->setData(data);
    gwb::views::TokenStrip strip;
    strip.setData(data);
    PatchingRunner runner;
    QString status;
    wireQuickAblations(
        &runner, nullptr, attention.get(), &strip, &selection,
        [&data] {
            AblationContext c;
            c.grassmannPath = testModels().grassmann;
            c.baselinePath = testModels().transformer;
            c.device = QStringLiteral("cpu");
            c.data = data;
            return c;
        },
        [&status](const QString& s) { status = s; });
    auto* grid = attention->findChild<QWidget*>(QStringLiteral("attentionHeadGrid"));
    ASSERT_TRUE(grid);
    ASSERT_EQ(grid->contextMenuPolicy(), Qt::CustomContextMenu);
    QTimer::singleShot(50, [] {
        auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
        if (!menu) return;
        for (QAction* a : menu->actions())
            if (a->text() == QLatin1String("Ablate head 1 in layer 0")) a->trigger();
        menu->close();
    });
    QSignalSpy ready(&runner, &PatchingRunner::ablationReady);
    QContextMenuEvent e(QContextMenuEvent::Mouse, QPoint(10, 10), grid->mapToGlobal(QPoint(10, 10)));
    QApplication::sendEvent(grid, &e);
    ASSERT_TRUE(ready.wait(60000)) << status.toStdString();
    EXPECT_EQ(strip.overlay().size(), static_cast<size_t>(data.baseline->length()));
    EXPECT_TRUE(status.contains(QStringLiteral("head 1 of layer 0"))) << status.toStdString();
}

TEST(PieceSpelling, TheStripsSpellingNamesTheSamePiece) {
    // The strip draws the word-start marker U+2581 ('▁night'), which reads as '_night'. Typed
    // either way, as an answer, a wrong piece or a saliency target, it is the one piece meant;
    // a word that is several pieces is refused naming them (and the piece meant, when there is one).
    const gwb::engine::Model m =
        gwb::engine::Model::load(GWB_SOURCE_DIR "/resources/models/grassmann-austen.gwb", "cpu");
    const int64_t night = gwb::engine::pieceId(m, "\u2581night", "the answer piece");
    EXPECT_EQ(m.tokenizer()->pieceText(static_cast<int32_t>(night)), "\u2581night");
    EXPECT_EQ(gwb::engine::pieceId(m, "_night", "the answer piece"), night);
    EXPECT_EQ(gwb::engine::pieceId(m, "night", "the answer piece"), night);
    try {
        gwb::engine::pieceId(m, "_nightingales", "the target");
        FAIL() << "a word of several pieces was accepted";
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("'_nightingales' is not in the vocabulary"), std::string::npos) << what;
        EXPECT_NE(what.find("pieces ("), std::string::npos) << what;
    }
}

TEST(PathsJob, BothModelsSendersByKindAndTheSameRefusalsAsPatching) {
    // The Paths view's runs share the Patching view's two-model scaffolding (runCausalModels): the
    // same refusals, a missing sender kind only its model's, cancel keeping nothing.
    ModelCache cache;
    PathsJobRequest r;
    r.grassmannPath = testModels().grassmann;
    r.baselinePath = testModels().transformer;
    r.device = QStringLiteral("cpu");
    r.inputs.clean = kClean.toStdString();
    r.inputs.corrupt = kCorrupt.toStdString();
    r.inputs.answer = "her";
    r.inputs.wrong = "the";
    r.inputs.senders = "offset/head";
    PathsRuns runs;
    gwb::views::PathsData d = computePaths(cache, r, {}, &runs);
    ASSERT_TRUE(d.error.empty()) << d.error;
    ASSERT_TRUE(d.grassmann.error.empty() && d.transformer.error.empty());
    ASSERT_FALSE(d.grassmann.senders.empty());
    ASSERT_FALSE(d.transformer.senders.empty());
    EXPECT_EQ(d.grassmann.senders[0].rfind("offset.", 0), 0u) << stdToQ(d.grassmann.senders).join(' ').toStdString();
    EXPECT_EQ(d.transformer.senders[0].rfind("head.", 0), 0u);
    EXPECT_EQ(d.grassmann.receivers.at(0), "logits");
    EXPECT_EQ(d.grassmann.metric.size(),
              static_cast<size_t>(d.grassmann.senders.size() * d.grassmann.receivers.size()));
    EXPECT_EQ(d.answerPiece.empty(), false);
    EXPECT_TRUE(runs.requests[0] && runs.requests[1]);
    // A clicked cell's top pieces from the kept runs.
    const gwb::views::PatchingTopK k =
        computePathsTopK(cache, runs, 1, QString::fromStdString(d.transformer.senders[0]),
                         QString::fromStdString(d.transformer.receivers.at(0)), 3);
    EXPECT_TRUE(k.error.empty()) << k.error;
    EXPECT_EQ(k.pieces.size(), 3);
    // Gate senders: only the Grassmann model has them.
    r.inputs.senders = "gate";
    d = computePaths(cache, r);
    EXPECT_TRUE(d.error.empty()) << d.error;
    EXPECT_TRUE(QString::fromStdString(d.transformer.error).contains(QStringLiteral("Grassmann sender")))
        << d.transformer.error;
    EXPECT_TRUE(d.grassmann.error.empty());
    // Bad input refuses the whole run, naming the model.
    r.inputs.answer = "zebra";
    d = computePaths(cache, r);
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("Grassmann model:"))) << d.error;
    EXPECT_FALSE(d.hasGrid());
    // Cancel.
    r.inputs.answer = "her";
    d = computePaths(
        cache, r, [](double) { return false; }, &runs);
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("Cancelled"))) << d.error;
    EXPECT_FALSE(d.hasGrid());
    EXPECT_FALSE(runs.requests[0] || runs.requests[1]);
}
