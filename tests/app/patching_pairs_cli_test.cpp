// `gwb patch --pairs` and `gwb patch merge` as processes of the real executable on the small test
// models: every usable pair's metric equals its own single-pair run, the mean and interval are
// over the pairs, unusable lines are reported by number, shards merge into the whole run, and
// --method attribution writes estimates with exactly checked cells.

#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "gwb_process.h"
#include "patching_cli_util.h"
#include "test_models.h"

using namespace gwb::app::test;               // runGwb, show, testModels
using namespace gwb::app::test::patching_cli; // the prompts, pairs and NPZ helpers

TEST(PatchPairsCli, EachPairEqualsItsOwnRunAndTheMeanIsTheirRatioOfMeans) {
    // gwb patch --pairs: every usable pair's metric equals a single-pair gwb patch of it, columns
    // aligned at the metric position; effect_mean is the ratio of means sum(p - k) / sum(c - k) over
    // the pairs, mean_of_ratios the mean of the per-pair effects above the threshold; the verdict on
    // clean - corrupted comes first; unusable lines are reported with their numbers; CSV gives the
    // same result as JSONL.
    QTemporaryDir dir;
    const QString g = testModels().grassmann;
    const QString jsonl = writePairs(dir.filePath("p.jsonl"), false), csv = writePairs(dir.filePath("p.csv"), true);
    const QString out = dir.filePath("pairs.npz"), tidy = dir.filePath("pairs.csv");
    // The test models' differences are tiny: --min-difference 0 gives every estimator at any difference.
    const QStringList common = {"patch", "--model",   g,   "--site",           "resid", "--device",
                                "cpu",   "--threads", "1", "--min-difference", "0"};
    const GwbResult r = runGwb(common + QStringList{"--pairs", jsonl, "--out", out, "--data", tidy, "--seed", "3"});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.out.contains(QStringLiteral("4 pairs used of 7 lines (3 skipped)"))) << r.out.toStdString();
    EXPECT_TRUE(r.out.contains(QStringLiteral("skipped line 5: the prompts tokenize to different lengths")));
    EXPECT_TRUE(r.out.contains(QStringLiteral("skipped line 6: the answer piece 'zebra' is not in the vocabulary")));
    EXPECT_TRUE(r.out.contains(QStringLiteral("skipped line 7: malformed JSON")));
    const Npz z = readNpz(out);
    const auto& metric = z.at("metric");
    ASSERT_EQ(metric.shape, (std::vector<int64_t>{4, 3, 9})); // resid rows h^0..h^2; the longest pair: 9 tokens
    EXPECT_EQ(z.at("line").values<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(z.meta["skipped"].size(), 3u);
    EXPECT_EQ(z.meta["pairs"][0]["tags"]["kind"], "t");
    EXPECT_EQ(z.meta["column_labels"].back(), "m");
    const auto mv = metric.values<double>(), ev = z.at("effect").values<double>();
    // Pair 3 (line 4) has its metric at position 6 of 9 tokens; pair 0 at 3 of 4.
    const std::vector<std::tuple<QString, QString, QString, QString, int>> single = {
        {"emma was in the", "she was in the", "her", "the", -1},
        {"it is a truth that emma was in the", "it is a truth that she was in the", "her", "the", -1},
        {"emma had a man", "she had a man", "the", "her", -1},
        {"it is the single man that was in the", "it is a single man that was in the", "her", "of", 6}};
    for (int p = 0; p < 4; ++p) {
        const auto& [clean, corrupt, answer, wrong, pos] = single[static_cast<size_t>(p)];
        const QString one = dir.filePath(QStringLiteral("one%1.npz").arg(p));
        QStringList args = {"patch",    "--model",  g,         "--clean",   clean,    "--corrupt", corrupt,
                            "--answer", answer,     "--wrong", wrong,       "--site", "resid",     "--out",
                            one,        "--device", "cpu",     "--threads", "1"};
        if (pos >= 0) args << "--position" << QString::number(pos);
        const GwbResult s = runGwb(args);
        ASSERT_EQ(s.code, 0) << show(s);
        const Npz o = readNpz(one);
        const auto om = o.at("metric").values<double>();
        const int64_t T = o.at("metric").shape[1], m = o.meta["metric_position"].get<int64_t>();
        for (int64_t row = 0; row < 3; ++row)
            for (int64_t c = 0; c < 9; ++c) {
                const int64_t src = m - (8 - c);
                const double got = mv[static_cast<size_t>(p * 27 + row * 9 + c)];
                if (src < 0 || src >= T) {
                    EXPECT_TRUE(std::isnan(got)) << p << " " << row << " " << c;
                } else {
                    EXPECT_DOUBLE_EQ(got, om[static_cast<size_t>(row * T + src)]) << p << " " << row << " " << c;
                }
            }
        EXPECT_DOUBLE_EQ(z.at("clean_metric").values<double>()[static_cast<size_t>(p)],
                         o.at("clean_metric").values<double>()[0]);
    }
    const auto mean = z.at("effect_mean").values<double>(), low = z.at("effect_ci_low").values<double>(),
               high = z.at("effect_ci_high").values<double>(), mor = z.at("mean_of_ratios").values<double>();
    const auto n = z.at("effect_n").values<int64_t>();
    const auto cm = z.at("clean_metric").values<double>(), km = z.at("corrupt_metric").values<double>();
    EXPECT_EQ(z.meta["estimator"].get<std::string>().rfind("ratio of means", 0), 0u) << z.meta["estimator"];
    EXPECT_EQ(z.meta["min_difference"], 0.0);
    EXPECT_TRUE(r.out.contains(QString::fromStdString(z.meta["verdict"].get<std::string>()))) << show(r);
    for (size_t cell = 0; cell < 27; ++cell) {
        double num = 0, den = 0, ratios = 0;
        int64_t k = 0, above = 0;
        for (size_t p = 0; p < 4; ++p)
            if (std::isfinite(mv[p * 27 + cell])) {
                num += mv[p * 27 + cell] - km[p];
                den += cm[p] - km[p];
                ++k;
                if (cm[p] != km[p]) ratios += ev[p * 27 + cell], ++above;
            }
        EXPECT_EQ(n[cell], k) << cell;
        if (k == 0 || den == 0) {
            EXPECT_TRUE(std::isnan(mean[cell])) << cell;
            continue;
        }
        EXPECT_NEAR(mean[cell], num / den, 1e-12) << cell;
        if (above > 0) {
            EXPECT_NEAR(mor[cell], ratios / static_cast<double>(above), 1e-12) << cell;
        }
        if (std::isfinite(low[cell])) {
            EXPECT_LE(low[cell], high[cell]) << cell;
        }
    }
    EXPECT_EQ(lines(tidy), 1 + 4 * 27 + 27);

    // The CSV file gives the same pairs and numbers (its lines: the header is line 1).
    const QString outCsv = dir.filePath("pairs_csv.npz");
    const GwbResult rc = runGwb(common + QStringList{"--pairs", csv, "--out", outCsv, "--seed", "3"});
    ASSERT_EQ(rc.code, 0) << show(rc);
    const Npz zc = readNpz(outCsv);
    EXPECT_EQ(zc.at("metric").values<double>().size(), mv.size());
    const auto mc = zc.at("metric").values<double>();
    for (size_t i = 0; i < mv.size(); ++i)
        EXPECT_TRUE((std::isnan(mc[i]) && std::isnan(mv[i])) || mc[i] == mv[i]) << i;
    const auto lowCsv = zc.at("effect_ci_low").values<double>();
    ASSERT_EQ(lowCsv.size(), low.size());
    for (size_t i = 0; i < low.size(); ++i)
        EXPECT_TRUE((std::isnan(lowCsv[i]) && std::isnan(low[i])) || lowCsv[i] == low[i]) << i;
}

TEST(PatchPairsCli, ShardsMergeIntoTheWholeRunAndBadFilesAreRefused) {
    QTemporaryDir dir;
    const QString g = testModels().grassmann;
    const QString jsonl = writePairs(dir.filePath("p.jsonl"), false);
    const QStringList common = {"patch", "--model",   g,   "--site",  "offset", "--device",
                                "cpu",   "--threads", "1", "--pairs", jsonl};
    const QString whole = dir.filePath("whole.npz"), a = dir.filePath("a.npz"), b = dir.filePath("b.npz"),
                  merged = dir.filePath("merged.npz");
    ASSERT_EQ(runGwb(common + QStringList{"--out", whole}).code, 0);
    ASSERT_EQ(runGwb(common + QStringList{"--out", a, "--shard", "0/2"}).code, 0);
    ASSERT_EQ(runGwb(common + QStringList{"--out", b, "--shard", "1/2"}).code, 0);
    EXPECT_EQ(readNpz(a).meta["complete"], false);
    const GwbResult m = runGwb({"patch", "merge", a, b, "--out", merged});
    ASSERT_EQ(m.code, 0) << show(m);
    const Npz w = readNpz(whole), z = readNpz(merged);
    EXPECT_EQ(z.meta["complete"], true);
    for (const char* name : {"effect_mean", "effect_ci_low", "effect_ci_high"}) {
        const auto x = w.at(name).values<double>(), y = z.at(name).values<double>();
        ASSERT_EQ(x.size(), y.size()) << name;
        for (size_t i = 0; i < x.size(); ++i)
            EXPECT_TRUE((std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i]) << name << " " << i;
    }
    // A pair covered twice is an error; nothing is written.
    const GwbResult twice = runGwb({"patch", "merge", a, a, "--out", dir.filePath("x.npz")});
    EXPECT_EQ(twice.code, 1);
    EXPECT_TRUE(twice.err.contains(QStringLiteral("in two of the files"))) << twice.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(dir.filePath("x.npz")));
    // A file with no usable line is refused, naming lines and reasons; nothing is written.
    QFile bad(dir.filePath("bad.jsonl"));
    ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
    bad.write("{\"clean\": \"emma\"}\nnot json\n");
    bad.close();
    const GwbResult none = runGwb(
        {"patch", "--model", g, "--site", "resid", "--pairs", bad.fileName(), "--out", dir.filePath("none.npz")});
    EXPECT_EQ(none.code, 1);
    EXPECT_TRUE(none.err.contains(QStringLiteral("no usable pair"))) << none.err.toStdString();
    EXPECT_TRUE(none.err.contains(QStringLiteral("line 2: malformed JSON"))) << none.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(dir.filePath("none.npz")));
}

TEST(PatchPairsCli, AttributionEstimatesEveryCellAndChecksSomeExactly) {
    // --method attribution writes the first-order estimates (never under the exact arrays' names),
    // flags, and with --check K the exact runs of 2K cells with Spearman and recall@K; a checked
    // cell's exact value equals the exact sweep's.
    QTemporaryDir dir;
    const QString g = testModels().grassmann;
    const QString one = dir.filePath("one.npz"), exact = dir.filePath("exact.npz");
    const QStringList pair = {"patch",  "--model",  g,     "--clean",   kClean, "--corrupt",
                              kCorrupt, "--answer", "her", "--wrong",   "the",  "--site",
                              "resid",  "--device", "cpu", "--threads", "1"};
    const GwbResult a = runGwb(pair + QStringList{"--method", "attribution", "--check", "2", "--out", one});
    ASSERT_EQ(a.code, 0) << show(a);
    EXPECT_TRUE(a.out.contains(QStringLiteral("first-order estimate"))) << a.out.toStdString();
    const Npz z = readNpz(one);
    EXPECT_EQ(z.meta["method"], "attribution");
    EXPECT_FALSE(z.arrays.count("effect"));
    EXPECT_FALSE(z.arrays.count("metric"));
    ASSERT_TRUE(z.arrays.count("attribution") && z.arrays.count("flagged") && z.arrays.count("check_exact"));
    ASSERT_EQ(runGwb(pair + QStringList{"--out", exact}).code, 0);
    const Npz e = readNpz(exact);
    const auto cells = z.at("check_cells").values<int64_t>();
    const auto checked = z.at("check_exact").values<double>();
    const auto metric = e.at("metric").values<double>();
    const double corrupt = e.at("corrupt_metric").values<double>()[0];
    ASSERT_EQ(cells.size(), 4u);
    for (size_t j = 0; j < cells.size(); ++j)
        EXPECT_NEAR(checked[j], metric[static_cast<size_t>(cells[j])] - corrupt, 1e-9) << j;

    const QString jsonl = writePairs(dir.filePath("p.jsonl"), false), many = dir.filePath("many.npz");
    const GwbResult b = runGwb({"patch", "--model", g, "--site", "mixer", "--pairs", jsonl, "--method", "attribution",
                                "--check", "2", "--out", many, "--device", "cpu"});
    ASSERT_EQ(b.code, 0) << show(b);
    EXPECT_TRUE(b.out.contains(QStringLiteral("mean Spearman"))) << b.out.toStdString();
    const Npz m = readNpz(many);
    EXPECT_EQ(m.at("attribution").shape, (std::vector<int64_t>{4, 2, 9}));
    EXPECT_TRUE(m.arrays.count("attribution_mean") && m.arrays.count("attribution_ci_low") &&
                m.arrays.count("check_spearman"));
    EXPECT_FALSE(m.arrays.count("effect_mean"));
    // Attribution shards merge into the whole run (in any order): the same estimates, flags, checked
    // cells (seeded by the pair's line) and interval, up to the rounding of a different batch size.
    const QStringList shardRun = {"patch",    "--model",     g,         "--site", "mixer",    "--pairs", jsonl,
                                  "--method", "attribution", "--check", "2",      "--device", "cpu"};
    const QString s0 = dir.filePath("s0.npz"), s1 = dir.filePath("s1.npz"), sm = dir.filePath("sm.npz");
    ASSERT_EQ(runGwb(shardRun + QStringList{"--shard", "0/2", "--out", s0}).code, 0);
    ASSERT_EQ(runGwb(shardRun + QStringList{"--shard", "1/2", "--out", s1}).code, 0);
    const GwbResult merge = runGwb({"patch", "merge", s1, s0, "--out", sm});
    ASSERT_EQ(merge.code, 0) << show(merge);
    const Npz sz = readNpz(sm);
    EXPECT_EQ(sz.meta["method"], "attribution");
    EXPECT_EQ(sz.meta["complete"], true);
    for (const char* name : {"attribution", "estimated_metric", "attribution_mean", "attribution_ci_low",
                             "attribution_ci_high", "check_estimate", "check_exact", "line"}) {
        const auto x = m.at(name).values<double>(), y = sz.at(name).values<double>();
        ASSERT_EQ(x.size(), y.size()) << name;
        for (size_t i = 0; i < x.size(); ++i)
            EXPECT_TRUE((std::isnan(x[i]) && std::isnan(y[i])) || std::abs(x[i] - y[i]) < 1e-5) << name << " " << i;
    }
    // The checked cells are the same choice (seeded by the pair's line); only a near tie of two
    // estimates, ordered differently by a different batch's rounding, may pick another top cell.
    const auto cw = m.at("check_cells").values<int64_t>(), cz = sz.at("check_cells").values<int64_t>();
    ASSERT_EQ(cw.size(), cz.size());
    size_t sameCells = 0;
    for (size_t i = 0; i < cw.size(); ++i)
        sameCells += cw[i] == cz[i];
    EXPECT_GE(sameCells * 8, cw.size() * 7) << sameCells << " of " << cw.size();
    EXPECT_EQ(m.at("flagged").values<int64_t>(), sz.at("flagged").values<int64_t>());
    // An exact file and an attribution file are not one run.
    const QString ex = dir.filePath("ex.npz");
    ASSERT_EQ(runGwb({"patch", "--model", g, "--site", "mixer", "--pairs", jsonl, "--shard", "1/2", "--out", ex,
                      "--device", "cpu"})
                  .code,
              0);
    const GwbResult mixed = runGwb({"patch", "merge", s0, ex, "--out", dir.filePath("mixed.npz")});
    EXPECT_EQ(mixed.code, 1);
    EXPECT_TRUE(mixed.err.contains(QStringLiteral("attribution estimates"))) << mixed.err.toStdString();
    const GwbResult bad = runGwb(
        {"patch", "--model", g, "--site", "resid", "--pairs", jsonl, "--check", "2", "--out", dir.filePath("bad.npz")});
    EXPECT_EQ(bad.code, 1);
    EXPECT_TRUE(bad.err.contains(QStringLiteral("--check goes with --method attribution")));
}
