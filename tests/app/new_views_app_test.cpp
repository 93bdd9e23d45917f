// The views researchers expect next, through the real application: first start with a sample
// prompt, the selection after a run, saliency computed off the GUI thread, and `gwb figure` for
// the read-out, lens and saliency views, whose exported numbers equal `gwb trace --analysis`.

#include "gui/first_start.h"
#include "gui/main_window.h"

#include "app_test_util.h"
#include "test_models.h"

#include "gwb/engine/model_store.h"
#include "gwb/engine/npy.h"
#include "gui/saliency_job.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/selection_policy.h"
#include "gwb/views/token_strip.h"

#include <QFileInfo>
#include <QLabel>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include "gwb_process.h"

using gwb::app::test::GwbResult;
using gwb::app::test::runGwb;
using gwb::app::test::show;

#include <cmath>

using namespace gwb::app;
using gwb::app::test::ensureApp;
using gwb::app::test::testModels;

namespace {

constexpr int kWaitMs = 60000;
const QString kPrompt = QStringLiteral("it is a truth universally acknowledged that a single man");

std::unique_ptr<MainWindow> makeWindow() {
    ensureApp();
    MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    auto w = std::make_unique<MainWindow>(o);
    w->setModelPaths(testModels().grassmann, testModels().transformer);
    return w;
}

QStringList models() {
    return {QStringLiteral("--model"), testModels().grassmann,      QStringLiteral("--baseline"),
            testModels().transformer,  QStringLiteral("--threads"), QStringLiteral("1")};
}

std::vector<float> npyFile(const QString& path) {
    return gwb::engine::parseNpy(gwb::engine::readBinaryFile(path.toStdString())).values<float>();
}

} // namespace

TEST(FirstStart, RunsTheSampleAndSelectsAFullyDefinedToken) {
    auto w = makeWindow();
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    ASSERT_TRUE(w->startWithSample());
    EXPECT_EQ(w->prompt(), samplePrompt());
    ASSERT_TRUE(done.wait(kWaitMs)) << w->statusText().toStdString();
    const auto& d = w->workbenchData();
    ASSERT_TRUE(d.grassmann && d.baseline);
    const int t = w->selection()->token();
    EXPECT_EQ(t, gwb::views::defaultToken(d));
    EXPECT_TRUE(gwb::views::tokenFullyDefined(d, t)) << t;
    EXPECT_GT(t, 0);
    // Not again once there is a prompt.
    EXPECT_FALSE(w->startWithSample());
}

TEST(FirstStart, SelectionAfterRunKeepsAValidChoiceAndMovesAnInvalidOne) {
    auto w = makeWindow();
    w->setPrompt(kPrompt);
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    const int first = w->selection()->token();
    EXPECT_TRUE(gwb::views::tokenFullyDefined(w->workbenchData(), first));
    w->selection()->setToken(first + 1);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_EQ(w->selection()->token(), first + 1); // the user's valid choice stays
    w->selection()->setToken(0);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_EQ(w->selection()->token(), first); // token 0 has no valid offset: moved
}

TEST(SaliencyInWindow, ComputedOffTheGuiThreadForTheSelectedToken) {
    auto w = makeWindow();
    w->setPrompt(kPrompt);
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    auto* sv = qobject_cast<gwb::views::SaliencyView*>(w->view(QStringLiteral("saliency")));
    ASSERT_TRUE(sv);
    const int t = w->selection()->token();
    ASSERT_TRUE(
        QTest::qWaitFor([&] { return sv->saliency().token == t && !sv->saliency().grassmann.empty(); }, kWaitMs));
    const auto& s = sv->saliency();
    EXPECT_TRUE(s.grassmannError.empty()) << s.grassmannError;
    ASSERT_EQ(static_cast<int64_t>(s.grassmann.size()), w->workbenchData().grassmann->length());
    double past = 0;
    for (size_t j = 0; j < s.grassmann.size(); ++j) {
        if (static_cast<int>(j) > t) {
            EXPECT_EQ(s.grassmann[j], 0.0f) << j; // causal: no gradient from later tokens
        } else {
            past += std::abs(s.grassmann[j]);
        }
    }
    EXPECT_GT(past, 0);
    EXPECT_FALSE(sv->dataTables().empty());
    // Drawn over the token strip too: the Grassmann shares |s_j| / sum |s|.
    auto* strip = w->findChild<gwb::views::TokenStrip*>(QStringLiteral("tokenStrip"));
    ASSERT_TRUE(strip);
    EXPECT_EQ(strip->overlay(), gwb::views::saliencyShares(s.grassmann, t));
    // A target that is not one vocabulary piece is explained, not crashed on.
    sv->setTarget(QStringLiteral("qqqzzzxxyy unknownword"));
    ASSERT_TRUE(QTest::qWaitFor(
        [&] {
            return QString::fromStdString(sv->saliency().target) == sv->target() &&
                   !sv->saliency().grassmannError.empty();
        },
        kWaitMs));
}

TEST(SaliencyInWindow, ArrivesWithTheRunForTheTokenSelectedAfterIt) {
    // The run's job computes the Saliency view's result for the token the window selects after
    // it, so the view has it when the run finishes and asks the runner for nothing more.
    auto w = makeWindow();
    w->setPrompt(kPrompt);
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    auto* sv = qobject_cast<gwb::views::SaliencyView*>(w->view(QStringLiteral("saliency")));
    ASSERT_TRUE(sv);
    auto* runner = sv->findChild<gwb::app::SaliencyRunner*>();
    ASSERT_TRUE(runner);
    for (int run = 0; run < 2; ++run) {
        if (run == 1) { // a valid token the user chose; the view asks for its saliency at once
            const int chosen = w->selection()->token() + 2;
            w->selection()->setToken(chosen);
            ASSERT_TRUE(QTest::qWaitFor([&] { return sv->saliency().token == chosen; }, kWaitMs));
        }
        QSignalSpy ready(runner, &gwb::app::SaliencyRunner::ready);
        w->run();
        ASSERT_TRUE(done.wait(kWaitMs));
        const int t = w->selection()->token();
        ASSERT_EQ(ready.count(), 1) << "delivered with the run";
        EXPECT_EQ(sv->saliency().token, t);
        ASSERT_EQ(static_cast<int64_t>(sv->saliency().grassmann.size()), w->workbenchData().grassmann->length());
        ASSERT_EQ(static_cast<int64_t>(sv->saliency().baseline.size()), w->workbenchData().baseline->length());
        EXPECT_NE(sv->saliency().grassmann[static_cast<size_t>(t)], 0.0f);
        QTest::qWait(300);
        EXPECT_EQ(ready.count(), 1) << "the view asked for the saliency again";
        auto* strip = w->findChild<gwb::views::TokenStrip*>(QStringLiteral("tokenStrip"));
        ASSERT_TRUE(strip);
        EXPECT_EQ(strip->overlay(), gwb::views::saliencyShares(sv->saliency().grassmann, t));
    }
}

TEST(SaliencyInWindow, ATypedTargetDoesNotOutliveItsTokens) {
    // A target typed for one run stayed for later ones: after Continue, the strip's bars showed the
    // saliency of an old target at the new token (issue 41). New tokens now clear it, and the view
    // says which target went and why; the same prompt run again keeps it.
    auto w = makeWindow();
    w->setPrompt(kPrompt);
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    auto* sv = qobject_cast<gwb::views::SaliencyView*>(w->view(QStringLiteral("saliency")));
    auto* strip = w->findChild<gwb::views::TokenStrip*>(QStringLiteral("tokenStrip"));
    ASSERT_TRUE(sv && strip);
    const QString piece = QStringLiteral("\u2581the");
    sv->setTarget(piece);
    ASSERT_TRUE(QTest::qWaitFor([&] { return QString::fromStdString(sv->saliency().target) == piece; }, kWaitMs));
    // Run again on the same text: the target still explains these tokens and stays.
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_EQ(sv->target(), piece);
    EXPECT_TRUE(sv->targetNote().isEmpty());
    // Continue: new tokens, the actual next token again, and the view names the cleared target.
    w->continueRun(4, false);
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_TRUE(sv->target().isEmpty());
    EXPECT_TRUE(sv->targetNote().contains(piece)) << sv->targetNote().toStdString();
    const int t = w->selection()->token();
    ASSERT_TRUE(QTest::qWaitFor(
        [&] { return sv->saliency().token == t && sv->saliency().target.empty() && !strip->overlay().empty(); },
        kWaitMs));
    EXPECT_TRUE(strip->overlayLabel().contains(QStringLiteral("the next token")))
        << strip->overlayLabel().toStdString();
    auto* status = sv->findChild<QLabel*>(QStringLiteral("saliencyStatus"));
    ASSERT_TRUE(status);
    EXPECT_TRUE(status->text().contains(QStringLiteral("cleared"))) << status->text().toStdString();
    // Typing a new target removes the note; a new prompt clears that one too.
    sv->setTarget(piece);
    EXPECT_TRUE(sv->targetNote().isEmpty());
    w->setPrompt(QStringLiteral("She was the youngest of the two daughters"));
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_TRUE(sv->target().isEmpty());
    EXPECT_TRUE(sv->targetNote().contains(QStringLiteral("previous prompt"))) << sv->targetNote().toStdString();
}

TEST(NewViewFigures, ReadoutDataEqualsTheTraceNpz) {
    QTemporaryDir dir;
    const GwbResult tr =
        runGwb({QStringLiteral("trace"), QStringLiteral("--model"), testModels().grassmann, QStringLiteral("--prompt"),
                kPrompt, QStringLiteral("--analysis"), QStringLiteral("--threads"), QStringLiteral("1"),
                QStringLiteral("--out"), dir.filePath(QStringLiteral("t.npz"))});
    ASSERT_EQ(tr.code, 0) << tr.err.toStdString();
    const GwbResult fig =
        runGwb(QStringList{QStringLiteral("figure")} + models() +
               QStringList{QStringLiteral("--view"), QStringLiteral("readout"), QStringLiteral("--prompt"), kPrompt,
                           QStringLiteral("--layer"), QStringLiteral("1"), QStringLiteral("--token"),
                           QStringLiteral("5"), QStringLiteral("--out"), dir.filePath(QStringLiteral("r.png")),
                           QStringLiteral("--data"), dir.filePath(QStringLiteral("r"))});
    ASSERT_EQ(fig.code, 0) << fig.err.toStdString();
    const auto members =
        gwb::engine::readZipStored(gwb::engine::readBinaryFile(dir.filePath(QStringLiteral("t.npz")).toStdString()));
    ASSERT_TRUE(members.count("l1_readout_residual.npy"));
    const auto res = gwb::engine::parseNpy(members.at("l1_readout_residual.npy")).values<float>();
    const auto pla = gwb::engine::parseNpy(members.at("l1_readout_planarity.npy")).values<float>();
    const auto conNpy = gwb::engine::parseNpy(members.at("l1_readout_contribution.npy"));
    const auto con = conNpy.values<float>();
    ASSERT_TRUE(members.count("l1_readout_spectrum.npy"));
    ASSERT_TRUE(members.count("l1_readout_angles.npy"));
    const std::vector<float> table = npyFile(dir.filePath(QStringLiteral("r_readout_layer1.npy")));
    const size_t d = res.size();
    ASSERT_EQ(table.size(), d * 5);
    ASSERT_EQ(conNpy.shape.size(), 2u);
    for (size_t c = 0; c < d; ++c) {
        EXPECT_NEAR(table[c * 5 + 0], res[c], 1e-5) << c;
        EXPECT_NEAR(table[c * 5 + 1], pla[c], 1e-5) << c;
        EXPECT_NEAR(table[c * 5 + 2], con[5 * d + c], 1e-4) << c;
    }
}

TEST(NewViewFigures, LensAndSaliencyFiguresAndData) {
    QTemporaryDir dir;
    for (const char* view : {"lens", "saliency"}) {
        const QString id = QString::fromLatin1(view);
        const GwbResult r =
            runGwb(QStringList{QStringLiteral("figure")} + models() +
                   QStringList{QStringLiteral("--view"), id, QStringLiteral("--prompt"), kPrompt,
                               QStringLiteral("--dpi"), QStringLiteral("100"), QStringLiteral("--out"),
                               dir.filePath(id + QStringLiteral(".png")), QStringLiteral("--data"), dir.filePath(id)});
        ASSERT_EQ(r.code, 0) << view << ": " << r.err.toStdString();
        EXPECT_TRUE(QFileInfo::exists(dir.filePath(id + QStringLiteral(".png"))));
        EXPECT_TRUE(QFileInfo::exists(dir.filePath(id + QStringLiteral(".json"))));
    }
    EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("lens_lens_next_rank_grassmann.npy"))));
    // --target only for saliency; a bad target is reported.
    const GwbResult wrong =
        runGwb(QStringList{QStringLiteral("figure")} + models() +
               QStringList{QStringLiteral("--view"), QStringLiteral("gate"), QStringLiteral("--prompt"), kPrompt,
                           QStringLiteral("--target"), QStringLiteral("the"), QStringLiteral("--out"),
                           dir.filePath(QStringLiteral("g.png"))});
    EXPECT_NE(wrong.code, 0);
    EXPECT_TRUE(wrong.err.contains(QStringLiteral("--target"))) << wrong.err.toStdString();
}

TEST(ModelStoreInWindow, EachModelLoadsOnceAcrossRunsOfTwoKinds) {
    // The trace controller and the Saliency view's runner share the process's model store: a Run
    // loads the two models, and a saliency request afterwards (another runner, another kind of
    // run) loads nothing (each runner used to keep its own cache and load both models again).
    // Counted from before the window exists: setModelPaths probes (loads) both models in the
    // background, and whether the probes or the Run load them first depends on timing.
    const int64_t before = gwb::engine::ModelStore::process()->loads();
    auto w = makeWindow();
    w->setPrompt(kPrompt);
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_EQ(gwb::engine::ModelStore::process()->loads(), before + 2);
    auto* sv = qobject_cast<gwb::views::SaliencyView*>(w->view(QStringLiteral("saliency")));
    ASSERT_TRUE(sv);
    const int chosen = w->selection()->token() > 2 ? w->selection()->token() - 2 : w->selection()->token() + 2;
    w->selection()->setToken(chosen);
    ASSERT_TRUE(QTest::qWaitFor([&] { return sv->saliency().token == chosen; }, kWaitMs));
    EXPECT_FALSE(sv->saliency().grassmann.empty()) << sv->saliency().grassmannError;
    EXPECT_EQ(gwb::engine::ModelStore::process()->loads(), before + 2);
    // Another Run loads nothing either.
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    EXPECT_EQ(gwb::engine::ModelStore::process()->loads(), before + 2);
}
