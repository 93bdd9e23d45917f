// `gwb stats` and `gwb stats merge` as processes of the real executable on the tiny test models:
// two shards merged equal one run, a bad file is skipped, Ctrl-C leaves a readable partial file.

#include "test_models.h"

#include "gwb/engine/corpus_stats.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <csignal>

#include "gwb_process.h"

using gwb::app::test::GwbResult;
using gwb::app::test::promptOfTokens;
using gwb::app::test::runGwb;
using gwb::app::test::show;
using gwb::app::test::testModels;
using gwb::app::test::writeText;

namespace {

QStringList statsArgs(const QStringList& data, const QString& out) {
    QStringList a{QStringLiteral("stats"),
                  QStringLiteral("--model"),
                  testModels().grassmann,
                  QStringLiteral("--baseline"),
                  testModels().transformer,
                  QStringLiteral("--window"),
                  QStringLiteral("16"),
                  QStringLiteral("--stride"),
                  QStringLiteral("16"),
                  QStringLiteral("--threads"),
                  QStringLiteral("1"),
                  QStringLiteral("--out"),
                  out};
    for (const QString& d : data)
        a << QStringLiteral("--data") << d;
    return a;
}

} // namespace

TEST(CmdStats, ShardsMergeToTheUnshardedRunAndBadFilesAreSkipped) {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("a.txt")), bad = dir.filePath(QStringLiteral("bad.txt"));
    writeText(a, (promptOfTokens(200) + QLatin1Char('\n')).toUtf8());
    writeText(bad, QByteArray("it is \xff a truth"));
    const QStringList data{a, bad};
    const GwbResult one = runGwb(statsArgs(data, dir.filePath(QStringLiteral("one.npz"))));
    ASSERT_EQ(one.code, 0) << show(one);
    EXPECT_TRUE(one.err.contains(QStringLiteral("skipping"))) << show(one);
    EXPECT_TRUE(one.err.contains(QStringLiteral("tokens/s"))) << show(one);
    QStringList shards;
    for (int i = 0; i < 2; ++i) {
        shards << dir.filePath(QStringLiteral("s%1.npz").arg(i));
        const GwbResult r =
            runGwb(statsArgs(data, shards.back()) << QStringLiteral("--shard") << QStringLiteral("%1/2").arg(i));
        ASSERT_EQ(r.code, 0) << show(r);
    }
    const GwbResult m = runGwb(QStringList{QStringLiteral("stats"), QStringLiteral("merge")}
                               << shards << QStringLiteral("--out") << dir.filePath(QStringLiteral("m.npz")));
    ASSERT_EQ(m.code, 0) << show(m);
    EXPECT_TRUE(m.out.contains(QStringLiteral("(complete)"))) << show(m);
    using gwb::engine::CorpusStats;
    const CorpusStats s1 = CorpusStats::read(dir.filePath(QStringLiteral("one.npz")).toStdString());
    const CorpusStats sm = CorpusStats::read(dir.filePath(QStringLiteral("m.npz")).toStdString());
    ASSERT_GT(s1.windows.size(), 3u);
    EXPECT_EQ(sm.windows, s1.windows);
    ASSERT_EQ(s1.skipped.size(), 1u);
    for (const auto& [name, q] : s1.quantities) {
        EXPECT_EQ(sm.quantities.at(name).counts, q.counts) << name;
        for (int64_t g = 0; g < q.groups(); ++g)
            if (q.n[g]) {
                EXPECT_NEAR(sm.quantities.at(name).mean(g), q.mean(g), 1e-6) << name;
            }
    }
    const GwbResult twice = runGwb(QStringList{QStringLiteral("stats"), QStringLiteral("merge"), shards[0], shards[0],
                                               QStringLiteral("--out"), dir.filePath(QStringLiteral("x.npz"))});
    EXPECT_EQ(twice.code, 1) << show(twice);
    EXPECT_TRUE(twice.err.contains(QStringLiteral("covered by two"))) << show(twice);
}

TEST(CmdStats, CtrlCLeavesAReadablePartialFile) {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("big.txt"));
    QByteArray text;
    const QByteArray line = (promptOfTokens(400) + QLatin1Char('\n')).toUtf8();
    for (int i = 0; i < 400; ++i)
        text += line; // thousands of windows: far more than run before the signal arrives
    writeText(a, text);
    const QString out = dir.filePath(QStringLiteral("partial.npz"));
    QProcess p;
    p.setProcessEnvironment(gwb::app::test::gwbEnvironment());
    p.start(QStringLiteral(GWB_EXECUTABLE), statsArgs({a}, out));
    ASSERT_TRUE(p.waitForStarted());
    QByteArray err;
    // Into a file, progress is a line every 30 s (the first at once): wait for it, then a moment
    // for a few windows more.
    p.setReadChannel(QProcess::StandardError);
    while (!err.contains("windows ") && p.state() == QProcess::Running) {
        p.waitForReadyRead(200);
        err += p.readAllStandardError();
    }
    p.waitForFinished(1500);
    ASSERT_EQ(p.state(), QProcess::Running) << err.toStdString();
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    ASSERT_TRUE(p.waitForFinished(60000));
    EXPECT_EQ(p.exitCode(), 130) << p.readAllStandardError().toStdString();
    const auto s = gwb::engine::CorpusStats::read(out.toStdString());
    EXPECT_FALSE(s.complete);
    EXPECT_GE(s.windows.size(), 3u);
    EXPECT_LT(static_cast<int64_t>(s.windows.size()), s.windowsPlanned);
    EXPECT_EQ(s.quantities.at("model.gate_mean").n[0], static_cast<int64_t>(s.windows.size()) * 16);
}

// `--data dir/*.txt`: the shell's expansion puts every file after the first as a positional
// argument; they must all be read, as with one --data per file.
TEST(CmdStats, ShellGlobAfterDataReadsEveryFile) {
    QTemporaryDir dir;
    const QString a = dir.filePath(QStringLiteral("a.txt")), b = dir.filePath(QStringLiteral("b.txt"));
    writeText(a, (promptOfTokens(40) + QLatin1Char('\n')).toUtf8());
    writeText(b, (promptOfTokens(60) + QLatin1Char('\n')).toUtf8());
    const GwbResult each = runGwb(statsArgs({a, b}, dir.filePath(QStringLiteral("each.npz"))));
    ASSERT_EQ(each.code, 0) << show(each);
    const GwbResult glob = runGwb(statsArgs({a}, dir.filePath(QStringLiteral("glob.npz"))) + QStringList{b});
    ASSERT_EQ(glob.code, 0) << show(glob);
    const auto s1 = gwb::engine::CorpusStats::read(dir.filePath(QStringLiteral("each.npz")).toStdString());
    const auto s2 = gwb::engine::CorpusStats::read(dir.filePath(QStringLiteral("glob.npz")).toStdString());
    EXPECT_EQ(s2.files, s1.files);
    EXPECT_EQ(s2.files.size(), 2u);
    EXPECT_EQ(s2.windowsTotal, s1.windowsTotal);
    EXPECT_GT(s2.windowsTotal, 2); // both files' windows (16-token windows)
}

TEST(CmdStats, AnOptionOutOfRangeIsRefusedWithTheEnginesSentenceBeforeAnyWork) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString data = dir.filePath(QStringLiteral("d.txt"));
    writeText(data, promptOfTokens(40).toUtf8());
    const QString out = dir.filePath(QStringLiteral("s.npz"));
    const GwbResult stride = runGwb(statsArgs({data}, out) << QStringLiteral("--stride") << QStringLiteral("0"));
    EXPECT_EQ(stride.code, 1) << show(stride);
    EXPECT_TRUE(stride.err.contains(QStringLiteral("stride (--stride) must be an integer, at least 1; got 0")))
        << show(stride);
    const GwbResult shard = runGwb(statsArgs({data}, out) << QStringLiteral("--shard") << QStringLiteral("two"));
    EXPECT_EQ(shard.code, 1) << show(shard);
    EXPECT_TRUE(shard.err.contains(QStringLiteral("shard (--shard) is written i/n, e.g. 0/4; got 'two'")))
        << show(shard);
    const GwbResult past = runGwb(statsArgs({data}, out) << QStringLiteral("--shard") << QStringLiteral("2/2"));
    EXPECT_EQ(past.code, 1) << show(past);
    EXPECT_TRUE(past.err.contains(QStringLiteral("shard (--shard i/n) needs 0 <= i < n; got 2/2"))) << show(past);
    EXPECT_FALSE(QFile::exists(out));
}
