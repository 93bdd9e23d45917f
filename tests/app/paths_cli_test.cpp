// `gwb paths` as processes of the real executable on the small test models: senders x receivers
// with gwb patch's component names, --linear's direct logit attribution (refused for post-norm),
// --pairs as the mean of each pair's own matrix; bad input is refused as gwb patch refuses it.

#include <nlohmann/json.hpp>

#include <QFileInfo>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "gwb_process.h"
#include "patching_cli_util.h"
#include "test_models.h"

using namespace gwb::app::test;               // runGwb, show, testModels
using namespace gwb::app::test::patching_cli; // the prompts, pairs and NPZ helpers

TEST(PathsCli, WritesSendersByReceiversAndRefusesBadInputAsPatchDoes) {
    // gwb paths: metric and effect (senders x receivers) with the component names of the window
    // and gwb patch (offset.l.D, mixer.l, gate.l, ffn.l / head.l.H; logits, resid.M); bad input is
    // refused with gwb patch's message and nothing is written.
    QTemporaryDir dir;
    const QString out = dir.filePath("paths.npz"), csv = dir.filePath("paths.csv");
    const QStringList base = {"paths",   "--clean", kClean,     "--corrupt", kCorrupt,    "--answer", "her",
                              "--wrong", "the",     "--device", "cpu",       "--threads", "1"};
    const GwbResult g = runGwb(base + QStringList{"--model", testModels().grassmann, "--out", out, "--data", csv});
    ASSERT_EQ(g.code, 0) << show(g);
    const Npz z = readNpz(out);
    // Layers with offsets {1, 2} and {1, 3}: 2 + 3 senders of layer 0 (offsets, mixer, gate, ffn)
    // and 2 + 3 of layer 1; receivers logits, resid.1, resid.2.
    EXPECT_EQ(z.at("metric").shape, (std::vector<int64_t>{10, 3}));
    EXPECT_EQ(z.meta["sender_labels"][0], "offset.0.1");
    EXPECT_EQ(z.meta["sender_labels"][3], "gate.0");
    EXPECT_EQ(z.meta["receiver_labels"], (nlohmann::json{"logits", "resid.1", "resid.2"}));
    const auto metric = z.at("metric").values<double>();
    EXPECT_TRUE(std::isnan(metric[5 * 3 + 1])); // offset.1.1 through resid.1: at its own layer
    EXPECT_EQ(lines(csv), 1 + 30);
    const GwbResult t = runGwb(base + QStringList{"--model", testModels().transformer, "--senders", "head",
                                                  "--receiver", "logits", "--out", dir.filePath("t.npz")});
    ASSERT_EQ(t.code, 0) << show(t);
    EXPECT_EQ(readNpz(dir.filePath("t.npz")).meta["sender_labels"],
              (nlohmann::json{"head.0.0", "head.0.1", "head.1.0", "head.1.1"}));
    const GwbResult bad =
        runGwb({"paths", "--model", testModels().grassmann, "--clean", kClean, "--corrupt",
                "emma is a truth universally", "--answer", "her", "--wrong", "the", "--out", dir.filePath("bad.npz")});
    EXPECT_EQ(bad.code, 1);
    EXPECT_TRUE(bad.err.contains(QStringLiteral("different lengths"))) << bad.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(dir.filePath("bad.npz")));
    const GwbResult kind =
        runGwb({"paths", "--model", testModels().transformer, "--clean", kClean, "--corrupt", kCorrupt, "--answer",
                "her", "--wrong", "the", "--senders", "gate", "--out", dir.filePath("k.npz")});
    EXPECT_EQ(kind.code, 1);
    EXPECT_TRUE(kind.err.contains(QStringLiteral("'gate' does not exist in a Transformer"))) << kind.err.toStdString();
}

TEST(PathsCli, LinearGivesTermsThatSumToTheMetricAndIsRefusedForPostNorm) {
    // gwb paths --linear: the direct logit attribution of every write of a pre-norm model; the
    // corrupted run's terms plus the bias term give its metric; a post-norm model is refused with
    // the reason and nothing is written.
    QTemporaryDir dir;
    const QStringList base = {"paths", "--clean", kClean, "--corrupt", kCorrupt, "--answer",
                              "her",   "--wrong", "the",  "--device",  "cpu",    "--linear"};
    const QString out = dir.filePath("lin.npz");
    const GwbResult g = runGwb(base + QStringList{"--model", testModels().grassmannPre, "--out", out});
    ASSERT_EQ(g.code, 0) << show(g);
    EXPECT_TRUE(g.out.contains(QStringLiteral("largest direct logit attribution"))) << g.out.toStdString();
    const Npz z = readNpz(out);
    const auto terms = z.at("linear_corrupt").values<double>();
    const double bias = z.at("linear_bias").values<double>().at(0);
    const double metric = z.at("corrupt_metric").values<double>().at(0);
    EXPECT_NEAR(std::accumulate(terms.begin(), terms.end(), bias), metric, 1e-5);
    EXPECT_EQ(z.meta["linear_labels"][0], "embed");
    EXPECT_EQ(z.meta["linear_labels"].size(), terms.size());
    EXPECT_EQ(z.at("linear_channel_corrupt").shape, (std::vector<int64_t>{2, 16}));
    EXPECT_TRUE(z.meta["definitions"].contains("linear"));
    const QString refused = dir.filePath("post.npz");
    const GwbResult post = runGwb(base + QStringList{"--model", testModels().grassmann, "--out", refused});
    EXPECT_EQ(post.code, 1);
    EXPECT_TRUE(post.err.contains(QStringLiteral("needs a pre-norm model"))) << post.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(refused));
}

TEST(PathsCli, PairsGiveTheMeanOverPairsOfEachPairsOwnMatrix) {
    // gwb paths --pairs: each usable pair's senders x receivers matrix equals gwb paths of that
    // pair alone; effect_mean is their ratio of means; unusable lines are reported.
    QTemporaryDir dir;
    const QString g = testModels().grassmann;
    const QString jsonl = writePairs(dir.filePath("p.jsonl"), false), out = dir.filePath("pp.npz");
    const GwbResult r = runGwb({"paths", "--model", g, "--pairs", jsonl, "--out", out, "--device", "cpu"});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.out.contains(QStringLiteral("4 pairs used of 7 lines (3 skipped)"))) << r.out.toStdString();
    const Npz z = readNpz(out);
    const auto& shape = z.at("metric").shape;
    ASSERT_EQ(shape.size(), 3u);
    ASSERT_EQ(shape[0], 4);
    const QString one = dir.filePath("one.npz");
    const GwbResult s = runGwb({"paths", "--model", g, "--clean", "emma had a man", "--corrupt", "she had a man",
                                "--answer", "the", "--wrong", "her", "--out", one, "--device", "cpu"});
    ASSERT_EQ(s.code, 0) << show(s);
    const auto alone = readNpz(one).at("metric").values<double>();
    const auto all = z.at("metric").values<double>();
    const size_t cells = static_cast<size_t>(shape[1] * shape[2]);
    ASSERT_EQ(alone.size(), cells);
    for (size_t i = 0; i < cells; ++i) { // the third usable pair (line 3)
        const double a = alone[i], b = all[2 * cells + i];
        EXPECT_TRUE((std::isnan(a) && std::isnan(b)) || std::abs(a - b) < 1e-9) << i;
    }
    const auto mean = z.at("effect_mean").values<double>();
    const auto cm = z.at("clean_metric").values<double>(), km = z.at("corrupt_metric").values<double>();
    for (size_t i = 0; i < cells; ++i) {
        double num = 0, den = 0;
        int n = 0;
        for (size_t p = 0; p < 4; ++p)
            if (std::isfinite(all[p * cells + i])) {
                num += all[p * cells + i] - km[p];
                den += cm[p] - km[p];
                ++n;
            }
        if (n > 0 && std::abs(den / n) >= 0.05) {
            EXPECT_NEAR(mean[i], num / den, 1e-12) << i;
        } else {
            EXPECT_TRUE(std::isnan(mean[i])) << i;
        }
    }
    EXPECT_EQ(z.meta["estimator"].get<std::string>().rfind("ratio of means", 0), 0u);
    EXPECT_TRUE(r.out.contains(QString::fromStdString(z.meta["verdict"].get<std::string>()))) << show(r);
}
