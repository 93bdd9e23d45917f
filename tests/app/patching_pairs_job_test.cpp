// The Patching view over a pairs file, on the small test models: every pair's values are its
// single-pair sweep (aligned at the metric position), each cell's mean is the mean of its pairs
// with an interval around it, unusable lines are skipped with their line numbers, the estimate
// sits beside the exact change, Cancel keeps the pairs done, the runner fills the view, and
// `gwb figure --view patching --pairs` draws it headless.

#include "gui/patching_job.h"
#include "runs/causal_adapter.h"

#include "../views/std_text.h"
#include "app_test_util.h"
#include "test_models.h"

#include "gwb/engine/model.h"
#include "gwb/engine/tracer.h"
#include "gwb/views/patching_view.h"

#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>

using namespace gwb::app;
using gwb::app::test::testModels;

namespace {

PatchingJobRequest models() {
    PatchingJobRequest r;
    r.grassmannPath = testModels().grassmann;
    r.baselinePath = testModels().transformer;
    r.device = QStringLiteral("cpu");
    return r;
}

struct Pair {
    QString clean, corrupt;
};
const Pair kPairs[] = {{QStringLiteral("emma was in the"), QStringLiteral("she was in the")},
                       {QStringLiteral("emma had a man"), QStringLiteral("she had a man")},
                       {QStringLiteral("the man was in the"), QStringLiteral("the she was in the")},
                       {QStringLiteral("emma was"), QStringLiteral("she was")}};

/// The four pairs (lines 1, 3, 5, 6), a malformed line (2) and a pair of different lengths (4).
QString writePairs(const QTemporaryDir& dir) {
    const QString path = dir.filePath(QStringLiteral("pairs.jsonl"));
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::WriteOnly));
    auto line = [&](const Pair& p) {
        f.write(QStringLiteral("{\"clean\": \"%1\", \"corrupt\": \"%2\", \"answer\": \"her\", \"wrong\": \"the\"}\n")
                    .arg(p.clean, p.corrupt)
                    .toUtf8());
    };
    line(kPairs[0]);
    f.write("{\"clean\": \"emma\n");
    line(kPairs[1]);
    line({QStringLiteral("emma was in the"), QStringLiteral("emma is a truth universally")});
    line(kPairs[2]);
    line(kPairs[3]);
    return path;
}

} // namespace

TEST(PatchingPairs, EveryPairIsItsOwnSweepAndEachCellTheMeanOfItsPairs) {
    QTemporaryDir dir;
    const QString file = writePairs(dir);
    ModelCache cache;
    gwb::views::PairsInputs in;
    in.file = file.toStdString();
    in.site = "resid";
    in.minDifference = 0; // the test models' differences are tiny: the estimators at any difference
    const gwb::views::PairsData d = computePatchingPairs(cache, models(), in);
    ASSERT_TRUE(d.error.empty()) << d.error;
    EXPECT_EQ(d.lines, 6);
    for (int m : {0, 1}) {
        const gwb::views::PairsGrid& g = d.grid(m);
        SCOPED_TRACE(g.model);
        ASSERT_TRUE(g.hasGrid()) << g.error;
        EXPECT_EQ(g.lines, (std::vector<int64_t>{1, 3, 5, 6}));
        ASSERT_EQ(g.skipped.size(), 2);
        EXPECT_EQ(g.skipped[0].rfind("line 2:", 0), 0u) << g.skipped[0];
        EXPECT_EQ(g.skipped[1].rfind("line 4:", 0), 0u) << g.skipped[1];
        EXPECT_TRUE(g.complete);
        EXPECT_EQ(g.colLabels.back(), "m");
        // Each pair's row is the single-pair sweep of that pair, right-aligned at its last token: its
        // normalised effect where the grid shows the ratio of means, else its raw effect p - k.
        const bool ratio = g.shownIsRatio();
        std::vector<double> num(static_cast<size_t>(g.rows * g.cols), 0.0), den(num.size(), 0.0);
        for (int64_t p = 0; p < g.pairs(); ++p) {
            PatchingJobRequest one = models();
            one.inputs.clean = kPairs[p].clean.toStdString();
            one.inputs.corrupt = kPairs[p].corrupt.toStdString();
            one.inputs.answer = "her";
            one.inputs.wrong = "the";
            one.inputs.site = "resid";
            one.inputs.mode = "patch";
            one.inputs.minDifference = 0;
            const gwb::views::PatchingData single = computePatching(cache, one);
            const gwb::views::PatchingGrid& s = m == 0 ? single.grassmann : single.transformer;
            ASSERT_TRUE(s.hasGrid()) << s.error;
            ASSERT_EQ(s.rows, g.rows);
            for (int64_t r = 0; r < g.rows; ++r)
                for (int64_t c = 0; c < g.cols; ++c) {
                    const int64_t src = s.cols - 1 - (g.cols - 1 - c);
                    const size_t at = static_cast<size_t>(r * s.cols + src);
                    const double metric = src >= 0 ? s.metric[at] : std::nan("");
                    const double want = std::isnan(metric) ? metric : ratio ? s.effect[at] : metric - s.corruptMetric;
                    const double got = g.value(p, r, c);
                    if (std::isnan(want)) {
                        EXPECT_TRUE(std::isnan(got)) << p << " " << r << " " << c;
                        continue;
                    }
                    EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::abs(want))) << p << " " << r << " " << c;
                    num[static_cast<size_t>(r * g.cols + c)] += metric - s.corruptMetric;
                    den[static_cast<size_t>(r * g.cols + c)] += s.cleanMetric - s.corruptMetric;
                }
        }
        // Each cell's estimate over its pairs (the ratio of means, or the mean raw effect) and its n.
        EXPECT_EQ(g.shownEstimate, ratio ? std::string("ratio of means") : std::string("mean raw effect (logits)"));
        for (int64_t r = 0; r < g.rows; ++r)
            for (int64_t c = 0; c < g.cols; ++c) {
                const std::vector<double> v = g.cellValues(r, c);
                const size_t i = static_cast<size_t>(r * g.cols + c);
                EXPECT_EQ(g.n[i], static_cast<int64_t>(v.size()));
                if (v.empty()) {
                    EXPECT_TRUE(std::isnan(g.mean[i]));
                    continue;
                }
                const double want = ratio ? num[i] / den[i] : num[i] / static_cast<double>(v.size());
                EXPECT_NEAR(g.mean[i], want, 1e-9 * std::max(1.0, std::abs(want)));
                if (std::isfinite(g.low[i])) {
                    EXPECT_LE(g.low[i], g.high[i]);
                }
            }
        // The estimate beside every exact change, and how well they agree.
        EXPECT_FALSE(g.scatterEstimate.empty());
        EXPECT_EQ(g.scatterEstimate.size(), g.scatterExact.size());
        EXPECT_TRUE(std::isfinite(g.spearman));
        EXPECT_TRUE(std::isfinite(g.pearson));
        EXPECT_GT(g.pearson, 0.3); // first order is a fair guide on these tiny models (a chance scatter is ~0)
    }
}

TEST(PatchingPairs, AttributionOffsetsAndHeadsAndWhatCannotRun) {
    QTemporaryDir dir;
    const QString file = writePairs(dir);
    ModelCache cache;
    gwb::views::PairsInputs in;
    in.file = file.toStdString();
    in.site = "offset/head";
    in.method = "attribution";
    in.check = 2;
    gwb::views::PairsData d = computePatchingPairs(cache, models(), in);
    ASSERT_TRUE(d.hasGrid());
    EXPECT_EQ(d.grassmann.site, QStringLiteral("offset"));
    EXPECT_EQ(d.transformer.site, QStringLiteral("head"));
    for (int m : {0, 1}) {
        const gwb::views::PairsGrid& g = d.grid(m);
        EXPECT_TRUE(g.estimated);
        EXPECT_EQ(g.valueName(), QStringLiteral("estimated metric change"));
        // 2 K checked cells a pair at most, each with its exact value.
        EXPECT_GT(g.scatterExact.size(), 0u);
        EXPECT_LE(g.scatterExact.size(), static_cast<size_t>(4 * g.pairs()));
    }
    // A site one kind lacks is that model's error; the other still runs.
    in.site = "gate";
    in.method = "exact";
    d = computePatchingPairs(cache, models(), in);
    EXPECT_TRUE(d.grassmann.hasGrid()) << d.grassmann.error;
    EXPECT_FALSE(d.transformer.hasGrid());
    EXPECT_TRUE(QString::fromStdString(d.transformer.error).contains(QStringLiteral("gate"))) << d.transformer.error;
    // A file that is not there, and one without a usable line.
    in.file = dir.filePath(QStringLiteral("missing.jsonl")).toStdString();
    d = computePatchingPairs(cache, models(), in);
    EXPECT_FALSE(d.error.empty());
    EXPECT_TRUE(QString::fromStdString(d.error).contains(QStringLiteral("missing.jsonl"))) << d.error;
    const QString bad = dir.filePath(QStringLiteral("bad.jsonl"));
    QFile f(bad);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("{\"clean\": \"emma was\", \"corrupt\": \"emma is a truth\", \"answer\": \"her\", \"wrong\": \"the\"}\n");
    f.close();
    in.file = bad.toStdString();
    in.site = "resid";
    d = computePatchingPairs(cache, models(), in);
    EXPECT_FALSE(d.hasGrid());
    EXPECT_TRUE(QString::fromStdString(d.grassmann.error).contains(QStringLiteral("no usable pair")))
        << d.grassmann.error;
    EXPECT_TRUE(QString::fromStdString(d.grassmann.error).contains(QStringLiteral("line 1"))) << d.grassmann.error;
}

TEST(PatchingPairs, CancelKeepsThePairsDone) {
    // Many pairs, so that the exact sweeps take long enough for the cancel to land among them.
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("many.jsonl"));
    QFile f(file);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    for (int i = 0; i < 1200; ++i)
        f.write("{\"clean\": \"emma was in the man was in the\", \"corrupt\": \"she was in the man was in the\", "
                "\"answer\": \"her\", \"wrong\": \"the\"}\n");
    f.close();
    ModelCache cache;
    gwb::views::PairsInputs in;
    in.file = file.toStdString();
    in.site = "resid";
    // The Grassmann model is the first half of the progress; in each model's half, estimates come
    // first and exact sweeps second: stop among the Grassmann model's exact sweeps.
    const gwb::views::PairsData d = computePatchingPairs(cache, models(), in, [](double f) { return f < 0.3; });
    ASSERT_TRUE(d.grassmann.hasGrid()) << d.grassmann.error;
    EXPECT_FALSE(d.grassmann.complete);
    EXPECT_GT(d.grassmann.pairs(), 0);
    EXPECT_LT(d.grassmann.pairs(), 1200);
    EXPECT_EQ(d.grassmann.usable, 1200);
    // The pairs kept are whole: each has its values and the mean is theirs.
    EXPECT_EQ(d.grassmann.values.size(),
              static_cast<size_t>(d.grassmann.pairs() * d.grassmann.rows * d.grassmann.cols));
    EXPECT_FALSE(d.transformer.hasGrid());
    EXPECT_TRUE(QString::fromStdString(d.transformer.error).contains(QStringLiteral("cancelled")))
        << d.transformer.error;
}

TEST(PatchingPairs, TheRunnerFillsTheViewOffTheGuiThread) {
    test::ensureApp();
    QTemporaryDir dir;
    const QString file = writePairs(dir);
    gwb::views::PatchingView view;
    gwb::views::Selection selection;
    gwb::views::WorkbenchData data;
    data.grassmann =
        gwb::engine::trace(gwb::engine::Model::load(testModels().grassmann.toStdString(), "cpu"), "emma was in the");
    selection.setExtents(data);
    view.setSelection(&selection);
    view.setData(data);
    PatchingRunner* runner = wirePatching(&view, [] { return models(); });
    QSignalSpy done(runner, &PatchingRunner::pairsFinished);
    view.runPairs(file);
    EXPECT_TRUE(view.running());
    ASSERT_TRUE(done.wait(60000));
    EXPECT_FALSE(view.running());
    ASSERT_TRUE(view.pairsMode()) << view.message().toStdString();
    EXPECT_EQ(view.pairsFile(), file);
    EXPECT_EQ(view.pairsResult().grassmann.pairs(), 4);
    EXPECT_TRUE(view.message().contains(QStringLiteral("2 line(s) skipped"))) << view.message().toStdString();
    // The side panel starts on a cell, and hovering gives mean, interval and n.
    EXPECT_GE(view.pairsPlots()->cellModel(), 0);
    const QString text = view.cellText(0, 1, view.pairsResult().grassmann.cols - 1);
    EXPECT_TRUE(text.contains(QStringLiteral("95% paired-bootstrap interval"))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("n = 4 of 4 pairs"))) << text.toStdString();
    // A file that cannot be used is a message; the means stay.
    view.runPairs(dir.filePath(QStringLiteral("missing.jsonl")));
    ASSERT_TRUE(done.wait(60000));
    EXPECT_TRUE(view.pairsMode());
    EXPECT_TRUE(view.message().contains(QStringLiteral("missing.jsonl"))) << view.message().toStdString();
}

TEST(PatchingPairs, FigureCommandDrawsTheMeansHeadless) {
    QTemporaryDir dir;
    const QString file = writePairs(dir);
    const QString svg = dir.filePath(QStringLiteral("pairs.svg"));
    const QString csv = dir.filePath(QStringLiteral("pairs"));
    auto figure = [&](QStringList args) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(GWB_EXECUTABLE),
                QStringList{QStringLiteral("figure"), QStringLiteral("--model"), testModels().grassmann,
                            QStringLiteral("--baseline"), testModels().transformer, QStringLiteral("--threads"),
                            QStringLiteral("1")} +
                    args);
        EXPECT_TRUE(p.waitForFinished(120000));
        return std::make_pair(p.exitCode(), QString::fromUtf8(p.readAllStandardError()));
    };
    const auto ok = figure({QStringLiteral("--view"), QStringLiteral("patching"), QStringLiteral("--pairs"), file,
                            QStringLiteral("--out"), svg, QStringLiteral("--data"), csv});
    ASSERT_EQ(ok.first, 0) << ok.second.toStdString();
    EXPECT_TRUE(ok.second.contains(QStringLiteral("skipped line 2"))) << ok.second.toStdString();
    QFile out(svg);
    ASSERT_TRUE(out.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(out.readAll());
    EXPECT_TRUE(text.contains(QStringLiteral("Spearman"))) << "the scatter's legend";
    EXPECT_TRUE(text.contains(QStringLiteral("over 4 pairs"))) << "the distribution's title";
    for (const char* table : {"grassmann_resid_effect_mean", "transformer_resid_effect_ci_low",
                              "grassmann_resid_effect_per_pair", "grassmann_resid_estimate_vs_exact"})
        EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("pairs_pairs_%1.csv").arg(QLatin1String(table)))))
            << table;
    // Options that do not go together name the problem.
    const auto wrongView = figure({QStringLiteral("--view"), QStringLiteral("gate"), QStringLiteral("--pairs"), file,
                                   QStringLiteral("--out"), svg});
    EXPECT_NE(wrongView.first, 0);
    EXPECT_TRUE(wrongView.second.contains(QStringLiteral("--pairs only applies to --view patching")))
        << wrongView.second.toStdString();
    const auto badMethod =
        figure({QStringLiteral("--view"), QStringLiteral("patching"), QStringLiteral("--pairs"), file,
                QStringLiteral("--method"), QStringLiteral("guess"), QStringLiteral("--out"), svg});
    EXPECT_NE(badMethod.first, 0);
    EXPECT_TRUE(badMethod.second.contains(QStringLiteral("exact or attribution"))) << badMethod.second.toStdString();
}
