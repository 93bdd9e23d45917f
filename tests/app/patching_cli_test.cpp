// `gwb patch` and `gwb figure --view patching` as processes of the real executable on the small
// test models: the NPZ holds the documented arrays with the values causality demands (patching
// the only differing token's embedding gives the clean run; the last block's output at the metric
// position gives the clean metric; elsewhere the corrupted one), the CSV has one row per cell,
// and bad input exits non-zero with a message naming the problem and writes nothing.

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
#include "test_models.h"

using gwb::app::test::GwbResult;
using gwb::app::test::runGwb;
using gwb::app::test::show;
using gwb::app::test::testModels;

namespace {

const QString kClean = QStringLiteral("emma was in the");
const QString kCorrupt = QStringLiteral("she was in the");

struct Npz {
    std::map<std::string, gwb::engine::NpyArray> arrays;
    nlohmann::json meta;
    const gwb::engine::NpyArray& at(const std::string& name) const { return arrays.at(name); }
};

Npz readNpz(const QString& path) {
    Npz out;
    for (const auto& [name, bytes] : gwb::engine::readZipStored(gwb::engine::readBinaryFile(path.toStdString()))) {
        if (name == "meta.json")
            out.meta = nlohmann::json::parse(std::string(bytes.begin(), bytes.end()));
        else
            out.arrays[name.substr(0, name.size() - 4)] = gwb::engine::parseNpy(bytes);
    }
    return out;
}

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

int lines(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? static_cast<int>(f.readAll().count('\n')) : -1;
}

} // namespace

TEST(PatchCli, ResidPatchingWritesTheArraysWithTheValuesCausalityDemands) {
    QTemporaryDir dir;
    const QString out = dir.filePath("p.npz"), csv = dir.filePath("p.csv");
    const GwbResult r =
        runGwb(patchArgs(testModels().grassmann, out) + QStringList{"--corrupt", kCorrupt, "--answer", "her", "--wrong",
                                                                    "the", "--site", "resid", "--data", csv});
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
    EXPECT_TRUE(r.out.contains(QStringLiteral("the clean and corrupted metrics are equal"))) << show(r);
    EXPECT_TRUE(r.out.contains(QStringLiteral("undefined"))) << show(r);
    const Npz z = readNpz(out);
    EXPECT_EQ(z.at("effect").shape, (std::vector<int64_t>{2, 2})); // layers x heads
    for (double e : z.at("effect").values<double>())
        EXPECT_TRUE(std::isnan(e));
    EXPECT_EQ(z.meta["effect_defined"], false);
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
                                                  "offset", "--out", png, "--data", dir.filePath("patching.csv")});
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

namespace {
/// A pairs file for the test vocabulary: two lengths, with and without a position, plus lines
/// that cannot be used.
QString writePairs(const QString& path, bool csv) {
    struct P {
        const char *clean, *corrupt, *answer, *wrong;
        int position;
    };
    const std::vector<P> pairs = {
        {"emma was in the", "she was in the", "her", "the", -1},
        {"it is a truth that emma was in the", "it is a truth that she was in the", "her", "the", -1},
        {"emma had a man", "she had a man", "the", "her", -1},
        {"it is the single man that was in the", "it is a single man that was in the", "her", "of", 6},
        {"emma was in the", "she was in the the", "her", "the", -1}, // lengths differ
        {"emma was in the", "she was in the", "zebra", "the", -1}};  // not a piece
    QString text = csv ? QStringLiteral("clean,corrupt,answer,wrong,position,kind\n") : QString();
    for (const P& p : pairs) {
        if (csv)
            text += QStringLiteral("%1,%2,%3,%4,%5,t\n")
                        .arg(p.clean, p.corrupt, p.answer, p.wrong,
                             p.position >= 0 ? QString::number(p.position) : QString());
        else
            text += QStringLiteral("{\"clean\": \"%1\", \"corrupt\": \"%2\", \"answer\": \"%3\", \"wrong\": \"%4\"%5, "
                                   "\"kind\": \"t\"}\n")
                        .arg(p.clean, p.corrupt, p.answer, p.wrong,
                             p.position >= 0 ? QStringLiteral(", \"position\": %1").arg(p.position) : QString());
    }
    if (!csv) text += QStringLiteral("{\"clean\": \"oops\"\n");
    QFile f(path);
    if (f.open(QIODevice::WriteOnly)) f.write(text.toUtf8());
    return path;
}
} // namespace

TEST(PatchPairsCli, EachPairEqualsItsOwnRunAndTheMeanIsTheirMean) {
    // gwb patch --pairs: every usable pair's metric equals a single-pair gwb patch of it, columns
    // aligned at the metric position; effect_mean is the mean of the pairs' effects; unusable lines
    // are reported with their numbers; CSV gives the same result as JSONL.
    QTemporaryDir dir;
    const QString g = testModels().grassmann;
    const QString jsonl = writePairs(dir.filePath("p.jsonl"), false), csv = writePairs(dir.filePath("p.csv"), true);
    const QString out = dir.filePath("pairs.npz"), tidy = dir.filePath("pairs.csv");
    const QStringList common = {"patch", "--model", g, "--site", "resid", "--device", "cpu", "--threads", "1"};
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
               high = z.at("effect_ci_high").values<double>();
    const auto n = z.at("effect_n").values<int64_t>();
    for (size_t cell = 0; cell < 27; ++cell) {
        double sum = 0;
        int64_t k = 0;
        for (size_t p = 0; p < 4; ++p)
            if (std::isfinite(ev[p * 27 + cell])) {
                sum += ev[p * 27 + cell];
                ++k;
            }
        EXPECT_EQ(n[cell], k) << cell;
        if (k == 0) {
            EXPECT_TRUE(std::isnan(mean[cell]));
            continue;
        }
        EXPECT_NEAR(mean[cell], sum / static_cast<double>(k), 1e-12) << cell;
        EXPECT_LE(low[cell], mean[cell] + 1e-12) << cell;
        EXPECT_GE(high[cell], mean[cell] - 1e-12) << cell;
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
    EXPECT_EQ(zc.at("effect_ci_low").values<double>(), low);
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
    // pair alone; effect_mean is their mean; unusable lines are reported.
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
    const auto effect = z.at("effect").values<double>(), mean = z.at("effect_mean").values<double>();
    for (size_t i = 0; i < cells; ++i) {
        double sum = 0;
        int n = 0;
        for (size_t p = 0; p < 4; ++p)
            if (std::isfinite(effect[p * cells + i])) {
                sum += effect[p * cells + i];
                ++n;
            }
        if (n > 0) {
            EXPECT_NEAR(mean[i], sum / n, 1e-12) << i;
        }
    }
}
