// The Corpus view in the app: File > Open Statistics on a file made by the real `gwb stats` on
// the tiny test models, clear errors for broken or foreign files, Run > Corpus on the worker
// thread (and a cancelled run's partial file), and `gwb figure --stats ... --view corpus`.

#include "gui/corpus_dialog.h"
#include "gui/corpus_job.h"
#include "gui/main_window.h"
#include "gui/prompt_panel.h"

#include "app_test_util.h"
#include "test_models.h"

#include "gwb/views/corpus_view.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QSignalSpy>
#include <QSvgRenderer>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include "gwb_process.h"

using gwb::app::test::GwbResult;
using gwb::app::test::runGwb;
using gwb::app::test::show;
using gwb::app::test::writeText;

using gwb::app::test::promptOfTokens;
using gwb::app::test::testModels;

namespace {

/// Statistics from the real `gwb stats` on the test models (made once per test binary).
const QString& statsFile() {
    static QTemporaryDir dir;
    static const QString path = [] {
        const QString text = dir.filePath(QStringLiteral("corpus.txt"));
        writeText(text, promptOfTokens(120).toUtf8());
        const QString out = dir.filePath(QStringLiteral("S.npz"));
        const GwbResult r =
            runGwb({QStringLiteral("stats"), QStringLiteral("--model"), testModels().grassmann,
                    QStringLiteral("--baseline"), testModels().transformer, QStringLiteral("--data"), text,
                    QStringLiteral("--window"), QStringLiteral("16"), QStringLiteral("--stride"), QStringLiteral("16"),
                    QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--out"), out});
        EXPECT_EQ(r.code, 0) << r.err.toStdString();
        return out;
    }();
    return path;
}

gwb::app::MainWindowOptions testOptions() {
    gwb::app::MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    o.sampleOnFirstStart = false;
    return o;
}

} // namespace

TEST(CorpusApp, OpeningStatisticsClearsAnEarlierPromptFilesError) {
    // Issue 67: the error of a prompt file that was not UTF-8 stayed above the prompt after
    // statistics and a dictionary had been opened, as if it were about them.
    gwb::app::test::ensureApp();
    gwb::app::MainWindow w(testOptions());
    QTemporaryDir dir;
    QFile bad(dir.filePath(QStringLiteral("latin1.txt")));
    ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
    bad.write("caf\xe9 au lait");
    bad.close();
    EXPECT_FALSE(w.openPromptFile(bad.fileName()).isEmpty());
    auto* panel = w.findChild<gwb::app::PromptPanel*>();
    ASSERT_TRUE(panel);
    EXPECT_EQ(panel->noticeKind(), QStringLiteral("error"));
    EXPECT_TRUE(panel->notice().contains(QStringLiteral("UTF-8"))) << panel->notice().toStdString();
    ASSERT_EQ(w.openStatistics(statsFile()), QString());
    EXPECT_TRUE(panel->noticeKind().isEmpty()) << panel->notice().toStdString();
}

TEST(CorpusApp, OpenStatisticsShowsTheFileInTheCorpusView) {
    gwb::app::test::ensureApp();
    gwb::app::MainWindow w(testOptions());
    ASSERT_EQ(w.openStatistics(statsFile()), QString());
    auto* v = qobject_cast<gwb::views::CorpusView*>(w.view(QStringLiteral("corpus")));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(w.currentViewId(), QStringLiteral("corpus"));
    ASSERT_TRUE(v->hasContent());
    const auto& stats = *w.workbenchData().corpus;
    EXPECT_GT(stats.windows.size(), 3u);
    EXPECT_TRUE(stats.complete);
    const QStringList keys = gwb::views::CorpusView::quantityKeys(stats);
    for (const char* k : {"surprisal", "gate_mean", "attn_entropy", "lens_rank", "compare.influence_attention_js"})
        EXPECT_TRUE(keys.contains(QLatin1String(k))) << k;
    // Both models side by side, one box per layer, numbers from the file.
    v->setQuantity(QStringLiteral("lens_rank"));
    const auto chart = v->distributionChart();
    ASSERT_EQ(chart.series.size(), 2u);
    EXPECT_EQ(chart.series[0].name, QStringLiteral("Grassmann"));
    EXPECT_EQ(chart.series[1].name, QStringLiteral("Transformer"));
    const auto& lr = stats.quantities.at("model.lens_rank");
    ASSERT_EQ(static_cast<int64_t>(chart.series[0].boxes.size()), lr.groupShape[0]);
    EXPECT_EQ(chart.series[0].boxes[1].n, lr.n[1]);
    EXPECT_NEAR(chart.series[0].boxes[1].mean, lr.mean(1), 1e-12);
    EXPECT_TRUE(v->headerText().contains(QStringLiteral("%1 of %1 windows covered").arg(stats.windows.size())))
        << v->headerText().toStdString();
    // A prompt run later keeps the statistics (they do not belong to the prompt).
    EXPECT_FALSE(v->dataTables().empty());
    // Export from the window.
    QTemporaryDir dir;
    EXPECT_TRUE(w.exportFigureTo(dir.filePath(QStringLiteral("c.svg")), QStringLiteral("corpus")));
    EXPECT_TRUE(QSvgRenderer(dir.filePath(QStringLiteral("c.svg"))).isValid());
}

TEST(CorpusApp, BrokenOrForeignFilesGiveAClearError) {
    gwb::app::test::ensureApp();
    gwb::app::MainWindow w(testOptions());
    QTemporaryDir dir;
    const QString garbage = dir.filePath(QStringLiteral("broken.npz"));
    writeText(garbage, "PK\x03\x04 this is not a zip archive");
    const QString missing = dir.filePath(QStringLiteral("missing.npz"));
    for (const QString& path : {garbage, testModels().notAModel, missing}) {
        SCOPED_TRACE(path.toStdString());
        const QString e = w.openStatistics(path);
        EXPECT_TRUE(e.startsWith(QStringLiteral("Cannot open statistics"))) << e.toStdString();
        EXPECT_TRUE(e.contains(QFileInfo(path).fileName())) << e.toStdString();
        EXPECT_EQ(w.statusText(), e);
        EXPECT_EQ(w.workbenchData().corpus, nullptr);
    }
    // A model file is an NPZ-like zip but not statistics: named as such.
    const QString e = w.openStatistics(testModels().grassmann);
    EXPECT_FALSE(e.isEmpty());
    EXPECT_TRUE(e.contains(QStringLiteral("statistics"))) << e.toStdString();
}

TEST(CorpusApp, RunCorpusOnTheWorkerThreadOpensTheResult) {
    gwb::app::test::ensureApp();
    gwb::app::MainWindow w(testOptions());
    w.setModelPaths(testModels().grassmann, testModels().transformer);
    QTemporaryDir dir;
    const QString text = dir.filePath(QStringLiteral("t.txt"));
    writeText(text, promptOfTokens(80).toUtf8());
    gwb::app::CorpusRequest r = w.corpusRequest();
    r.files = {text, dir.filePath(QStringLiteral("absent.txt"))};
    r.window = 12;
    r.stride = 12;
    r.maxWindows = 4;
    r.threads = 1;
    r.outPath = dir.filePath(QStringLiteral("run.npz"));
    QSignalSpy done(&w, &gwb::app::MainWindow::corpusFinished);
    ASSERT_TRUE(w.runCorpus(r));
    EXPECT_TRUE(w.isCorpusRunning());
    EXPECT_FALSE(w.runCorpus(r)); // one at a time
    ASSERT_TRUE(done.wait(60000));
    EXPECT_FALSE(w.isCorpusRunning());
    EXPECT_EQ(done.front().front().toString(), r.outPath);
    ASSERT_NE(w.workbenchData().corpus, nullptr);
    EXPECT_EQ(w.workbenchData().corpus->windows.size(), 4u);
    ASSERT_EQ(w.workbenchData().corpus->skipped.size(), 1u); // the missing file is reported, not fatal
    EXPECT_TRUE(w.statusText().contains(QStringLiteral("skipped"))) << w.statusText().toStdString();
    EXPECT_TRUE(w.view(QStringLiteral("corpus"))->hasContent());
    EXPECT_EQ(gwb::engine::CorpusStats::read(r.outPath.toStdString()).windows.size(), 4u);
    // A bad request starts nothing and says why.
    r.files.clear();
    QSignalSpy failed(&w, &gwb::app::MainWindow::corpusFailed);
    EXPECT_FALSE(w.runCorpus(r));
    ASSERT_EQ(failed.size(), 1);
    EXPECT_TRUE(w.statusText().contains(QStringLiteral("text file"))) << w.statusText().toStdString();
}

TEST(CorpusApp, AModelProbeFinishingLaterDoesNotHideANewerMessage) {
    // The probes that setModelPaths starts report on a worker; a message posted meanwhile (here
    // an error opening statistics) must stay on the status bar. Before the fix the probe's
    // "Baseline model: ..." replaced a finished corpus run's "skipped" line now and then.
    gwb::app::test::ensureApp();
    gwb::app::MainWindow w(testOptions());
    QSignalSpy changed(&w, &gwb::app::MainWindow::modelsChanged);
    w.setModelPaths(testModels().grassmann, testModels().transformer);
    ASSERT_EQ(changed.size(), 1); // the paths; each probe adds one more when it reports
    QTemporaryDir dir;
    const QString e = w.openStatistics(dir.filePath(QStringLiteral("missing.npz")));
    ASSERT_FALSE(e.isEmpty());
    while (changed.size() < 3)
        ASSERT_TRUE(changed.wait(60000));
    EXPECT_EQ(w.statusText().toStdString(), e.toStdString());
    // With nothing newer, a probe's news is shown.
    gwb::app::MainWindow fresh(testOptions());
    QSignalSpy freshChanged(&fresh, &gwb::app::MainWindow::modelsChanged);
    fresh.setModelPaths(testModels().grassmann, testModels().transformer);
    while (freshChanged.size() < 3)
        ASSERT_TRUE(freshChanged.wait(60000));
    EXPECT_TRUE(fresh.statusText().contains(QStringLiteral(" model: "))) << fresh.statusText().toStdString();
}

TEST(CorpusApp, CancelLeavesAValidPartialFile) {
    QTemporaryDir dir;
    const QString text = dir.filePath(QStringLiteral("t.txt"));
    writeText(text, promptOfTokens(100).toUtf8());
    gwb::app::CorpusRequest r;
    r.grassmannPath = testModels().grassmann;
    r.baselinePath = testModels().transformer;
    r.files = {text};
    r.window = 8;
    r.stride = 8;
    r.threads = 1;
    r.outPath = dir.filePath(QStringLiteral("partial.npz"));
    gwb::app::ModelCache cache;
    std::atomic<bool> cancel{false};
    std::vector<QString> lines;
    const gwb::app::CorpusOutcome o =
        gwb::app::runCorpusJob(r, cache, cancel, [&](const gwb::engine::CorpusProgress& p) {
            lines.push_back(gwb::app::corpusProgressText(p));
            if (p.windowsDone >= 2) cancel.store(true); // Cancel pressed during the second window
        });
    ASSERT_EQ(o.status, gwb::app::CorpusOutcome::Status::Cancelled) << o.message.toStdString();
    ASSERT_FALSE(lines.empty());
    EXPECT_TRUE(lines.front().contains(QStringLiteral("tokens/s"))) << lines.front().toStdString();
    EXPECT_TRUE(lines.front().contains(QStringLiteral("ETA"))) << lines.front().toStdString();
    const auto s = gwb::engine::CorpusStats::read(r.outPath.toStdString());
    EXPECT_FALSE(s.complete);
    // The two done plus the one in flight when Cancel was seen (its forward passes had run).
    EXPECT_EQ(s.windows.size(), 3u);
    EXPECT_GT(s.windowsPlanned, 2);
}

// Issue 31: SIGTERM (what Slurm sends at a time limit) stops gwb stats like Ctrl-C: the windows
// done are written, marked partial, the exit status is 143, and --resume carries on to the same
// result as an uninterrupted run. Tested with a real signal to the running process.
TEST(CorpusApp, StatsStoppedBySigtermWritesItsWindowsAndResumes) {
    QTemporaryDir dir;
    const QString text = dir.filePath(QStringLiteral("corpus.txt"));
    writeText(text, promptOfTokens(48000).toUtf8()); // a few seconds of windows: time to be stopped
    const QStringList common{QStringLiteral("stats"),
                             QStringLiteral("--model"),
                             testModels().grassmann,
                             QStringLiteral("--baseline"),
                             QStringLiteral("none"),
                             QStringLiteral("--data"),
                             text,
                             QStringLiteral("--window"),
                             QStringLiteral("16"),
                             QStringLiteral("--stride"),
                             QStringLiteral("16"),
                             QStringLiteral("--threads"),
                             QStringLiteral("1")};
    const QString partial = dir.filePath(QStringLiteral("partial.npz"));
    QProcess p;
    p.setProcessEnvironment(gwb::app::test::gwbEnvironment());
    p.start(QStringLiteral(GWB_EXECUTABLE), common + QStringList{QStringLiteral("--out"), partial});
    ASSERT_TRUE(p.waitForStarted());
    p.setReadChannel(QProcess::StandardError); // waitForReadyRead waits on this channel
    // Into a file (not a terminal) progress comes as whole lines: the first at once.
    QByteArray err;
    while (!err.contains("windows ") && p.state() == QProcess::Running && p.waitForReadyRead(60000))
        err += p.readAllStandardError();
    ASSERT_TRUE(err.contains("windows ")) << err.toStdString();
    EXPECT_FALSE(err.contains('\r')) << "progress into a file must not use carriage returns";
    p.terminate(); // SIGTERM
    ASSERT_TRUE(p.waitForFinished(60000));
    const QString out = QString::fromLocal8Bit(p.readAllStandardOutput());
    err += p.readAllStandardError();
    ASSERT_EQ(p.exitStatus(), QProcess::NormalExit) << err.toStdString();
    EXPECT_EQ(p.exitCode(), 143) << out.toStdString() << err.toStdString();
    EXPECT_TRUE(out.contains(QStringLiteral("partial: stopped by SIGTERM"))) << out.toStdString();
    EXPECT_TRUE(QFileInfo::exists(partial));

    // --resume: the rest of the windows, merged with the partial file.
    const QString resumed = dir.filePath(QStringLiteral("resumed.npz"));
    const GwbResult r =
        runGwb(common + QStringList{QStringLiteral("--resume"), partial, QStringLiteral("--out"), resumed});
    ASSERT_EQ(r.code, 0) << show(r);
    EXPECT_TRUE(r.err.contains(QStringLiteral("resuming:"))) << show(r);
    const GwbResult full = runGwb(common + QStringList{QStringLiteral("--out"), dir.filePath(QStringLiteral("f.npz"))});
    ASSERT_EQ(full.code, 0) << show(full);
    auto line = [](const QString& s, const QString& start) {
        for (const QString& l : s.split(QLatin1Char('\n')))
            if (l.startsWith(start)) return l;
        return QString();
    };
    EXPECT_EQ(line(r.out, QStringLiteral("windows:")), line(full.out, QStringLiteral("windows:"))) << show(r);
    EXPECT_FALSE(line(full.out, QStringLiteral("model bits per character")).isEmpty()) << show(full);
    EXPECT_EQ(line(r.out, QStringLiteral("model bits per character")),
              line(full.out, QStringLiteral("model bits per character")));
}

TEST(CorpusApp, FigureCommandDrawsStatistics) {
    QTemporaryDir dir;
    for (const char* ext : {"png", "svg"}) {
        const QString out = dir.filePath(QStringLiteral("corpus.") + QLatin1String(ext));
        const GwbResult r =
            runGwb({QStringLiteral("figure"), QStringLiteral("--stats"), statsFile(), QStringLiteral("--view"),
                    QStringLiteral("corpus"), QStringLiteral("--quantity"), QStringLiteral("model.gate_mean"),
                    QStringLiteral("--dpi"), QStringLiteral("100"), QStringLiteral("--out"), out,
                    QStringLiteral("--data"), dir.filePath(QStringLiteral("gate"))});
        ASSERT_EQ(r.code, 0) << r.err.toStdString();
        if (QLatin1String(ext) == QLatin1String("png")) {
            const QImage img(out);
            ASSERT_FALSE(img.isNull());
            EXPECT_EQ(img.width(), 350); // 3.5 in at 100 dpi
        } else {
            EXPECT_TRUE(QSvgRenderer(out).isValid());
        }
    }
    EXPECT_TRUE(QFile::exists(dir.filePath(QStringLiteral("gate_gate_mean_summary.csv"))));
    EXPECT_TRUE(QFile::exists(dir.filePath(QStringLiteral("gate.json"))));
    // Clear errors: unknown quantity (with the list), a broken file, no --stats.
    const QString out = dir.filePath(QStringLiteral("x.png"));
    GwbResult r = runGwb({QStringLiteral("figure"), QStringLiteral("--stats"), statsFile(), QStringLiteral("--view"),
                          QStringLiteral("corpus"), QStringLiteral("--quantity"), QStringLiteral("nope"),
                          QStringLiteral("--out"), out});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.contains(QStringLiteral("'nope' is not in"))) << r.err.toStdString();
    EXPECT_TRUE(r.err.contains(QStringLiteral("surprisal"))) << r.err.toStdString();
    r = runGwb({QStringLiteral("figure"), QStringLiteral("--stats"), testModels().notAModel, QStringLiteral("--view"),
                QStringLiteral("corpus"), QStringLiteral("--out"), out});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.contains(QStringLiteral("cannot open statistics"))) << r.err.toStdString();
    r = runGwb(
        {QStringLiteral("figure"), QStringLiteral("--view"), QStringLiteral("corpus"), QStringLiteral("--out"), out});
    EXPECT_EQ(r.code, 1);
    EXPECT_TRUE(r.err.contains(QStringLiteral("needs --stats"))) << r.err.toStdString();
    EXPECT_FALSE(QFile::exists(out));
}

TEST(CorpusApp, DialogErrorGoesWhenTheFieldsChange) {
    gwb::app::test::ensureApp();
    gwb::app::CorpusDialog dialog(QStringLiteral("the models"));
    auto* error = dialog.findChild<QLabel*>(QStringLiteral("corpusError"));
    auto* files = dialog.findChild<QListWidget*>(QStringLiteral("corpusFiles"));
    ASSERT_TRUE(error && files);
    dialog.accept(); // no files: refused with a message
    EXPECT_FALSE(error->isHidden());
    EXPECT_FALSE(error->text().isEmpty());
    files->addItem(QStringLiteral("/data/a.txt")); // the message may no longer hold
    EXPECT_TRUE(error->isHidden());
}
