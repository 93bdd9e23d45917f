// Long prompts (issue 51) in the offscreen window: a 4,096-token Run with the Gates view in front
// traces without the logit lens and reports progress; Cancel stops a long run and keeps what was
// shown; the Lens view, once shown, gets its lens computed off the GUI thread, equal to the lens a
// trace computes at once; a selection at token 4,000 works as one at token 4. Every wait is on a
// condition (a signal), never on time.

#include "gui/main_window.h"
#include "gui/prompt_limit.h"
#include "gui/trace_controller.h"

#include "app_test_util.h"
#include "test_models.h"

#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/trace_memory.h"
#include "gwb/engine/tracer.h"
#include "gwb/views/view.h"

#include <QDir>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include <memory>

using namespace gwb::app;
using gwb::app::test::ensureApp;
using gwb::app::test::promptOfTokens;

namespace {

constexpr int kWaitMs = 600000; ///< a ceiling for slow shared machines, not a timing
constexpr int kTokens = 4096;

/// A Grassmann model and a Transformer with a 4,096-token context (small widths: the test is
/// about the window at that length, not about speed), the test vocabulary.
struct LongModels {
    QTemporaryDir dir;
    QString grassmann, transformer;
};

const LongModels& longModels() {
    static const std::unique_ptr<LongModels> models = [] {
        auto m = std::make_unique<LongModels>();
        std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
        for (const char* w : {"it", "is", "a", "truth", "universally", "acknowledged", "that", "single", "man"})
            vocab += std::string(w) + "\n";
        for (char c = 'a'; c <= 'z'; ++c)
            vocab += std::string(1, c) + "\n##" + std::string(1, c) + "\n";
        const auto tok = gwb::engine::makeWordPieceTokenizer(vocab);
        for (auto kind : {gwb::engine::ModelKind::Grassmann, gwb::engine::ModelKind::Transformer}) {
            gwb::engine::ModelConfig c;
            c.kind = kind;
            c.name = kind == gwb::engine::ModelKind::Grassmann ? "long-grassmann" : "long-transformer";
            c.vocabSize = tok->vocabSize();
            c.dModel = 32;
            c.reduced = 6;
            c.nLayers = 2;
            c.dFF = 64;
            c.maxLen = kTokens;
            c.nHeads = 2;
            c.dropout = 0;
            if (kind == gwb::engine::ModelKind::Grassmann) c.layerOffsets = {{1, 2, 4}, {1, 8}};
            QString& path = kind == gwb::engine::ModelKind::Grassmann ? m->grassmann : m->transformer;
            path = QDir(m->dir.path()).filePath(QString::fromUtf8(c.name.c_str()) + QStringLiteral(".gwb"));
            gwb::engine::Model::init(c, 7, tok, "cpu").save(path.toStdString());
        }
        return m;
    }();
    return *models;
}

std::unique_ptr<MainWindow> makeWindow() {
    ensureApp();
    MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    auto w = std::make_unique<MainWindow>(o);
    w->setModelPaths(longModels().grassmann, longModels().transformer);
    w->resize(1280, 720);
    w->show();
    return w;
}

bool onScreen(const QWidget* v) {
    return v && v->isVisible() && !v->visibleRegion().isEmpty();
}

} // namespace

TEST(LongPrompt, A4096TokenRunShowsTheGatesAndComputesTheLensWhenItsViewIsShown) {
    auto w = makeWindow();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    w->showView(QStringLiteral("gate"));
    ASSERT_TRUE(QTest::qWaitFor([&] { return onScreen(w->view(QStringLiteral("gate"))); }, kWaitMs));
    ASSERT_FALSE(w->lensViewShown());
    w->setPrompt(promptOfTokens(kTokens));

    QSignalSpy finished(w.get(), &MainWindow::runFinished);
    QSignalSpy failed(w.get(), &MainWindow::runFailed);
    w->run();
    ASSERT_TRUE(finished.wait(kWaitMs)) << w->statusText().toStdString();
    ASSERT_TRUE(failed.isEmpty());
    const gwb::views::WorkbenchData data = w->workbenchData();
    ASSERT_TRUE(data.grassmann && data.baseline);
    EXPECT_EQ(data.grassmann->length(), kTokens);
    EXPECT_EQ(data.grassmann->droppedTokens, 0);
    EXPECT_EQ(data.baseline->length(), kTokens);
    // No lens for a Run with the Gates view in front: N + 1 passes through the head not made.
    EXPECT_FALSE(data.grassmann->lens);
    EXPECT_FALSE(data.lensOf(data.grassmann));
    EXPECT_TRUE(w->view(QStringLiteral("gate"))->hasContent());

    // A selection at token 4,000 as at token 4: the window and its views follow it.
    w->selection()->setToken(4000);
    EXPECT_EQ(w->selection()->token(), 4000);
    w->selection()->setToken(4);
    EXPECT_EQ(w->selection()->token(), 4);
    w->selection()->setToken(4000);
    EXPECT_EQ(w->selection()->token(), 4000);

    // The Lens view shown: its lens is computed now, off the GUI thread, for both traces.
    QSignalSpy lensDone(w.get(), &MainWindow::lensComputed);
    w->showView(QStringLiteral("lens"));
    ASSERT_TRUE(lensDone.wait(kWaitMs)) << w->statusText().toStdString();
    const gwb::views::WorkbenchData withLens = w->workbenchData();
    EXPECT_EQ(withLens.grassmann, data.grassmann) << "the same traces: only the lens was added";
    ASSERT_TRUE(withLens.hasLenses());
    EXPECT_FALSE(withLens.lensPending);
    EXPECT_TRUE(w->view(QStringLiteral("lens"))->hasContent());
    EXPECT_EQ(w->selection()->token(), 4000);

    // Equal to the lens a trace computes at once.
    const gwb::engine::Model model = gwb::engine::Model::load(longModels().grassmann.toStdString(), "cpu");
    std::vector<int32_t> ids;
    for (const auto& t : data.grassmann->tokens)
        ids.push_back(t.id);
    gwb::engine::TraceOptions eager;
    eager.lensTopK = MainWindow::kLensTopK;
    const gwb::engine::TracePtr once = gwb::engine::traceIds(model, ids, eager);
    const gwb::engine::LensPtr lens = withLens.lensOf(withLens.grassmann);
    ASSERT_TRUE(once->lens && lens);
    EXPECT_EQ(lens->topIds.data, once->lens->topIds.data);
    EXPECT_EQ(lens->topLogProbs.data, once->lens->topLogProbs.data);
    EXPECT_EQ(lens->nextRank.data, once->lens->nextRank.data);
}

TEST(LongPrompt, ProgressIsReportedAndCancelStopsA4096TokenRun) {
    auto w = makeWindow();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    w->showView(QStringLiteral("gate"));
    w->setPrompt(QStringLiteral("it is a truth"));
    QSignalSpy finished(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(finished.wait(kWaitMs));
    const auto before = w->workbenchData().grassmann;

    // Cancel as soon as the window has shown progress inside the run (the worker's fraction on
    // the progress bar): the run stops and the earlier results stay.
    QSignalSpy cancelled(w.get(), &MainWindow::runCancelled);
    double shown = -1;
    QString stage;
    QObject::connect(w->controller(), &TraceController::progress, w.get(),
                     [&](quint64, const QString& s, double fraction) {
                         if (shown >= 0 || fraction <= 0) return;
                         shown = fraction;
                         stage = s;
                         w->cancelRun();
                     });
    finished.clear();
    w->setPrompt(promptOfTokens(kTokens));
    w->run();
    ASSERT_TRUE(QTest::qWaitFor([&] { return !cancelled.isEmpty() || !finished.isEmpty(); }, kWaitMs));
    if (!finished.isEmpty()) GTEST_SKIP() << "the run finished before the first progress report";
    EXPECT_GT(shown, 0.0);
    EXPECT_LT(shown, 1.0);
    EXPECT_FALSE(stage.isEmpty());
    EXPECT_FALSE(w->isRunning());
    EXPECT_EQ(w->workbenchData().grassmann, before);
}

TEST(LongPrompt, TheLongestPromptSettingCutsARunAndShowsItsCost) {
    auto w = makeWindow();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    // The cost of the default limit is shown once the models are known (their probes).
    ASSERT_TRUE(QTest::qWaitFor([&] { return !w->promptCostText().isEmpty(); }, kWaitMs));
    EXPECT_EQ(w->promptLimit(), 4096);
    EXPECT_TRUE(w->promptCostText().contains(QStringLiteral("MB"))) << w->promptCostText().toStdString();

    // The memory shown is the engine's estimate for both models at that length.
    const gwb::engine::Model g = gwb::engine::Model::load(longModels().grassmann.toStdString(), "cpu");
    const gwb::engine::Model b = gwb::engine::Model::load(longModels().transformer.toStdString(), "cpu");
    const int64_t bytes =
        gwb::engine::traceMemory(g.config(), 1000).total() + gwb::engine::traceMemory(b.config(), 1000).total();
    w->setPromptLimit(1000);
    EXPECT_TRUE(w->promptCostText().contains(byteText(bytes))) << w->promptCostText().toStdString();

    w->showView(QStringLiteral("gate"));
    w->setPrompt(promptOfTokens(3000));
    QSignalSpy finished(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(finished.wait(kWaitMs)) << w->statusText().toStdString();
    const auto& data = w->workbenchData();
    ASSERT_TRUE(data.grassmann && data.baseline);
    EXPECT_EQ(data.grassmann->length(), 1000);
    EXPECT_EQ(data.grassmann->droppedTokens, 2000);
    EXPECT_EQ(data.baseline->length(), 1000);
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("the first 1000 were traced, as the Longest prompt setting")))
        << w->noticeText().toStdString();
    // After a Run the cost adds the time at its rate.
    EXPECT_TRUE(w->promptCostText().contains(QStringLiteral(" s"))) << w->promptCostText().toStdString();

    // The model's context stays the hard limit, and a notice says that one cut it.
    w->setPromptLimit(100000);
    w->setPrompt(promptOfTokens(kTokens + 50));
    finished.clear();
    w->run();
    ASSERT_TRUE(finished.wait(kWaitMs)) << w->statusText().toStdString();
    EXPECT_EQ(w->workbenchData().grassmann->length(), kTokens);
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("longer than the model's context of 4096 tokens")))
        << w->noticeText().toStdString();
}
