#include "runs/trace_job.h"

#include "test_models.h"

#include "gwb/engine/device.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::app;
using gwb::app::test::testModels;

namespace {
TraceRequest request(const QString& prompt) {
    TraceRequest r;
    r.grassmannPath = testModels().grassmann;
    r.baselinePath = testModels().transformer;
    r.prompt = prompt;
    r.device = QStringLiteral("cpu");
    r.threads = 1;
    return r;
}
} // namespace

TEST(TraceJob, TracesAndAnalysesBothModels) {
    ModelCache cache;
    TraceJobState state;
    const TraceOutcome out =
        runTraceJob(request(QStringLiteral("it is a truth universally acknowledged")), cache, state);
    ASSERT_EQ(out.status, TraceOutcome::Status::Ok) << out.message.toStdString();
    ASSERT_TRUE(out.data.grassmann && out.data.baseline);
    ASSERT_TRUE(out.data.grassmannAnalysis && out.data.baselineAnalysis);
    EXPECT_EQ(out.data.grassmann->length(), out.data.baseline->length());
    EXPECT_GE(out.data.grassmann->length(), 6);
    EXPECT_EQ(out.data.grassmannAnalysis->grassmann.size(), 2u);
    EXPECT_EQ(out.data.baselineAnalysis->attention.size(), 2u);
    EXPECT_EQ(static_cast<TraceStage>(state.stage.load()), TraceStage::Done);
    EXPECT_DOUBLE_EQ(state.fraction(true, true), 1.0);
}

TEST(TraceJob, WithTwoThreadsTheOverlappedJobGivesTheSameResults) {
    // With two or more threads the Grassmann analysis runs beside the baseline's trace and
    // analysis (half the threads each); the outcome must not depend on that, and the engine's
    // thread count is restored afterwards.
    ModelCache cache;
    TraceJobState one, two;
    const QString prompt = QStringLiteral("it is a truth universally acknowledged that a single man");
    const TraceOutcome a = runTraceJob(request(prompt), cache, one);
    TraceRequest r2 = request(prompt);
    r2.threads = 2;
    const TraceOutcome b = runTraceJob(r2, cache, two);
    ASSERT_EQ(b.status, TraceOutcome::Status::Ok) << b.message.toStdString();
    EXPECT_EQ(gwb::engine::threads(), 2);
    EXPECT_EQ(static_cast<TraceStage>(two.stage.load()), TraceStage::Done);
    ASSERT_TRUE(b.data.grassmannAnalysis && b.data.baselineAnalysis);
    EXPECT_EQ(a.notices, b.notices);
    const auto &ga = a.data.grassmannAnalysis->grassmann, &gb = b.data.grassmannAnalysis->grassmann;
    ASSERT_EQ(ga.size(), gb.size());
    for (size_t l = 0; l < ga.size(); ++l) {
        ASSERT_EQ(ga[l].coherence.size(), gb[l].coherence.size());
        for (size_t t = 0; t < ga[l].coherence.size(); ++t) {
            if (std::isfinite(ga[l].coherence[t])) {
                EXPECT_NEAR(ga[l].coherence[t], gb[l].coherence[t], 1e-5);
            }
        }
    }
    const auto &aa = a.data.baselineAnalysis->attention, &ab = b.data.baselineAnalysis->attention;
    ASSERT_EQ(aa.size(), ab.size());
    for (size_t l = 0; l < aa.size(); ++l)
        for (size_t i = 0; i < aa[l].entropy.data.size(); ++i)
            EXPECT_NEAR(aa[l].entropy.data[i], ab[l].entropy.data[i], 1e-5);
    for (size_t t = 1; t < a.data.baseline->surprisal.size(); ++t)
        EXPECT_NEAR(a.data.baseline->surprisal[t], b.data.baseline->surprisal[t], 1e-4);
}

TEST(TraceJob, WithTwoThreadsABadBaselineFailsWithItsMessage) {
    // The failure comes while the Grassmann analysis runs on its own thread: the job waits for it
    // and reports the baseline's problem.
    ModelCache cache;
    TraceJobState state;
    TraceRequest missing = request(QStringLiteral("it is a truth"));
    missing.threads = 2;
    missing.baselinePath = QStringLiteral("/nonexistent/model.gwb");
    TraceOutcome out = runTraceJob(missing, cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("does not exist"))) << out.message.toStdString();
    EXPECT_TRUE(out.message.contains(QStringLiteral("Transformer baseline"))) << out.message.toStdString();
    TraceRequest wrongKind = request(QStringLiteral("it is a truth"));
    wrongKind.threads = 2;
    wrongKind.baselinePath = testModels().grassmann;
    out = runTraceJob(wrongKind, cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("not a Transformer baseline"))) << out.message.toStdString();
    EXPECT_EQ(gwb::engine::threads(), 2);
}

TEST(TraceJob, LongPromptIsTruncatedWithNotice) {
    ModelCache cache;
    TraceJobState state;
    const TraceOutcome out = runTraceJob(request(gwb::app::test::promptOfTokens(40)), cache, state);
    ASSERT_EQ(out.status, TraceOutcome::Status::Ok) << out.message.toStdString();
    EXPECT_EQ(out.data.grassmann->length(), 24);
    EXPECT_GT(out.data.grassmann->droppedTokens, 0);
    ASSERT_FALSE(out.notices.isEmpty());
    EXPECT_TRUE(out.notices.join(QLatin1Char(' ')).contains(QStringLiteral("dropped")))
        << out.notices.join(QLatin1Char(' ')).toStdString();
}

TEST(TraceJob, CancelledBeforeStart) {
    ModelCache cache;
    TraceJobState state;
    state.cancel.store(true);
    const TraceOutcome out = runTraceJob(request(QStringLiteral("it is")), cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Cancelled);
    EXPECT_FALSE(out.data.grassmann);
}

TEST(TraceJob, BadInputsFailWithMessages) {
    ModelCache cache;
    TraceJobState state;
    TraceOutcome out = runTraceJob(request(QStringLiteral("   \n ")), cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("empty"))) << out.message.toStdString();

    TraceRequest swapped = request(QStringLiteral("it is"));
    std::swap(swapped.grassmannPath, swapped.baselinePath);
    out = runTraceJob(swapped, cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("Transformer"))) << out.message.toStdString();

    TraceRequest foreign = request(QStringLiteral("it is"));
    foreign.grassmannPath = testModels().notAModel;
    out = runTraceJob(foreign, cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("notes.gwb"))) << out.message.toStdString();

    TraceRequest missing = request(QStringLiteral("it is"));
    missing.baselinePath = QStringLiteral("/nonexistent/model.gwb");
    out = runTraceJob(missing, cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("does not exist"))) << out.message.toStdString();

    TraceRequest none = request(QStringLiteral("it is"));
    none.grassmannPath.clear();
    none.baselinePath.clear();
    out = runTraceJob(none, cache, state);
    EXPECT_EQ(out.status, TraceOutcome::Status::Failed);
    EXPECT_TRUE(out.message.contains(QStringLiteral("Open Model"))) << out.message.toStdString();
}

TEST(TraceJob, ProgressFractionIsMonotoneOverStages) {
    TraceJobState s;
    double last = -1;
    for (int stage = static_cast<int>(TraceStage::LoadGrassmann); stage <= static_cast<int>(TraceStage::Done);
         ++stage) {
        s.stage.store(stage);
        s.done.store(0);
        s.total.store(0);
        const double f = s.fraction(true, true);
        EXPECT_GE(f, last);
        last = f;
    }
    EXPECT_DOUBLE_EQ(last, 1.0);
}

TEST(TraceJob, WarningsThatDifferOnlyInTheLayerBecomeOneLine) {
    // A one-token prompt gave one "rank 0 < k = 4" line per layer and model.
    std::vector<std::string> w;
    for (int l = 0; l < 6; ++l)
        w.push_back("layer " + std::to_string(l) + ": prompt subspace has rank 1 < k = 4 (too few distinct states)");
    w.push_back("layer 2: 3 (t, D) with a degenerate lifted plane");
    w.push_back("layer 4: 3 (t, D) with a degenerate lifted plane");
    w.push_back("something else");
    w.push_back("something else");
    const QStringList c = gwb::app::collapseLayerWarnings(w);
    ASSERT_EQ(c.size(), 3) << c.join(QLatin1Char('\n')).toStdString();
    EXPECT_EQ(c[0], QStringLiteral("something else"));
    EXPECT_EQ(c[1], QStringLiteral("layers 0\u20135: prompt subspace has rank 1 < k = 4 (too few distinct states)"));
    EXPECT_EQ(c[2], QStringLiteral("layers 2, 4: 3 (t, D) with a degenerate lifted plane"));
}
