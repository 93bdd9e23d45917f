#include "common/bundled_models.h"
#include "gui/session.h"

#include "gwb_process.h"
#include "test_models.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QTemporaryDir>

#include <QProcess>
#include <gtest/gtest.h>

using gwb::app::Session;

namespace {
Session sample() {
    Session s;
    s.grassmannModel = QStringLiteral("/models/g.gwb");
    s.baselineModel = QStringLiteral("/models/t.gwb");
    s.prompt = QStringLiteral("It is a truth — “universally” acknowledged\nsecond line");
    s.device = QStringLiteral("cpu");
    s.threads = 3;
    s.token = 5;
    s.layer = 2;
    s.head = 1;
    s.offsetIndex = 3;
    s.tokenScalar = QStringLiteral("planarity");
    s.currentView = QStringLiteral("plucker");
    s.viewSettings.insert(QStringLiteral("gate"), QJsonObject{{QStringLiteral("colormap"), QStringLiteral("magma")}});
    return s;
}
} // namespace

TEST(Session, JsonRoundTrip) {
    const Session s = sample();
    EXPECT_EQ(Session::fromJson(s.toJson()), s);
}

TEST(Session, FileRoundTrip) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.json"));
    const Session s = sample();
    ASSERT_EQ(s.save(path), QString());
    EXPECT_EQ(Session::load(path), s);
    // Saving again over it works (atomic replace) and leaves no temporary file.
    ASSERT_EQ(s.save(path), QString());
    EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files), QStringList{QStringLiteral("s.json")});
}

TEST(Session, MissingFieldsTakeDefaults) {
    const Session s = Session::fromJson(QJsonObject{{QStringLiteral("format"), QStringLiteral("gwb-session")}});
    EXPECT_EQ(s.device, QStringLiteral("auto"));
    EXPECT_EQ(s.tokenScalar, QStringLiteral("surprisal"));
    EXPECT_EQ(s.token, 0);
}

TEST(Session, RejectsOtherDocuments) {
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("{\"format\": \"gwb-session\", \"selection\": {\"token\": \"five\"}}");
    f.close();
    try {
        Session::load(bad);
        FAIL() << "a string token was accepted";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
    }
    QFile g(dir.filePath(QStringLiteral("notjson.json")));
    ASSERT_TRUE(g.open(QIODevice::WriteOnly));
    g.write("not json {");
    g.close();
    EXPECT_THROW(Session::load(g.fileName()), std::runtime_error);
    EXPECT_THROW(Session::fromJson(QJsonObject{{QStringLiteral("format"), QStringLiteral("other")}}),
                 std::runtime_error);
    EXPECT_THROW(Session::load(dir.filePath(QStringLiteral("missing.json"))), std::runtime_error);
}

TEST(Session, SaveToMissingFolderReportsPath) {
    const QString err = sample().save(QStringLiteral("/nonexistent-folder-gwb/s.json"));
    EXPECT_TRUE(err.contains(QStringLiteral("/nonexistent-folder-gwb/s.json"))) << err.toStdString();
}

TEST(Session, GwbSessionFileOpensTheSessionInTheWindow) {
    // The process path: QGuiApplication takes "--session NAME" out of argv for X11 session
    // management, so main() joins it into "--session=FILE". Without that the window never opened
    // the session, never ran, and this tour would not start.
    using gwb::app::test::runGwb;
    QTemporaryDir dir;
    Session s;
    s.grassmannModel = QFileInfo(gwb::app::test::testModels().grassmann).absoluteFilePath();
    s.baselineModel = QFileInfo(gwb::app::test::testModels().transformer).absoluteFilePath();
    s.prompt = QStringLiteral("emma was in her");
    s.threads = 1;
    const QString path = dir.filePath(QStringLiteral("study.json"));
    ASSERT_EQ(s.save(path), QString());
    for (const QStringList& args :
         {QStringList{QStringLiteral("--session"), path}, QStringList{QStringLiteral("--session=") + path}}) {
        SCOPED_TRACE(args.join(QLatin1Char(' ')).toStdString());
        const auto r =
            runGwb(args + QStringList{QStringLiteral("--tour"), dir.filePath(QStringLiteral("tour"))}, 90000);
        EXPECT_EQ(r.code, 0) << gwb::app::test::show(r);
        EXPECT_TRUE(r.out.contains(QStringLiteral("tour: traced \"emma was in her\""))) << gwb::app::test::show(r);
    }
}

TEST(Session, ModelAloneOpensTheBundledBaselineToo) {
    // gwb --model FILE: the baseline is the bundled one, as --help says (it was left empty, so the
    // Attention and Compare views had nothing to show); --baseline alone keeps the bundled
    // Grassmann model. The "bundled" models here are the test models, copied under the bundled
    // names into a folder GWB_MODELS_DIR points at.
    QTemporaryDir dir;
    const QString models = dir.filePath(QStringLiteral("models"));
    ASSERT_TRUE(QDir().mkpath(models));
    const auto& tm = gwb::app::test::testModels();
    ASSERT_TRUE(QFile::copy(tm.grassmann, models + QStringLiteral("/") +
                                              gwb::app::bundledModelFileName(gwb::engine::ModelKind::Grassmann)));
    ASSERT_TRUE(QFile::copy(tm.transformer, models + QStringLiteral("/") +
                                                gwb::app::bundledModelFileName(gwb::engine::ModelKind::Transformer)));
    auto run = [&](const QStringList& args) {
        QProcess p;
        QProcessEnvironment env = gwb::app::test::gwbEnvironment();
        env.insert(QStringLiteral("GWB_MODELS_DIR"), models);
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(GWB_EXECUTABLE),
                args + QStringList{QStringLiteral("--fresh"), QStringLiteral("--prompt"),
                                   QStringLiteral("emma was in her"), QStringLiteral("--tour"),
                                   dir.filePath(QStringLiteral("tour"))});
        EXPECT_TRUE(p.waitForFinished(120000));
        return QString::fromLocal8Bit(p.readAllStandardOutput()) + QString::fromLocal8Bit(p.readAllStandardError());
    };
    const QString g = run({QStringLiteral("--model"), QFileInfo(tm.grassmann).absoluteFilePath()});
    EXPECT_TRUE(g.contains(QStringLiteral("Grassmann test-grassmann, baseline test-transformer"))) << g.toStdString();
    const QString b = run({QStringLiteral("--baseline"), QFileInfo(tm.transformer).absoluteFilePath()});
    EXPECT_TRUE(b.contains(QStringLiteral("Grassmann test-grassmann, baseline test-transformer"))) << b.toStdString();
}
