// `gwb patch` and `gwb figure --view patching` as processes of the real executable on the small
// test models: the NPZ holds the documented arrays with the values causality demands (patching
// the only differing token's embedding gives the clean run; the last block's output at the metric
// position gives the clean metric; elsewhere the corrupted one), the CSV has one row per cell,
// and bad input exits non-zero with a message naming the problem and writes nothing.
// The `--pairs` runs are in patching_pairs_cli_test.cpp, `gwb paths` in paths_cli_test.cpp.

#include "gwb/engine/npy.h"

#include <nlohmann/json.hpp>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <numeric>

#include <QProcess>

#include "gwb_process.h"
#include "patching_cli_util.h"
#include "test_models.h"

using namespace gwb::app::test;               // runGwb, show, testModels
using namespace gwb::app::test::patching_cli; // the prompts, pairs and NPZ helpers

namespace {

QStringList patchArgs(const QString& model, const QString& out) {
    return {QStringLiteral("patch"),
            QStringLiteral("--model"),
            model,
            QStringLiteral("--clean"),
            kClean,
            QStringLiteral("--out"),
            out,
            QStringLiteral("--device"),
            QStringLiteral("cpu"),
            QStringLiteral("--threads"),
            QStringLiteral("1")};
}

} // namespace

TEST(PatchCli, ResidPatchingWritesTheArraysWithTheValuesCausalityDemands) {
    QTemporaryDir dir;
    const QString out = dir.filePath("p.npz"), csv = dir.filePath("p.csv");
    const GwbResult r =
        // The test model's metrics differ by ~3e-4: --min-difference 0 asks for the quotient anyway.
        runGwb(patchArgs(testModels().grassmann, out) + QStringList{"--corrupt", kCorrupt, "--answer", "her", "--wrong",
                                                                    "the", "--site", "resid", "--data", csv,
                                                                    "--min-difference", "0"});
    ASSERT_EQ(r.code, 0) << show(r);
    const Npz z = readNpz(out);
    for (const char* name : {"effect", "metric", "clean_metric", "corrupt_metric", "defined", "clean_ids"})
        EXPECT_TRUE(z.arrays.count(name)) << name;
    EXPECT_FALSE(z.arrays.count("delta_logprob")); // only for an ablation without a corrupted prompt
    const int64_t rows = 3, T = 4;                 // h^0..h^2 of the 2-layer model, 4 tokens
    EXPECT_EQ(z.at("effect").shape, (std::vector<int64_t>{rows, T}));
    EXPECT_EQ(z.at("metric").shape, (std::vector<int64_t>{rows, T}));
    EXPECT_TRUE(z.at("clean_metric").shape.empty());
    const double clean = z.at("clean_metric").values<double>()[0];
    const double corrupt = z.at("corrupt_metric").values<double>()[0];
    ASSERT_NE(clean, corrupt);
    const auto metric = z.at("metric").values<double>();
    const auto effect = z.at("effect").values<double>();
    auto m = [&](int64_t row, int64_t col) { return metric[static_cast<size_t>(row * T + col)]; };
    // h^0 at the one differing token (0): the whole clean run. h^N at the metric position: its
    // final state. Positions before the difference and h^N elsewhere: the corrupted run.
    const double tol = 1e-5 * std::max(1.0, std::abs(clean));
    EXPECT_NEAR(m(0, 0), clean, tol);
    EXPECT_NEAR(m(rows - 1, T - 1), clean, tol);
    EXPECT_NEAR(m(rows - 1, 0), corrupt, tol);
    EXPECT_NEAR(m(1, 0) - corrupt, (clean - corrupt) * effect[static_cast<size_t>(T)], 1e-6);
    for (size_t i = 0; i < effect.size(); ++i)
        EXPECT_NEAR(effect[i], (metric[i] - corrupt) / (clean - corrupt), 1e-6 + 1e-6 * std::abs(effect[i]));

    const auto& meta = z.meta;
    EXPECT_EQ(meta["site"], "resid");
    EXPECT_EQ(meta["mode"], "patch");
    EXPECT_EQ(meta["row_labels"].size(), static_cast<size_t>(rows));
    EXPECT_EQ(meta["column_labels"].size(), static_cast<size_t>(T));
    EXPECT_EQ(meta["clean_tokens"][0]["piece"], "emma");
    EXPECT_EQ(meta["corrupt_tokens"][0]["piece"], "she");
    EXPECT_EQ(meta["answer"]["piece"], "her");
    EXPECT_EQ(meta["wrong"]["piece"], "the");
    EXPECT_EQ(meta["metric_position"], T - 1);
    EXPECT_TRUE(meta["definitions"].contains("effect"));
    EXPECT_NE(meta["definitions"]["words"].get<std::string>().find("(clean_metric - corrupt_metric)"),
              std::string::npos);

    EXPECT_EQ(lines(csv), 1 + rows * T); // header + one row per cell
    EXPECT_TRUE(r.out.contains(QStringLiteral("clean metric"))) << show(r);
    EXPECT_TRUE(r.out.contains(QStringLiteral("top 5 cells by |effect|"))) << show(r);
}

TEST(PatchCli, AblationWithoutACorruptedPromptWritesDeltaLogprob) {
    QTemporaryDir dir;
    const QString out = dir.filePath("a.npz"), csv = dir.filePath("a.csv");
    const GwbResult r = runGwb(patchArgs(testModels().grassmann, out) +
                               QStringList{"--site", "offset", "--mode", "zero", "--data", csv});
    ASSERT_EQ(r.code, 0) << show(r);
    const Npz z = readNpz(out);
    EXPECT_FALSE(z.arrays.count("effect"));
    // Layers have offsets {1, 2} and {1, 3}: columns D = 1, 2, 3; (layer 0, D = 3) and
    // (layer 1, D = 2) do not exist.
    const auto& d = z.at("delta_logprob");
    ASSERT_EQ(d.shape, (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(z.at("mean_delta_logprob").shape, (std::vector<int64_t>{2, 3}));
    const auto defined = z.at("defined").values<int64_t>();
    EXPECT_EQ(defined, (std::vector<int64_t>{1, 1, 0, 1, 0, 1}));
    const auto delta = d.values<double>();
    for (int64_t cell = 0; cell < 6; ++cell)
        for (int64_t t = 0; t < 4; ++t) {
            const double v = delta[static_cast<size_t>(cell * 4 + t)];
            if (!defined[static_cast<size_t>(cell)] || t == 3)
                EXPECT_TRUE(std::isnan(v)) << cell << " " << t;
            else
                EXPECT_TRUE(std::isfinite(v)) << cell << " " << t;
        }
    // Offset 1 of layer 0 reaches a real token from t = 1 on: dropping it changes the prediction.
    double change = 0;
    for (int64_t t = 1; t < 3; ++t)
        change += std::abs(delta[static_cast<size_t>(t)]);
    EXPECT_GT(change, 0.0);
    EXPECT_EQ(lines(csv), 1 + 6);
    QFile f(csv);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    EXPECT_TRUE(f.readLine().startsWith("row,column,mean_delta_logprob"));
}

TEST(PatchCli, EqualMetricsGiveANaNEffectSaidInWords) {
    QTemporaryDir dir;
    const QString out = dir.filePath("n.npz");
    const GwbResult r = runGwb(patchArgs(testModels().transformer, out) +
                               QStringList{"--corrupt", kClean, "--answer", "her", "--wrong", "the", "--site", "head"});
    ASSERT_EQ(r.code, 0) << show(r);
    // The first line says why, in the engine's words.
    EXPECT_TRUE(r.out.startsWith(QStringLiteral("note: no normalised effect: clean - corrupted is 0 logits, below "
                                                "0.05: raw effects shown")))
        << show(r);
    EXPECT_TRUE(r.out.contains(QStringLiteral("raw effect"))) << show(r);
    const Npz z = readNpz(out);
    EXPECT_EQ(z.at("effect").shape, (std::vector<int64_t>{2, 2})); // layers x heads
    for (double e : z.at("effect").values<double>())
        EXPECT_TRUE(std::isnan(e));
    EXPECT_EQ(z.meta["effect_defined"], false);
    EXPECT_EQ(z.meta["min_difference"], 0.05);
    EXPECT_NE(z.meta["effect_note"].get<std::string>().find("below 0.05"), std::string::npos);
    const auto raw = z.at("raw_effect").values<double>(), metric = z.at("metric").values<double>();
    const double corrupt = z.at("corrupt_metric").values<double>()[0];
    for (size_t i = 0; i < raw.size(); ++i)
        EXPECT_DOUBLE_EQ(raw[i], metric[i] - corrupt) << i;
}

TEST(PatchCli, ARoundingLevelDifferenceIsFlaggedNotDrawnAsAnEffect) {
    // The new-user case (issue 65): on the bundled Grassmann model "Elizabeth ... then" against
    // "Darcy ... then" moves logit[she] - logit[he] by under 0.001 logits. Every cell's normalised
    // effect divided by it and read like a localised mechanism (3.28). Now the first line says why
    // there is none, effect is NaN and effect_defined false, and raw_effect carries the numbers;
    // --min-difference 0 gives the old quotient back (the option is the threshold).
    const QString bundled = QStringLiteral(GWB_SOURCE_DIR "/resources/models/grassmann-austen.gwb");
    if (!QFileInfo::exists(bundled)) GTEST_SKIP() << "no bundled models in this checkout";
    QTemporaryDir dir;
    const QString out = dir.filePath("e.npz"), zero = dir.filePath("z.npz");
    const QStringList args = {"patch",
                              "--model",
                              bundled,
                              "--clean",
                              "Elizabeth walked to the window, and then",
                              "--corrupt",
                              "Darcy walked to the window, and then",
                              "--answer",
                              "she",
                              "--wrong",
                              "he",
                              "--site",
                              "resid",
                              "--device",
                              "cpu",
                              "--threads",
                              "1"};
    const GwbResult r = runGwb(args + QStringList{"--out", out});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.out.startsWith(QStringLiteral("note: no normalised effect: clean - corrupted is 0.000"))) << show(r);
    EXPECT_TRUE(r.out.section(QLatin1Char('\n'), 0, 0)
                    .endsWith(QStringLiteral(" logits, below 0.05: raw effects shown (patched - corrupted, logits)")))
        << show(r);
    const Npz z = readNpz(out);
    EXPECT_LT(std::abs(z.at("clean_metric").values<double>()[0] - z.at("corrupt_metric").values<double>()[0]), 0.001);
    EXPECT_EQ(z.meta["effect_defined"], false);
    for (double e : z.at("effect").values<double>())
        EXPECT_TRUE(std::isnan(e));
    // The top cells name a column's piece as the window does: clean/corrupted where the prompts
    // differ, with the word start as a middle dot (one spelling in every front end).
    EXPECT_TRUE(r.out.contains(QStringLiteral("'\u00b7Elizabeth/\u00b7Darcy'"))) << show(r);
    EXPECT_FALSE(r.out.contains(QChar(0x2581))) << show(r);
    // A piece typed as the front ends spell it ("·she") is the same piece as "she" and "▁she".
    QStringList dotted = args;
    dotted[dotted.indexOf(QStringLiteral("she"))] = QStringLiteral("\u00b7she");
    const GwbResult r0 = runGwb(dotted + QStringList{"--out", zero, "--min-difference", "0"});
    ASSERT_EQ(r0.code, 0) << show(r0);
    EXPECT_FALSE(r0.out.startsWith(QStringLiteral("note:"))) << show(r0);
    EXPECT_EQ(readNpz(zero).meta["effect_defined"], true);
    EXPECT_EQ(readNpz(zero).at("clean_metric").values<double>()[0], z.at("clean_metric").values<double>()[0]);
    const GwbResult bad = runGwb(args + QStringList{"--out", dir.filePath("b.npz"), "--min-difference", "-1"});
    EXPECT_EQ(bad.code, 1);
    EXPECT_TRUE(
        bad.err.contains(QStringLiteral("min_difference (--min-difference) must be a number, at least 0; got -1")))
        << show(bad);
    EXPECT_FALSE(QFileInfo::exists(dir.filePath("b.npz")));
}

TEST(PatchCli, BadInputExitsNonZeroNamingTheProblemAndWritesNothing) {
    QTemporaryDir dir;
    const QString out = dir.filePath("bad.npz"), csv = dir.filePath("bad.csv");
    const QString g = testModels().grassmann, t = testModels().transformer;
    const QStringList metric = {"--answer", "her", "--wrong", "the"};
    struct Case {
        QString model;
        QStringList args;
        QStringList expect; ///< substrings of the message
    };
    const std::vector<Case> cases = {
        {g,
         QStringList{"--corrupt", "emma is a truth universally", "--site", "resid"} + metric,
         {"different lengths", "clean 4 tokens", "corrupted 5 tokens", "token 1", "'was' vs 'is'"}},
        {g,
         {"--corrupt", kCorrupt, "--answer", "zebra", "--wrong", "the", "--site", "resid"},
         {"'zebra' is not in the vocabulary", "5 pieces"}},
        {t, {"--site", "gate", "--mode", "zero"}, {"'gate' does not exist in a Transformer model", "head"}},
        {g, {"--site", "head", "--mode", "zero"}, {"'head' does not exist in a Grassmann model", "offset"}},
        {g,
         {"--site", "offset", "--mode", "zero", "--layer", "0", "--offset", "3"},
         {"offset 3 is not an offset of layer 0", "1, 2"}},
        {t, {"--site", "head", "--mode", "zero", "--head", "2"}, {"head 2 is out of range", "2 heads"}},
        {g,
         QStringList{"--corrupt", kCorrupt, "--site", "resid", "--position", "9"} + metric,
         {"position 9 is outside the prompt", "0..3"}},
        {g, {"--site", "resid", "--mode", "patch"}, {"corrupted prompt"}},
        {g, QStringList{"--corrupt", kCorrupt, "--site", "resid"}, {"answer piece and a wrong piece"}},
        {g, {"--site", "nowhere", "--mode", "zero"}, {"nowhere"}},
        {g, {"--site", "resid", "--mode", "zero", "--layer", "7"}, {"layer 7 is out of range"}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.args.join(' ').toStdString());
        const GwbResult r = runGwb(patchArgs(c.model, out) + c.args + QStringList{"--data", csv});
        EXPECT_NE(r.code, 0) << show(r);
        EXPECT_NE(r.code, -1) << show(r); // a message, not a crash
        for (const QString& e : c.expect)
            EXPECT_TRUE(r.err.contains(e)) << e.toStdString() << "\n" << show(r);
        EXPECT_FALSE(QFileInfo::exists(out));
        EXPECT_FALSE(QFileInfo::exists(csv));
    }
    // An unwritable destination is refused before any work.
    const GwbResult r = runGwb(patchArgs(g, QStringLiteral("/nonexistent-folder/p.npz")) +
                               QStringList{"--site", "resid", "--mode", "zero"});
    EXPECT_NE(r.code, 0);
    EXPECT_TRUE(r.err.contains(QStringLiteral("does not exist"))) << show(r);
}

TEST(PatchCli, HelpAndTheBundledModelWords) {
    const GwbResult help = runGwb({QStringLiteral("--help")});
    EXPECT_TRUE(help.out.contains(QStringLiteral("patch"))) << show(help);
    const GwbResult own = runGwb({QStringLiteral("patch"), QStringLiteral("--help")});
    EXPECT_EQ(own.code, 0);
    for (const char* opt : {"--clean", "--corrupt", "--answer", "--wrong", "--site", "--mode", "--position", "--data"})
        EXPECT_TRUE(own.out.contains(QLatin1String(opt))) << opt;
    // --model transformer names the bundled baseline (found through GWB_MODELS_DIR).
    const QString bundled = QStringLiteral(GWB_SOURCE_DIR "/resources/models");
    if (!QFileInfo::exists(bundled + "/transformer-austen.gwb")) GTEST_SKIP() << "no bundled models in this checkout";
    QTemporaryDir dir;
    QProcess p;
    QProcessEnvironment env = gwb::app::test::gwbEnvironment();
    env.insert(QStringLiteral("GWB_MODELS_DIR"), bundled);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(GWB_EXECUTABLE),
            {"patch", "--model", "transformer", "--clean", "Elizabeth smiled", "--site", "head", "--mode", "zero",
             "--out", dir.filePath("b.npz"), "--threads", "1"});
    ASSERT_TRUE(p.waitForFinished(120000));
    EXPECT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
    EXPECT_TRUE(QString::fromUtf8(p.readAllStandardOutput()).contains(QStringLiteral("(Transformer)")));
}

TEST(PatchCli, FigureViewPatchingDrawsBothModelsAndRefusesBadInput) {
    QTemporaryDir dir;
    const QString png = dir.filePath("patching.png");
    const QStringList base = {"figure",
                              "--view",
                              "patching",
                              "--model",
                              testModels().grassmann,
                              "--baseline",
                              testModels().transformer,
                              "--prompt",
                              kClean,
                              "--device",
                              "cpu",
                              "--dpi",
                              "60"};
    const GwbResult r = runGwb(base + QStringList{"--corrupt", kCorrupt, "--answer", "her", "--wrong", "the", "--site",
                                                  "offset", "--out", png, "--data", dir.filePath("patching")});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(QFileInfo(png).size() > 1000);
    EXPECT_TRUE(QFileInfo::exists(dir.filePath("patching_patching_grassmann_offset_effect.csv"))) << show(r);
    EXPECT_TRUE(QFileInfo::exists(dir.filePath("patching_patching_transformer_head_effect.csv"))) << show(r);
    const QString bad = dir.filePath("bad.png");
    const GwbResult lengths = runGwb(base + QStringList{"--corrupt", "emma is a truth universally", "--answer", "her",
                                                        "--wrong", "the", "--out", bad});
    EXPECT_NE(lengths.code, 0);
    EXPECT_TRUE(lengths.err.contains(QStringLiteral("different lengths"))) << show(lengths);
    EXPECT_FALSE(QFileInfo::exists(bad));
    const GwbResult stray = runGwb({"figure", "--view", "gate", "--model", testModels().grassmann, "--prompt", kClean,
                                    "--corrupt", kCorrupt, "--out", bad});
    EXPECT_NE(stray.code, 0);
    EXPECT_TRUE(stray.err.contains(QStringLiteral("only apply to --view patching"))) << show(stray);
}

TEST(PatchCli, TheWindowsSiteOffsetSlashHeadIsAcceptedToo) {
    // The window and gwb figure call the paired site offset/head; gwb patch took only offset or
    // head. Now the one spelling works everywhere: each model runs its own of the two.
    QTemporaryDir dir;
    for (const auto& [model, site] : {std::pair{testModels().grassmann, std::string("offset")},
                                      std::pair{testModels().transformer, std::string("head")}}) {
        const QString out = dir.filePath(QString::fromStdString(site) + ".npz");
        const GwbResult r = runGwb(patchArgs(model, out) + QStringList{"--site", "offset/head", "--mode", "zero"});
        ASSERT_EQ(r.code, 0) << show(r);
        EXPECT_EQ(readNpz(out).meta["site"], site);
    }
}

TEST(PatchCli, SigtermWritesThePartialSweepAndResumeFinishesIt) {
    // SIGTERM (a scheduler's time limit) stopped a sweep and lost it. Now the cells done are
    // written, marked complete: false with exit status 143, and --resume computes only the rest:
    // the result equals an uninterrupted run. A real signal to the running process.
    QTemporaryDir dir;
    const QString model = QStringLiteral(GWB_SOURCE_DIR "/resources/models/grassmann-austen.gwb");
    QString prompt;
    for (const QString& name : QDir(QStringLiteral(GWB_SOURCE_DIR "/resources/prompts")).entryList({"*.txt"})) {
        QFile f(QStringLiteral(GWB_SOURCE_DIR "/resources/prompts/") + name);
        ASSERT_TRUE(f.open(QIODevice::ReadOnly));
        prompt += QString::fromUtf8(f.readAll()).simplified() + QLatin1Char(' ');
    }
    prompt = prompt.left(1500);
    const QString part = dir.filePath(QStringLiteral("part.npz")), full = dir.filePath(QStringLiteral("full.npz"));
    const QStringList args = {"patch",  "--model", model,      "--clean", prompt,      "--site", "resid",
                              "--mode", "zero",    "--device", "cpu",     "--threads", "1"};
    QProcess p;
    p.setProcessEnvironment(gwb::app::test::gwbEnvironment());
    p.start(QStringLiteral(GWB_EXECUTABLE), args + QStringList{"--out", part});
    ASSERT_TRUE(p.waitForStarted());
    // The first progress line comes 2 s into the sweep (then every 30 s into a file).
    QByteArray err;
    while (!err.contains("sweep ") && p.state() == QProcess::Running) {
        p.waitForReadyRead(100);
        err += p.readAllStandardError();
    }
    ASSERT_EQ(p.state(), QProcess::Running) << err.toStdString();
    ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
    ASSERT_TRUE(p.waitForFinished(60000));
    EXPECT_EQ(p.exitCode(), 143) << p.readAllStandardError().toStdString();
    EXPECT_TRUE(p.readAllStandardOutput().contains("stopped by SIGTERM"));
    const Npz stopped = readNpz(part);
    EXPECT_EQ(stopped.meta["complete"], false);
    EXPECT_EQ(stopped.meta["stopped_by"], "SIGTERM");
    const auto computed = stopped.at("computed").values<int64_t>();
    const int64_t done = std::accumulate(computed.begin(), computed.end(), int64_t{0});
    EXPECT_GT(done, 0);
    EXPECT_LT(done, static_cast<int64_t>(computed.size()));

    const GwbResult resumed = runGwb(args + QStringList{"--out", part, "--resume", part});
    ASSERT_EQ(resumed.code, 0) << show(resumed);
    EXPECT_TRUE(resumed.err.contains(QStringLiteral("resuming")));
    const GwbResult whole = runGwb(args + QStringList{"--out", full});
    ASSERT_EQ(whole.code, 0) << show(whole);
    const Npz a = readNpz(part), b = readNpz(full);
    EXPECT_EQ(a.meta["complete"], true);
    for (const char* name : {"mean_delta_logprob", "delta_logprob"}) {
        const auto x = a.at(name).values<double>(), y = b.at(name).values<double>();
        ASSERT_EQ(x.size(), y.size());
        for (size_t i = 0; i < x.size(); ++i)
            ASSERT_TRUE((std::isnan(x[i]) && std::isnan(y[i])) || x[i] == y[i]) << name << " " << i;
    }
    // A file of another sweep is refused, naming the difference, and nothing is written.
    const GwbResult other = runGwb(QStringList{"patch", "--model", model, "--clean", prompt, "--site", "ffn", "--mode",
                                               "zero", "--out", dir.filePath("x.npz"), "--resume", full});
    EXPECT_EQ(other.code, 1);
    EXPECT_TRUE(other.err.contains(QStringLiteral("different sweep"))) << other.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(dir.filePath("x.npz")));
}
