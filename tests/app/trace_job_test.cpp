#include "gui/trace_job.h"

#include "test_models.h"

#include <gtest/gtest.h>

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
