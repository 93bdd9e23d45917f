// Continue: the incremental generator extends the prompt before tracing, in the job (exact
// token accounting, greedy equals the engine's own greedy generation, cancel), in the window
// (button, marked text, marked tokens) and in `gwb figure --continue N`.

#include "common/bundled_models.h"
#include "gui/main_window.h"
#include "gui/prompt_panel.h"
#include "runs/trace_job.h"

#include "../views/svg_text.h"
#include "app_test_util.h"
#include "gwb_process.h"
#include "test_models.h"

#include "gwb/engine/generate.h"
#include "gwb/engine/model.h"
#include "gwb/views/token_strip.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

using namespace gwb::app;
using gwb::app::test::ensureApp;
using gwb::app::test::testModels;

namespace {

const QString kPrompt = QStringLiteral("it is a truth universally acknowledged");

TraceRequest continueRequest(int tokens) {
    TraceRequest r;
    r.grassmannPath = testModels().grassmann;
    r.baselinePath = testModels().transformer;
    r.prompt = kPrompt;
    r.threads = 1;
    r.continuation.maxNew = tokens;
    return r;
}

} // namespace

TEST(Continue, JobAppendsTheGreedyContinuationAndTracesIt) {
    ModelCache cache;
    TraceJobState state;
    const TraceOutcome out = runTraceJob(continueRequest(5), cache, state);
    ASSERT_EQ(out.status, TraceOutcome::Status::Ok) << out.message.toStdString();
    EXPECT_EQ(out.generated, 5);
    EXPECT_EQ(out.continuationFrom, kPrompt.size());
    ASSERT_TRUE(out.prompt.startsWith(kPrompt));
    EXPECT_GT(out.prompt.size(), kPrompt.size());
    EXPECT_EQ(out.data.continuationFrom, static_cast<int64_t>(kPrompt.toUtf8().size()));

    // The appended text is the engine's greedy continuation of the same ids, decoded.
    const gwb::engine::Model m = cache.get(testModels().grassmann, QStringLiteral("auto"));
    const auto tok = m.tokenizer();
    const std::vector<int32_t> ids = tok->encodeIds(kPrompt.toStdString());
    gwb::engine::GenerateOptions o;
    o.maxNew = 5;
    o.greedy = true;
    const gwb::engine::GenerateResult g = gwb::engine::generate(m, ids, o);
    EXPECT_EQ(out.prompt.toStdString(), kPrompt.toStdString() + tok->decode(g.ids).substr(tok->decode(ids).size()));

    // Both traces cover prompt + continuation; the generated tokens are the ones after the prompt.
    ASSERT_TRUE(out.data.grassmann && out.data.baseline);
    const int64_t T = out.data.tokenCount();
    EXPECT_EQ(out.data.baseline->length(), T);
    const int64_t typed = static_cast<int64_t>(ids.size());
    EXPECT_EQ(out.data.firstGenerated(), typed);
    EXPECT_EQ(out.data.generatedCount(), T - typed);
    EXPECT_GE(T - typed, 1);
    for (int64_t t = 0; t < typed; ++t)
        EXPECT_FALSE(out.data.isGenerated(t)) << t;
    // Re-encoding the decoded text gives the generated ids back (WordPiece, whole words).
    std::vector<int32_t> traced;
    for (const auto& tk : out.data.grassmann->tokens)
        traced.push_back(tk.id);
    EXPECT_EQ(traced, g.ids);
}

TEST(Continue, SampledContinuationsFollowTheSeed) {
    ModelCache cache;
    TraceJobState s1, s2, s3;
    TraceRequest r = continueRequest(8);
    r.continuation.greedy = false;
    r.continuation.seed = 11;
    const TraceOutcome a = runTraceJob(r, cache, s1);
    const TraceOutcome b = runTraceJob(r, cache, s2);
    ASSERT_EQ(a.status, TraceOutcome::Status::Ok) << a.message.toStdString();
    EXPECT_EQ(a.prompt, b.prompt);
    // Some seed gives another text (a random 2-layer model is close to uniform over 40 pieces).
    bool differs = false;
    for (quint64 seed = 12; seed < 20 && !differs; ++seed) {
        r.continuation.seed = seed;
        differs = runTraceJob(r, cache, s3).prompt != a.prompt;
    }
    EXPECT_TRUE(differs);
}

TEST(Continue, StopsAtTheContextAndSaysSo) {
    ModelCache cache;
    TraceJobState state;
    const TraceOutcome out = runTraceJob(continueRequest(500), cache, state); // context is 24
    ASSERT_EQ(out.status, TraceOutcome::Status::Ok) << out.message.toStdString();
    EXPECT_LT(out.generated, 24);
    EXPECT_TRUE(out.notices.join(QLatin1Char(' ')).contains(QStringLiteral("context length of 24")))
        << out.notices.join(QLatin1Char('\n')).toStdString();

    // A prompt that already fills the context cannot be continued: a message, not a crash.
    TraceRequest full = continueRequest(4);
    full.prompt = gwb::app::test::promptOfTokens(40);
    TraceJobState s2;
    const TraceOutcome refused = runTraceJob(full, cache, s2);
    EXPECT_EQ(refused.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(refused.message.contains(QStringLiteral("fills the model's context"))) << refused.message.toStdString();
}

TEST(Continue, CancelStopsTheGeneration) {
    ModelCache cache;
    TraceJobState state;
    state.cancel.store(true);
    const TraceOutcome out = runTraceJob(continueRequest(5), cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Cancelled);
    EXPECT_TRUE(out.prompt.isEmpty());
}

TEST(Continue, WindowButtonAppendsMarkedTextAndTokens) {
    ensureApp();
    MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    MainWindow w(o);
    w.setModelPaths(testModels().grassmann, testModels().transformer);
    w.setPrompt(kPrompt);
    auto* panel = w.findChild<PromptPanel*>();
    ASSERT_TRUE(panel);
    panel->continueCount()->setValue(3);
    QSignalSpy done(&w, &MainWindow::runFinished);
    QSignalSpy failed(&w, &MainWindow::runFailed);
    panel->continueButton()->click();
    ASSERT_TRUE(done.wait(60000)) << w.statusText().toStdString() << " / " << panel->notice().toStdString()
                                  << " / failed: " << failed.count();
    EXPECT_TRUE(w.prompt().startsWith(kPrompt));
    EXPECT_GT(w.prompt().size(), kPrompt.size());
    EXPECT_EQ(panel->continuationFrom(), kPrompt.size());
    EXPECT_TRUE(w.statusText().startsWith(QStringLiteral("Generated 3 tokens"))) << w.statusText().toStdString();
    const auto& d = w.workbenchData();
    EXPECT_GE(d.generatedCount(), 1);
    auto* strip = w.findChild<gwb::views::TokenStrip*>();
    ASSERT_TRUE(strip);
    const int first = static_cast<int>(d.firstGenerated());
    EXPECT_TRUE(strip->tokenToolTip(first).contains(QStringLiteral("generated"))) << first;
    EXPECT_FALSE(strip->tokenToolTip(0).contains(QStringLiteral("generated")));

    // Continue again extends the extended prompt; the mark covers both continuations, and the
    // first batch is traced as the ids that were generated (not encoded again from the text).
    const QString once = w.prompt();
    std::vector<int32_t> firstIds;
    for (const auto& tk : w.workbenchData().grassmann->tokens)
        firstIds.push_back(tk.id);
    const int64_t typed = w.workbenchData().firstGenerated();
    panel->continueButton()->click();
    ASSERT_TRUE(done.wait(60000));
    EXPECT_TRUE(w.prompt().startsWith(once));
    EXPECT_EQ(panel->continuationFrom(), kPrompt.size());
    const auto& d2 = w.workbenchData();
    ASSERT_EQ(d2.tokenCount(), static_cast<int64_t>(firstIds.size()) + 3);
    for (size_t i = 0; i < firstIds.size(); ++i)
        EXPECT_EQ(d2.grassmann->tokens[i].id, firstIds[i]) << i;
    // The counts agree: status bar, strip legend (generated tokens) and the trace.
    EXPECT_EQ(d2.firstGenerated(), typed);
    EXPECT_EQ(d2.generatedCount(), d2.tokenCount() - typed);
    EXPECT_TRUE(w.statusText().startsWith(QStringLiteral("Generated 3 tokens"))) << w.statusText().toStdString();
    EXPECT_TRUE(w.statusText().contains(QStringLiteral("Traced %1 tokens").arg(d2.tokenCount())))
        << w.statusText().toStdString();

    // Typing removes the mark; a plain Run then traces it as typed text.
    panel->editor()->appendPlainText(QStringLiteral(" the"));
    EXPECT_EQ(panel->continuationFrom(), -1);
    w.run();
    ASSERT_TRUE(done.wait(60000));
    EXPECT_EQ(w.workbenchData().generatedCount(), 0);
}

TEST(Continue, FigureCommandContinuesAndMarksTheExport) {
    QTemporaryDir dir;
    const gwb::app::test::GwbResult r = gwb::app::test::runGwb(
        {QStringLiteral("figure"), QStringLiteral("--view"), QStringLiteral("lens"), QStringLiteral("--model"),
         testModels().grassmann, QStringLiteral("--baseline"), testModels().transformer, QStringLiteral("--prompt"),
         kPrompt, QStringLiteral("--continue"), QStringLiteral("4"), QStringLiteral("--threads"), QStringLiteral("1"),
         QStringLiteral("--out"), dir.filePath(QStringLiteral("lens.svg")), QStringLiteral("--data"),
         dir.filePath(QStringLiteral("lens"))});
    ASSERT_EQ(r.code, 0) << gwb::app::test::show(r);
    EXPECT_TRUE(r.err.contains(QStringLiteral("continued the prompt by 4 tokens"))) << r.err.toStdString();
    // One rule with `gwb --continue N` and the window: sampled with seed 0 unless --greedy.
    EXPECT_TRUE(r.err.contains(QStringLiteral("(sampled, seed 0,"))) << r.err.toStdString();
    QFile svg(dir.filePath(QStringLiteral("lens.svg")));
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    // The caption says so (its lines are separate text elements: read them as one text).
    EXPECT_TRUE(gwb::test::svgTexts(svg.readAll()).join(QLatin1Char(' ')).contains("were generated by the model"));
    QFile json(dir.filePath(QStringLiteral("lens.json")));
    ASSERT_TRUE(json.open(QIODevice::ReadOnly));
    const QJsonObject meta = QJsonDocument::fromJson(json.readAll()).object();
    const auto typed = gwb::engine::Model::load(testModels().grassmann.toStdString(), "cpu")
                           .tokenizer()
                           ->encodeIds(kPrompt.toStdString());
    EXPECT_EQ(meta.value(QStringLiteral("first_generated_token")).toInt(-2), static_cast<int>(typed.size()));
    EXPECT_TRUE(meta.value(QStringLiteral("prompt")).toString().startsWith(kPrompt));
}

TEST(Continue, AContinuationWithoutVisibleTextSaysSo) {
    // The bundled Grassmann model, greedy after a finished sentence, writes only "▁" pieces.
    const QString model = gwb::app::findBundledModel(gwb::engine::ModelKind::Grassmann);
    ASSERT_FALSE(model.isEmpty()) << "the bundled models are needed";
    TraceRequest r;
    r.grassmannPath = model;
    r.prompt = QStringLiteral("It is a truth universally acknowledged, that a single man in possession of a good "
                              "fortune, must be in want of a wife.");
    r.continuation = continueOptions(16, /*sample=*/false, kContinueSeed);
    ModelCache cache;
    TraceJobState state;
    const TraceOutcome out = runTraceJob(r, cache, state);
    ASSERT_EQ(out.status, TraceOutcome::Status::Ok) << out.message.toStdString();
    ASSERT_TRUE(out.prompt.mid(out.continuationFrom).trimmed().isEmpty()) << "the model now writes text";
    EXPECT_TRUE(out.notices.join(QLatin1Char(' ')).contains(QStringLiteral("no visible text")))
        << out.notices.join(QLatin1Char('\n')).toStdString();
    // Counts agree: 16 generated ids traced as such (not re-encoded into fewer pieces).
    EXPECT_EQ(out.generated, 16);
    EXPECT_EQ(out.data.generatedCount(), 16);
    // Sampled with the window's seed, the same model writes words.
    r.continuation = continueOptions(16, /*sample=*/true, kContinueSeed);
    const TraceOutcome sampled = runTraceJob(r, cache, state);
    ASSERT_EQ(sampled.status, TraceOutcome::Status::Ok);
    EXPECT_FALSE(sampled.prompt.mid(sampled.continuationFrom).trimmed().isEmpty());
    EXPECT_EQ(sampled.data.generatedCount(), 16);
}
