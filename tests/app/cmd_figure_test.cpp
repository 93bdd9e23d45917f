// `gwb figure` run as a process: figures and data come out, bad input gives a message and a
// non-zero exit, and the figure equals the window's export with the same settings.

#include "gui/main_window.h"

#include "app_test_util.h"
#include "patching_cli_util.h"
#include "test_models.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>

#include <gtest/gtest.h>

using gwb::app::test::testModels;

namespace {

struct Result {
    int code = -1;
    QString err;
};

Result gwbFigure(QStringList args) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("GWB_MODELS_DIR"), QStringLiteral("/nonexistent-gwb-models")); // no bundled fallback
    p.setProcessEnvironment(env);
    args.prepend(QStringLiteral("figure"));
    p.start(QStringLiteral(GWB_EXECUTABLE), args);
    if (!p.waitForFinished(120000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromLocal8Bit(p.readAllStandardError())};
}

QStringList models() {
    return {QStringLiteral("--model"), testModels().grassmann,      QStringLiteral("--baseline"),
            testModels().transformer,  QStringLiteral("--threads"), QStringLiteral("1")};
}

} // namespace

TEST(CmdFigure, WritesFigureAndData) {
    QTemporaryDir dir;
    const QString png = dir.filePath(QStringLiteral("gate.png"));
    const Result r =
        gwbFigure(models() + QStringList{QStringLiteral("--view"), QStringLiteral("gate"), QStringLiteral("--prompt"),
                                         QStringLiteral("it is a truth universally acknowledged"),
                                         QStringLiteral("--out"), png, QStringLiteral("--dpi"), QStringLiteral("100"),
                                         QStringLiteral("--data"), dir.filePath(QStringLiteral("gate"))});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    const QImage img(png);
    EXPECT_EQ(img.width(), 350); // 3.5 in at 100 DPI
    EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("gate.json"))));
}

TEST(CmdFigure, DataTakesAFolderOrAStemAndRefusesAFileName) {
    // --data angles.csv once wrote angles_<table>.csv and angles.json but never angles.csv: a file
    // name is refused, naming what would be written; a folder gets <view>_<table>.csv/.npy and
    // <view>.json inside it.
    QTemporaryDir dir;
    const QStringList base =
        models() + QStringList{QStringLiteral("--view"),   QStringLiteral("gate"),
                               QStringLiteral("--prompt"), QStringLiteral("it is a truth"),
                               QStringLiteral("--out"),    dir.filePath(QStringLiteral("gate.png")),
                               QStringLiteral("--dpi"),    QStringLiteral("60")};
    const Result named = gwbFigure(base + QStringList{QStringLiteral("--data"), dir.filePath(QStringLiteral("g.csv"))});
    EXPECT_NE(named.code, 0);
    EXPECT_TRUE(named.err.contains(QStringLiteral("--data takes a folder or a stem"))) << named.err.toStdString();
    EXPECT_TRUE(named.err.contains(QStringLiteral("g_<table>.csv/.npy"))) << named.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(dir.filePath(QStringLiteral("gate.png")))) << "refused before drawing";

    const QString folder = dir.filePath(QStringLiteral("numbers")) + QLatin1Char('/');
    const Result inFolder = gwbFigure(base + QStringList{QStringLiteral("--data"), folder});
    ASSERT_EQ(inFolder.code, 0) << inFolder.err.toStdString();
    EXPECT_TRUE(QFileInfo::exists(folder + QStringLiteral("gate.json")));
    const QJsonObject meta = QJsonDocument::fromJson([&] {
                                 QFile f(folder + QStringLiteral("gate.json"));
                                 return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
                             }())
                                 .object();
    ASSERT_FALSE(meta.value(QStringLiteral("arrays")).toArray().isEmpty());
    for (const auto& a : meta.value(QStringLiteral("arrays")).toArray()) {
        const QString csv = a.toObject().value(QStringLiteral("csv")).toString();
        EXPECT_TRUE(csv.startsWith(QStringLiteral("gate_"))) << csv.toStdString();
        EXPECT_TRUE(QFileInfo::exists(folder + csv)) << csv.toStdString();
    }
}

TEST(CmdFigure, GatesScaleIsTheDataRangeOrZeroToOne) {
    QTemporaryDir dir;
    const QStringList base =
        models() + QStringList{QStringLiteral("--view"),        QStringLiteral("gate"),  QStringLiteral("--prompt"),
                               QStringLiteral("it is a truth"), QStringLiteral("--dpi"), QStringLiteral("60")};
    // The caption (as the data's JSON carries it whole) names the scale each figure used.
    auto caption = [&](const QStringList& extra, const QString& stem) {
        const Result r = gwbFigure(base + extra +
                                   QStringList{QStringLiteral("--out"), dir.filePath(stem + QStringLiteral(".svg")),
                                               QStringLiteral("--data"), dir.filePath(stem)});
        EXPECT_EQ(r.code, 0) << r.err.toStdString();
        QFile f(dir.filePath(stem + QStringLiteral(".json")));
        return f.open(QIODevice::ReadOnly)
                   ? QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("caption")).toString()
                   : QString();
    };
    const QString unit = caption({QStringLiteral("--scale"), QStringLiteral("unit")}, QStringLiteral("unit"));
    EXPECT_TRUE(unit.contains(QStringLiteral("Colour scale: fixed 0 to 1."))) << unit.toStdString();
    const QString byData = caption({}, QStringLiteral("data"));
    EXPECT_TRUE(byData.contains(QStringLiteral("Colour scale: the data's range"))) << byData.toStdString();
    const Result bad = gwbFigure(base + QStringList{QStringLiteral("--scale"), QStringLiteral("log"),
                                                    QStringLiteral("--out"), dir.filePath(QStringLiteral("x.svg"))});
    EXPECT_NE(bad.code, 0);
    EXPECT_TRUE(bad.err.contains(QStringLiteral("'data'"))) << bad.err.toStdString();
    const Result other =
        gwbFigure(models() + QStringList{QStringLiteral("--view"), QStringLiteral("lens"), QStringLiteral("--prompt"),
                                         QStringLiteral("it is"), QStringLiteral("--scale"), QStringLiteral("unit"),
                                         QStringLiteral("--out"), dir.filePath(QStringLiteral("y.svg"))});
    EXPECT_NE(other.code, 0);
    EXPECT_TRUE(other.err.contains(QStringLiteral("--scale only applies to --view gate"))) << other.err.toStdString();
}

TEST(CmdFigure, BadInputExitsNonZeroWithMessage) {
    QTemporaryDir dir;
    const QStringList base = models() + QStringList{QStringLiteral("--view"), QStringLiteral("gate")};
    auto expectFail = [&](const QStringList& extra, const QString& needle) {
        const Result r = gwbFigure(base + extra);
        EXPECT_NE(r.code, 0) << extra.join(QLatin1Char(' ')).toStdString();
        EXPECT_TRUE(r.err.contains(needle)) << "stderr: " << r.err.toStdString() << " wanted: " << needle.toStdString();
    };
    const QString out = dir.filePath(QStringLiteral("x.png"));
    expectFail({QStringLiteral("--prompt"), QStringLiteral(" "), QStringLiteral("--out"), out},
               QStringLiteral("empty"));
    expectFail({QStringLiteral("--prompt"), QStringLiteral("it is"), QStringLiteral("--out"),
                QStringLiteral("/nonexistent-gwb-folder/x.png")},
               QStringLiteral("does not exist"));
    expectFail({QStringLiteral("--prompt"), QStringLiteral("it is"), QStringLiteral("--out"),
                dir.filePath(QStringLiteral("x.jpg"))},
               QStringLiteral(".png, .svg or .pdf"));
    expectFail({QStringLiteral("--prompt"), QStringLiteral("it is"), QStringLiteral("--out"), out,
                QStringLiteral("--layer"), QStringLiteral("9")},
               QStringLiteral("out of range"));
    expectFail({QStringLiteral("--prompt"), QStringLiteral("it is"), QStringLiteral("--out"), out,
                QStringLiteral("--offset"), QStringLiteral("5")},
               QStringLiteral("not an offset"));
    const QString latin1 = dir.filePath(QStringLiteral("latin1.txt"));
    {
        QFile f(latin1);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("caf\xe9");
    }
    expectFail({QStringLiteral("--prompt-file"), latin1, QStringLiteral("--out"), out}, QStringLiteral("UTF-8"));
    const Result foreign =
        gwbFigure({QStringLiteral("--view"), QStringLiteral("gate"), QStringLiteral("--model"), testModels().notAModel,
                   QStringLiteral("--prompt"), QStringLiteral("it is"), QStringLiteral("--out"), out});
    EXPECT_NE(foreign.code, 0);
    EXPECT_TRUE(foreign.err.contains(QStringLiteral("notes.gwb"))) << foreign.err.toStdString();
    const Result noModel = gwbFigure({QStringLiteral("--view"), QStringLiteral("attention"), QStringLiteral("--prompt"),
                                      QStringLiteral("it is"), QStringLiteral("--out"), out});
    EXPECT_NE(noModel.code, 0);
    EXPECT_TRUE(noModel.err.contains(QStringLiteral("transformer-austen.gwb"))) << noModel.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(out));
}

TEST(CmdFigure, SameFigureAsTheWindowExport) {
    gwb::app::test::ensureApp();
    QTemporaryDir dir;
    gwb::app::MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    gwb::app::MainWindow w(o);
    w.setModelPaths(testModels().grassmann, testModels().transformer);
    w.setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    QSignalSpy done(&w, &gwb::app::MainWindow::runFinished);
    w.run();
    ASSERT_TRUE(done.wait(60000));
    w.selection()->setLayer(1);
    w.selection()->setToken(3);
    for (const char* view : {"gate", "plucker", "attention"}) {
        const QString id = QString::fromLatin1(view);
        const QString fromWindow = dir.filePath(id + QStringLiteral("-window.png"));
        const QString fromCli = dir.filePath(id + QStringLiteral("-cli.png"));
        gwb::app::FigureSettings s;
        s.dpi = 120;
        ASSERT_TRUE(w.exportFigureTo(fromWindow, id, s)) << w.statusText().toStdString();
        const Result r = gwbFigure(
            models() + QStringList{QStringLiteral("--view"), id, QStringLiteral("--prompt"),
                                   QStringLiteral("it is a truth universally acknowledged"), QStringLiteral("--layer"),
                                   QStringLiteral("1"), QStringLiteral("--token"), QStringLiteral("3"),
                                   QStringLiteral("--dpi"), QStringLiteral("120"), QStringLiteral("--out"), fromCli});
        ASSERT_EQ(r.code, 0) << r.err.toStdString();
        const QImage a(fromWindow), b(fromCli);
        ASSERT_FALSE(a.isNull());
        EXPECT_EQ(a.size(), b.size()) << view;
        EXPECT_TRUE(a.convertToFormat(QImage::Format_ARGB32) == b.convertToFormat(QImage::Format_ARGB32)) << view;
    }
}

TEST(CmdFigure, PathsFigureAndItsOptions) {
    // gwb figure --view paths: both models' senders x receivers matrices with their data; the
    // paths options are refused elsewhere and bad input names the problem.
    QTemporaryDir dir;
    const QString svg = dir.filePath(QStringLiteral("paths.svg"));
    const QString data = dir.filePath(QStringLiteral("paths"));
    const QStringList base = models() + QStringList{QStringLiteral("--view"),    QStringLiteral("paths"),
                                                    QStringLiteral("--prompt"),  QStringLiteral("emma had a man"),
                                                    QStringLiteral("--corrupt"), QStringLiteral("she had a man"),
                                                    QStringLiteral("--answer"),  QStringLiteral("the"),
                                                    QStringLiteral("--wrong"),   QStringLiteral("her")};
    const Result r = gwbFigure(base + QStringList{QStringLiteral("--receivers"), QStringLiteral("logits"),
                                                  QStringLiteral("--out"), svg, QStringLiteral("--data"), data});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    EXPECT_GT(QFileInfo(svg).size(), 1000);
    for (const char* table : {"grassmann_effect", "grassmann_metric", "transformer_effect", "transformer_metric"})
        EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("paths_paths_%1.csv").arg(QLatin1String(table)))))
            << table;
    const Result wrongView =
        gwbFigure(models() + QStringList{QStringLiteral("--view"), QStringLiteral("gate"), QStringLiteral("--prompt"),
                                         QStringLiteral("emma had"), QStringLiteral("--senders"), QStringLiteral("ffn"),
                                         QStringLiteral("--out"), svg});
    EXPECT_EQ(wrongView.code, 1);
    EXPECT_TRUE(wrongView.err.contains(QStringLiteral("only apply to --view paths"))) << wrongView.err.toStdString();
    const Result missing =
        gwbFigure(models() + QStringList{QStringLiteral("--view"), QStringLiteral("paths"), QStringLiteral("--prompt"),
                                         QStringLiteral("emma had"), QStringLiteral("--out"), svg});
    EXPECT_EQ(missing.code, 1);
    EXPECT_TRUE(missing.err.contains(QStringLiteral("corrupted prompt"))) << missing.err.toStdString();
}

TEST(CmdFigure, PathsOverAPairsFileWithTheEstimatorsNamed) {
    // Issue 65: paths over pairs could not be drawn. gwb figure --view paths --pairs FILE gives each
    // cell's estimate over the pairs (the ratio of means, or the mean raw effect when the pairs have
    // nothing to explain), names the estimator and Holm's correction, and leads with the verdict.
    QTemporaryDir dir;
    const QString pairs = gwb::app::test::patching_cli::writePairs(dir.filePath(QStringLiteral("p.jsonl")), false);
    const QString svg = dir.filePath(QStringLiteral("pp.svg")), data = dir.filePath(QStringLiteral("pp"));
    const QStringList base =
        models() + QStringList{QStringLiteral("--view"),      QStringLiteral("paths"), QStringLiteral("--pairs"), pairs,
                               QStringLiteral("--receivers"), QStringLiteral("logits")};
    const Result r = gwbFigure(base + QStringList{QStringLiteral("--out"), svg, QStringLiteral("--data"), data});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    EXPECT_GT(QFileInfo(svg).size(), 1000);
    for (const char* table : {"grassmann_mean", "grassmann_ci_low", "grassmann_raw_mean", "grassmann_p_value",
                              "grassmann_holm_marked", "grassmann_per_pair", "transformer_mean"})
        EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("pp_paths_pairs_%1.csv").arg(QLatin1String(table)))))
            << table;
    QFile f(dir.filePath(QStringLiteral("pp.json")));
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    const QString caption = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("caption")).toString();
    EXPECT_TRUE(caption.startsWith(QStringLiteral("Grassmann: clean - corrupted over 4 pairs")))
        << caption.toStdString();
    EXPECT_TRUE(caption.contains(QStringLiteral("Holm"))) << caption.toStdString();
    EXPECT_TRUE(caption.contains(QStringLiteral("ratio of means")) ||
                caption.contains(QStringLiteral("mean raw effect")))
        << caption.toStdString();
    const Result refused = gwbFigure(
        base + QStringList{QStringLiteral("--sender-token"), QStringLiteral("1"), QStringLiteral("--out"), svg});
    EXPECT_EQ(refused.code, 1);
    EXPECT_TRUE(refused.err.contains(QStringLiteral("for one pair"))) << refused.err.toStdString();
}

TEST(CmdFigure, APromptFilesFinalLineEndIsNotPartOfThePrompt) {
    // Issue 67: --prompt-file kept the editor's final line end (one token more than gwb trace
    // --prompt-file gave). One rule in the engine now: the same tokens as --prompt.
    QTemporaryDir dir;
    QFile file(dir.filePath(QStringLiteral("prompt.txt")));
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("it is a truth\n");
    file.close();
    auto tokens = [&](const QStringList& source, const QString& stem) {
        const Result r = gwbFigure(models() + source +
                                   QStringList{QStringLiteral("--view"), QStringLiteral("gate"),
                                               QStringLiteral("--out"), dir.filePath(stem + QStringLiteral(".svg")),
                                               QStringLiteral("--data"), dir.filePath(stem)});
        EXPECT_EQ(r.code, 0) << r.err.toStdString();
        QFile meta(dir.filePath(stem + QStringLiteral(".json")));
        if (!meta.open(QIODevice::ReadOnly)) return qint64{-1};
        return QJsonDocument::fromJson(meta.readAll())
            .object()
            .value(QStringLiteral("model"))
            .toObject()
            .value(QStringLiteral("grassmann"))
            .toObject()
            .value(QStringLiteral("tokens"))
            .toInteger();
    };
    const qint64 typed = tokens({QStringLiteral("--prompt"), QStringLiteral("it is a truth")}, QStringLiteral("a"));
    ASSERT_GT(typed, 0);
    EXPECT_EQ(tokens({QStringLiteral("--prompt-file"), file.fileName()}, QStringLiteral("b")), typed);
}

TEST(CmdFigure, EachFiguresNotesAreAboutWhatItDraws) {
    // Issue 67: patching figures printed the trace's analysis notes ("prompt subspace has rank 2 <
    // k = 4"), which say nothing about a patching sweep. The subspace figure still prints them.
    QTemporaryDir dir;
    const QStringList prompt = {QStringLiteral("--prompt"), QStringLiteral("emma was")};
    const Result subspace = gwbFigure(models() + prompt +
                                      QStringList{QStringLiteral("--view"), QStringLiteral("subspace"),
                                                  QStringLiteral("--out"), dir.filePath(QStringLiteral("s.svg"))});
    ASSERT_EQ(subspace.code, 0) << subspace.err.toStdString();
    ASSERT_TRUE(subspace.err.contains(QStringLiteral("prompt subspace"))) << subspace.err.toStdString();
    const Result patching =
        gwbFigure(models() + prompt +
                  QStringList{QStringLiteral("--view"), QStringLiteral("patching"), QStringLiteral("--corrupt"),
                              QStringLiteral("she was"), QStringLiteral("--answer"), QStringLiteral("the"),
                              QStringLiteral("--wrong"), QStringLiteral("her"), QStringLiteral("--out"),
                              dir.filePath(QStringLiteral("p.svg"))});
    ASSERT_EQ(patching.code, 0) << patching.err.toStdString();
    EXPECT_FALSE(patching.err.contains(QStringLiteral("prompt subspace"))) << patching.err.toStdString();
}

TEST(CmdFigure, ARoundingLevelDifferenceIsDrawnAsRawEffectsAndSaysWhy) {
    // Issue 65: the Elizabeth/Darcy pair on the bundled Grassmann model differs by under 0.001
    // logits; its patching figure filled a normalised scale with noise. Now the figure draws the
    // raw effect, its caption leads with why, and the command says so.
    const QString bundled = QStringLiteral(GWB_SOURCE_DIR "/resources/models/grassmann-austen.gwb");
    if (!QFileInfo::exists(bundled)) GTEST_SKIP() << "no bundled models in this checkout";
    QTemporaryDir dir;
    const Result r = gwbFigure(
        {QStringLiteral("--model"),    bundled,
         QStringLiteral("--baseline"), QStringLiteral(GWB_SOURCE_DIR "/resources/models/transformer-austen.gwb"),
         QStringLiteral("--threads"),  QStringLiteral("1"),
         QStringLiteral("--view"),     QStringLiteral("patching"),
         QStringLiteral("--prompt"),   QStringLiteral("Elizabeth walked to the window, and then"),
         QStringLiteral("--corrupt"),  QStringLiteral("Darcy walked to the window, and then"),
         QStringLiteral("--answer"),   QStringLiteral("she"),
         QStringLiteral("--wrong"),    QStringLiteral("he"),
         QStringLiteral("--out"),      dir.filePath(QStringLiteral("e.svg")),
         QStringLiteral("--data"),     dir.filePath(QStringLiteral("e"))});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    EXPECT_TRUE(r.err.contains(QStringLiteral("no normalised effect: clean - corrupted is 0.000")))
        << r.err.toStdString();
    QFile f(dir.filePath(QStringLiteral("e.json")));
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    const QString caption = QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("caption")).toString();
    EXPECT_TRUE(caption.startsWith(QStringLiteral("Grassmann: no normalised effect: clean - corrupted is 0.000")))
        << caption.toStdString();
    EXPECT_TRUE(caption.contains(QStringLiteral("raw effect"))) << caption.toStdString();
    EXPECT_TRUE(QFileInfo::exists(dir.filePath(QStringLiteral("e_patching_grassmann_resid_raw_effect.csv"))));
}

TEST(CmdFigure, TheSelectionsNumbersAreReadBeforeAnythingRuns) {
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("x.svg"));
    const QStringList base = QStringList{QStringLiteral("--view"),   QStringLiteral("gate"),
                                         QStringLiteral("--prompt"), QStringLiteral("it is a truth"),
                                         QStringLiteral("--out"),    out,
                                         QStringLiteral("--model"),  QStringLiteral("/nonexistent-gwb-model.gwb")};
    // A model that does not exist would fail the run: the option's own message comes first.
    for (const QString& option :
         {QStringLiteral("--layer"), QStringLiteral("--head"), QStringLiteral("--token"), QStringLiteral("--offset")}) {
        const Result r = gwbFigure(base + QStringList{option, QStringLiteral("abc")});
        EXPECT_NE(r.code, 0);
        EXPECT_TRUE(r.err.contains(option + QStringLiteral(" must be an integer"))) << r.err.toStdString();
        EXPECT_FALSE(r.err.contains(QStringLiteral("nonexistent-gwb-model"))) << r.err.toStdString();
    }
    const Result seed = gwbFigure(base + QStringList{QStringLiteral("--seed"), QStringLiteral("3")});
    EXPECT_NE(seed.code, 0);
    EXPECT_TRUE(seed.err.contains(QStringLiteral("--seed only applies with --continue N"))) << seed.err.toStdString();
    EXPECT_FALSE(QFileInfo::exists(out));
    const Result help = gwbFigure({QStringLiteral("--help")});
    EXPECT_EQ(help.code, 0);
}

TEST(CmdFigure, SaliencyByDefaultExplainsATokenThatHasANextToken) {
    // Under the bundled window's rule the default token of a short prompt is its last, which has no
    // next token: saliency then takes the last but one (or the last with --target).
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("s.svg"));
    const Result r = gwbFigure(models() + QStringList{QStringLiteral("--view"), QStringLiteral("saliency"),
                                                      QStringLiteral("--prompt"), QStringLiteral("it is a truth"),
                                                      QStringLiteral("--out"), out, QStringLiteral("--data"),
                                                      dir.filePath(QStringLiteral("s"))});
    ASSERT_EQ(r.code, 0) << r.err.toStdString();
    QFile meta(dir.filePath(QStringLiteral("s.json")));
    ASSERT_TRUE(meta.open(QIODevice::ReadOnly));
    const QJsonObject o = QJsonDocument::fromJson(meta.readAll()).object();
    const qint64 tokens = o.value(QStringLiteral("model"))
                              .toObject()
                              .value(QStringLiteral("grassmann"))
                              .toObject()
                              .value(QStringLiteral("tokens"))
                              .toInteger();
    ASSERT_GE(tokens, 2);
    EXPECT_EQ(o.value(QStringLiteral("selection")).toObject().value(QStringLiteral("token")).toInteger(), tokens - 2);
}

TEST(CmdFigure, WithSourceDateEpochAPdfIsTheSameFileEachRun) {
    // SOURCE_DATE_EPOCH: the PDF's creation date is that time and Qt's hash order is fixed, so
    // two runs of the same command write the same bytes (a script rebuilding a paper's figures).
    QTemporaryDir dir;
    auto run = [&](const QString& name) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("SOURCE_DATE_EPOCH"), QStringLiteral("1764460800"));
        env.remove(QStringLiteral("QT_HASH_SEED"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(GWB_EXECUTABLE),
                QStringList{QStringLiteral("figure"), QStringLiteral("--view"), QStringLiteral("plucker")} + models() +
                    QStringList{QStringLiteral("--prompt"), QStringLiteral("it is a truth universally"),
                                QStringLiteral("--out"), dir.filePath(name)});
        EXPECT_TRUE(p.waitForFinished(120000));
        EXPECT_EQ(p.exitCode(), 0) << p.readAllStandardError().toStdString();
        QFile f(dir.filePath(name));
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };
    const QByteArray a = run(QStringLiteral("a.pdf")), b = run(QStringLiteral("b.pdf"));
    ASSERT_FALSE(a.isEmpty());
    EXPECT_TRUE(a.contains("/CreationDate (D:20251130000000Z)"));
    EXPECT_TRUE(a == b);
}
