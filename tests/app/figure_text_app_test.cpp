// What a paper's reader sees: every view's figure of the bundled models on the sample prompt (the
// opening of Pride and Prejudice), exported as SVG at the one-column (3.5 in) and two-column (7 in)
// presets exactly as `gwb figure` makes it, keeps all of its text: no title, axis title, legend,
// caption or tick label ends in "…" (a token piece may be shortened past 12 characters only).
#include "common/bundled_models.h"
#include "runs/figure_request.h"
#include "gui/first_start.h"
#include "gui/saliency_job.h"
#include "runs/trace_job.h"

#include "../views/svg_text.h"
#include "app_test_util.h"
#include "gwb_process.h"

#include "gwb/views/figure_export.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/selection_policy.h"

#include <QFile>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using namespace gwb::app;

namespace {

QStringList textsOf(const QString& svgPath) {
    QFile f(svgPath);
    return f.open(QIODevice::ReadOnly) ? gwb::test::svgTexts(f.readAll()) : QStringList();
}

} // namespace

TEST(FigureTextApp, BundledModelsSamplePromptEveryViewBothPresets) {
    gwb::app::test::ensureApp();
    TraceRequest request;
    request.grassmannPath = findBundledModel(gwb::engine::ModelKind::Grassmann);
    request.baselinePath = findBundledModel(gwb::engine::ModelKind::Transformer);
    ASSERT_FALSE(request.grassmannPath.isEmpty() || request.baselinePath.isEmpty()) << "the bundled models are needed";
    request.prompt = samplePrompt();
    ModelCache cache;
    TraceJobState state;
    const TraceOutcome outcome = runTraceJob(request, cache, state);
    ASSERT_EQ(outcome.status, TraceOutcome::Status::Ok) << outcome.message.toStdString();
    QTemporaryDir dir;
    int checked = 0;
    // Every view of a prompt (the Corpus view draws statistics: tests/views/figure_text_test.cpp).
    const QStringList ids = {"gate",    "plucker", "angles", "subspace", "attention",
                             "compare", "readout", "lens",   "saliency"};
    for (const QString& id : ids) {
        auto v = gwb::views::createView(id);
        ASSERT_TRUE(v) << id.toStdString();
        gwb::views::Selection selection;
        selection.setExtents(outcome.data);
        v->setSelection(&selection);
        v->setData(outcome.data);
        selection.setToken(std::max(0, gwb::views::defaultToken(outcome.data))); // as `gwb figure`
        if (auto* sv = qobject_cast<gwb::views::SaliencyView*>(v.get())) {
            SaliencyRequest sr;
            sr.grassmannPath = request.grassmannPath;
            sr.baselinePath = request.baselinePath;
            sr.data = outcome.data;
            sr.token = selection.token();
            sv->setSaliency(computeSaliency(cache, sr));
        }
        for (const double width : {3.5, 7.0}) {
            SCOPED_TRACE(QStringLiteral("%1 at %2 in").arg(id).arg(width).toStdString());
            FigureSettings settings;
            settings.widthInches = width;
            const QString path = dir.filePath(QStringLiteral("%1_%2.svg").arg(id).arg(width));
            const gwb::views::ExportResult r = gwb::views::exportFigure(*v, figureOptions(settings), path);
            ASSERT_TRUE(r.ok) << r.message.toStdString();
            const QStringList texts = textsOf(path);
            EXPECT_GT(texts.size(), 10);
            const QStringList cut = gwb::test::cutTexts(texts);
            EXPECT_TRUE(cut.isEmpty()) << cut.join(QStringLiteral(" | ")).toStdString();
            ++checked;
        }
    }
    EXPECT_EQ(checked, 18);
}

TEST(FigureTextApp, FigureCommandAtOneColumnKeepsTheLensWhole) {
    // The same through the command a paper's build script runs.
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("lens.svg"));
    const gwb::app::test::GwbResult r = gwb::app::test::runGwb(
        {QStringLiteral("figure"), QStringLiteral("--model"), findBundledModel(gwb::engine::ModelKind::Grassmann),
         QStringLiteral("--baseline"), findBundledModel(gwb::engine::ModelKind::Transformer), QStringLiteral("--view"),
         QStringLiteral("lens"), QStringLiteral("--prompt"), samplePrompt(), QStringLiteral("--width"),
         QStringLiteral("3.5in"), QStringLiteral("--out"), out});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    const QStringList texts = textsOf(out);
    EXPECT_GT(texts.size(), 10);
    EXPECT_TRUE(gwb::test::cutTexts(texts).isEmpty()) << gwb::test::cutTexts(texts).join(" | ").toStdString();
}
