// Opening a PyTorch checkpoint the importer cannot take on its own: the error is recognised, the
// user's layout/vocabulary/offsets reach the worker's ModelCache, and the retry loads the model.
// The checkpoint is our random model renamed into GrassLM's key names and written as
// .safetensors (as tests/import/import_test.cpp does), with no vocabulary beside it.

#include "gui/import_dialog.h"
#include "gui/main_window.h"
#include "runs/trace_job.h"

#include "app_test_util.h"

#include "gwb/engine/checkpoint.h"
#include "import/layout_file.h" // engine-internal key tables (Torch-free)

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

using namespace gwb::app;
namespace eng = gwb::engine;

namespace {

constexpr int kVocab = 30;
constexpr int kWaitMs = 60000;

/// A folder with grasslm/ckpt.safetensors (no vocabulary there) and vocab/vocab.txt (kVocab words
/// "[PAD] [UNK] w2 .. w29").
struct Fixture {
    QTemporaryDir dir;
    QString checkpoint, vocab, unknownKeys;

    Fixture() {
        QDir(dir.path()).mkpath(QStringLiteral("grasslm"));
        QDir(dir.path()).mkpath(QStringLiteral("vocab"));
        checkpoint = dir.filePath(QStringLiteral("grasslm/ckpt.safetensors"));
        vocab = dir.filePath(QStringLiteral("vocab/vocab.txt"));
        unknownKeys = dir.filePath(QStringLiteral("vocab/odd.safetensors"));

        eng::ModelConfig c;
        c.kind = eng::ModelKind::Grassmann;
        c.vocabSize = kVocab;
        c.dModel = 16;
        c.reduced = 4;
        c.nLayers = 2;
        c.dFF = 32;
        c.maxLen = 24;
        eng::applyLayoutVariant(eng::builtinLayout("grasslm"), c);
        c.layerOffsets = eng::defaultLayoutOffsets("grasslm", c.nLayers);
        const auto ours = eng::Model::init(c, 7).parameters();
        eng::SafetensorsFile f;
        for (const auto& k : eng::layoutMappings(eng::builtinLayout("grasslm"), c.kind, c.nLayers, false)) {
            const auto& a = ours.at(k.ours);
            f.tensors[k.theirs.at(0)] = eng::makeStoredTensor(a.shape, a.data.data(), "F32");
        }
        eng::writeSafetensors(checkpoint.toStdString(), f);

        eng::SafetensorsFile odd; // keys of no known implementation: the layout cannot be detected
        const auto& a = ours.at("tok_embed.weight");
        odd.tensors["encoder.embed.weight"] = eng::makeStoredTensor(a.shape, a.data.data(), "F32");
        eng::writeSafetensors(unknownKeys.toStdString(), odd);

        QFile v(vocab);
        v.open(QIODevice::WriteOnly);
        v.write("[PAD]\n[UNK]\n");
        for (int i = 2; i < kVocab; ++i)
            v.write(QStringLiteral("w%1\n").arg(i).toUtf8());
    }
};

QString loadError(ModelCache& cache, const QString& path) {
    try {
        cache.get(path, QStringLiteral("cpu"));
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

TEST(ImportChoice, MissingVocabularyIsAskedForAndTheChoiceReachesTheCache) {
    Fixture fx;
    ModelCache cache;
    const QString error = loadError(cache, fx.checkpoint);
    EXPECT_TRUE(error.contains(QStringLiteral("no vocabulary found"))) << error.toStdString();
    EXPECT_TRUE(error.contains(fx.checkpoint)) << error.toStdString();
    EXPECT_TRUE(needsImportChoice(fx.checkpoint, error));

    // A layout that does not fit is reported and can be asked for again.
    cache.setImportChoice(fx.checkpoint, ImportChoice{QStringLiteral("kanenorman"), fx.vocab, {}});
    const QString wrongLayout = loadError(cache, fx.checkpoint);
    EXPECT_FALSE(wrongLayout.isEmpty());
    EXPECT_TRUE(needsImportChoice(fx.checkpoint, wrongLayout)) << wrongLayout.toStdString();

    cache.setImportChoice(fx.checkpoint, ImportChoice{QStringLiteral("grasslm"), fx.vocab, QStringLiteral("1,3")});
    const eng::Model m = cache.get(fx.checkpoint, QStringLiteral("cpu"));
    ASSERT_TRUE(m.tokenizer());
    EXPECT_EQ(m.tokenizer()->vocabSize(), kVocab);
    EXPECT_EQ(m.config().layerOffsets, (std::vector<std::vector<int>>{{1, 3}, {1, 3}}));
    EXPECT_EQ(cache.importChoice(fx.checkpoint)->vocabPath, fx.vocab);
}

TEST(ImportChoice, OnlyErrorsAChoiceCanFixAreAskedAbout) {
    Fixture fx;
    ModelCache cache;
    const QString undetected = loadError(cache, fx.unknownKeys);
    EXPECT_TRUE(undetected.contains(QStringLiteral("cannot tell which implementation"))) << undetected.toStdString();
    EXPECT_TRUE(needsImportChoice(fx.unknownKeys, undetected));
    EXPECT_FALSE(needsImportChoice(QStringLiteral("/x/model.gwb"), QStringLiteral("missing key 'a'")));
    EXPECT_FALSE(needsImportChoice(fx.checkpoint, QStringLiteral("model file 'x' does not exist")));

    cache.setImportChoice(fx.checkpoint, ImportChoice{QStringLiteral("gpt9"), fx.vocab, {}});
    const QString badLayout = loadError(cache, fx.checkpoint);
    EXPECT_TRUE(badLayout.contains(QStringLiteral("gpt9"))) << badLayout.toStdString();
    EXPECT_THROW(
        importOptionsFor(ImportChoice{QStringLiteral("auto"), {}, QStringLiteral("1,x")}, QStringLiteral("cpu")),
        std::invalid_argument);
    const eng::ImportOptions o =
        importOptionsFor(ImportChoice{QStringLiteral("AlphaXiv"), QStringLiteral(" v.txt "), QStringLiteral("1,2")},
                         QStringLiteral("cpu"));
    EXPECT_EQ(o.layout, "alphaxiv");
    EXPECT_EQ(o.vocabPath, "v.txt");
    EXPECT_EQ(o.offsetSchedule, "1,2");
}

TEST(ImportChoice, DialogFieldsRoundTrip) {
    gwb::app::test::ensureApp();
    const ImportChoice want{QStringLiteral("kanenorman"), QStringLiteral("/v/vocab.json"), QStringLiteral("1,2,4")};
    ImportDialog d(QStringLiteral("/m/ckpt.pt"), QStringLiteral("no vocabulary found"), want);
    EXPECT_EQ(d.choice(), want);
    EXPECT_TRUE(d.errorText().contains(QStringLiteral("no vocabulary found")));
    d.setChoice(ImportChoice{});
    EXPECT_EQ(d.choice().layout, QStringLiteral("auto"));
    EXPECT_TRUE(d.choice().vocabPath.isEmpty());
}

TEST(ImportChoice, MainWindowAsksThenRetriesOnTheWorkerAndRuns) {
    gwb::app::test::ensureApp();
    Fixture fx;
    MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    MainWindow w(o);
    QStringList asked;
    w.setImportChoiceAsker([&](const QString& path, const QString& message) -> std::optional<ImportChoice> {
        asked << message;
        EXPECT_EQ(QFileInfo(path).absoluteFilePath(), QFileInfo(fx.checkpoint).absoluteFilePath());
        if (asked.size() > 1) return std::nullopt; // a second question would mean the choice was lost
        return ImportChoice{QStringLiteral("auto"), fx.vocab, {}};
    });
    const QString abs = QFileInfo(fx.checkpoint).absoluteFilePath();
    w.openModel(fx.checkpoint);
    ASSERT_TRUE(QTest::qWaitFor([&] { return w.grassmannPath() == abs; }, kWaitMs)) << w.statusText().toStdString();
    ASSERT_EQ(asked.size(), 1);
    EXPECT_TRUE(asked.front().contains(QStringLiteral("no vocabulary found"))) << asked.front().toStdString();

    w.setPrompt(QStringLiteral("w3 w7 w12 w29"));
    QSignalSpy done(&w, &MainWindow::runFinished);
    w.run();
    ASSERT_TRUE(done.wait(kWaitMs)) << w.statusText().toStdString();
    ASSERT_TRUE(w.workbenchData().grassmann);
    EXPECT_EQ(w.workbenchData().grassmann->length(), 4);
}
