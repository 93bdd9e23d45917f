// The Features view in the window: a dictionary folder opens off the GUI thread, its activations on
// the traced tokens equal the engine's, the list at the selected token is the active features by
// activation, a clicked feature gets its dashboard and colours the token strip, a new run brings new
// activations, a broken folder is an error banner, and a crosscoder of the bundled pair shows its
// relative norms and narrows the list by kind.

#include "gui/features_job.h"
#include "gui/main_window.h"
#include "gui/selection_bar.h"

#include "app_test_util.h"
#include "window_run_util.h"

#include "gwb/engine/features.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/views/chart_widget.h"
#include "gwb/views/features_view.h"
#include "gwb/views/token_strip.h"

#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

#include <fstream>
#include <string>

using namespace gwb::app;
using gwb::app::test::ensureApp;

namespace {

constexpr int kWaitMs = 120000;

/// A corpus file and a small dictionary trained on it (the dashboard draws contexts from it).
struct Trained {
    QTemporaryDir dir;
    std::string corpus;
    QString dictionary, crosscoder;
    Trained() {
        corpus = dir.filePath(QStringLiteral("corpus.txt")).toStdString();
        std::ofstream f(corpus);
        for (int i = 0; i < 80; ++i)
            f << "It is a truth universally acknowledged, that a single man in possession of a good fortune, must "
                 "be in want of a wife; and she said so "
              << i << " times.\n";
        f.close();
        const gwb::engine::Model g =
            gwb::engine::Model::load(gwb::app::test::bundledModelPath("grassmann-austen.gwb"), "cpu");
        const gwb::engine::Model t =
            gwb::engine::Model::load(gwb::app::test::bundledModelPath("transformer-austen.gwb"), "cpu");
        gwb::engine::FeatureTrainOptions o;
        o.site = "resid.3";
        o.files = {corpus};
        o.dSae = 64;
        o.k = 6;
        o.tokens = 10 * 512;
        o.batch = 512;
        o.contextSize = 64;
        o.device = "cpu";
        dictionary = dir.filePath(QStringLiteral("sae"));
        gwb::engine::saveDictionary(gwb::engine::trainDictionary(g, o).dictionary, dictionary.toStdString());
        o.secondSite = "resid.3";
        crosscoder = dir.filePath(QStringLiteral("cc"));
        gwb::engine::saveDictionary(gwb::engine::trainCrosscoder(g, t, o).dictionary, crosscoder.toStdString());
    }
};

Trained& trained() {
    static Trained t;
    return t;
}

const QString kPrompt = QStringLiteral("It is a truth universally acknowledged, that a single man");

/// The window's Features view once the dictionary at `path` has its activations on the run's
/// tokens; nullptr when there is no such view or nothing arrived (`why` says what did).
gwb::views::FeaturesView* openAndWait(MainWindow& w, const QString& path, std::string& why) {
    auto* fv = qobject_cast<gwb::views::FeaturesView*>(w.view(QStringLiteral("features")));
    if (!fv) return nullptr;
    w.openDictionary(path);
    if (QTest::qWaitFor([&] { return fv->features() && !fv->features()->perToken.empty(); }, kWaitMs)) return fv;
    why = fv->features() ? fv->features()->error : "nothing arrived";
    return nullptr;
}

/// The window after a run of kPrompt with the dictionary at `path` open in its Features view;
/// `fv` null (and `why` saying what happened) when either step failed.
struct WindowWithDictionary {
    std::unique_ptr<MainWindow> window;
    gwb::views::FeaturesView* fv = nullptr;
    std::string why;
};
WindowWithDictionary windowWithDictionary(const QString& path) {
    WindowWithDictionary out;
    out.window = gwb::app::test::windowAfterARun(kPrompt, kWaitMs);
    if (!out.window) {
        out.why = "the run did not finish";
        return out;
    }
    out.fv = openAndWait(*out.window, path, out.why);
    return out;
}

} // namespace

TEST(FeaturesInWindow, ActivationsDashboardAndStrip) {
    Trained& tr = trained();
    const auto window = gwb::app::test::windowAfterARun(kPrompt, kWaitMs);
    ASSERT_TRUE(window);
    MainWindow& w = *window;
    auto* fv = qobject_cast<gwb::views::FeaturesView*>(w.view(QStringLiteral("features")));
    auto* strip = w.findChild<gwb::views::TokenStrip*>(QStringLiteral("tokenStrip"));
    ASSERT_TRUE(fv && strip);
    EXPECT_FALSE(fv->hasContent());
    auto* corpusButton = fv->findChild<QPushButton*>(QStringLiteral("featuresCorpus"));
    ASSERT_TRUE(corpusButton);
    EXPECT_FALSE(corpusButton->isEnabled()) << "no dictionary, no dashboards to draw";
    w.openDictionary(tr.dictionary);
    const int64_t T = w.workbenchData().tokenCount();
    ASSERT_TRUE(QTest::qWaitFor(
        [&] { return fv->features() && static_cast<int64_t>(fv->features()->perToken.size()) == T; }, kWaitMs))
        << (fv->features() ? fv->features()->error : "nothing arrived");
    EXPECT_TRUE(corpusButton->isEnabled());
    EXPECT_EQ(w.currentViewId(), QStringLiteral("features"));
    // The window's numbers are the engine's on the same ids.
    const gwb::engine::Model g =
        gwb::engine::Model::load(gwb::app::test::bundledModelPath("grassmann-austen.gwb"), "cpu");
    const gwb::engine::Dictionary d = gwb::engine::loadDictionary(tr.dictionary.toStdString());
    std::vector<int32_t> ids;
    for (const auto& tok : w.workbenchData().grassmann->tokens)
        ids.push_back(tok.id);
    const gwb::engine::FloatArray z = gwb::engine::featureActivations(g, d, ids);
    const int t = static_cast<int>(T) - 1;
    w.selection()->setToken(t);
    const auto listed = fv->listedFeatures();
    ASSERT_FALSE(listed.empty());
    for (size_t i = 0; i < listed.size(); ++i) {
        EXPECT_FLOAT_EQ(listed[i].second, z.at2(t, listed[i].first));
        if (i) {
            EXPECT_GE(listed[i - 1].second, listed[i].second);
        }
    }
    int active = 0;
    for (int64_t j = 0; j < z.dim(1); ++j)
        active += z.at2(t, j) > 0;
    EXPECT_EQ(static_cast<int>(listed.size()), active);
    // The activation column says at which token (issue 52).
    auto* list = fv->findChild<QTableWidget*>(QStringLiteral("featuresList"));
    ASSERT_TRUE(list && list->horizontalHeaderItem(1));
    EXPECT_EQ(list->horizontalHeaderItem(1)->text(), QStringLiteral("activation at token %1").arg(t));
    // A clicked feature: its dashboard (contexts from the dictionary's corpus) and the strip's bars.
    const int64_t f = listed.front().first;
    fv->chooseFeature(f);
    ASSERT_TRUE(QTest::qWaitFor([&] { return fv->dashboard().feature == f; }, kWaitMs));
    EXPECT_TRUE(fv->dashboard().error.empty()) << fv->dashboard().error;
    EXPECT_FALSE(fv->dashboard().top.empty());
    EXPECT_GT(fv->dashboard().fired, 0);
    EXPECT_EQ(fv->dashboard().readingLayer, 3);
    // Another corpus for the dashboards (Dashboard Corpus…): the contexts come from its text; a
    // missing file is named.
    {
        QTemporaryDir other;
        const QString path = other.filePath(QStringLiteral("other.txt"));
        std::ofstream o(path.toStdString());
        for (int i = 0; i < 60; ++i)
            o << "Mr. Darcy walked to the village and said nothing at all to anyone; it is a truth " << i << ".\n";
        o.close();
        FeaturesContext c;
        c.grassmannPath = w.grassmannPath();
        c.data = w.workbenchData();
        c.dashboardCorpus = {path};
        ModelCache cache;
        const auto dict = std::make_shared<const gwb::engine::Dictionary>(d);
        const gwb::views::FeatureDashboard other1 = computeDashboard(cache, dict, f, c);
        EXPECT_TRUE(other1.error.empty()) << other1.error;
        EXPECT_TRUE(other1.corpus.starts_with("other.txt")) << other1.corpus;
        EXPECT_GT(other1.rows, 0);
        EXPECT_NE(other1.rows, fv->dashboard().rows); // another text, another number of rows
        for (const auto& ctx : other1.top) {          // every context is of the other text
            QString text;
            for (const std::string& piece : ctx.pieces)
                text += QString::fromStdString(piece);
            bool ofOther = false;
            for (const char* word : {"arcy", "walked", "village", "said", "nothing", "anyone", "truth"})
                ofOther |= text.contains(QString::fromLatin1(word));
            EXPECT_TRUE(ofOther) << text.toStdString();
        }
        c.dashboardCorpus = {other.filePath(QStringLiteral("missing.txt"))};
        EXPECT_TRUE(computeDashboard(cache, dict, f, c).error.find("missing.txt") != std::string::npos);
        // The view asks again for the chosen feature's dashboard when the corpus changes.
        QSignalSpy asked(fv, &gwb::views::FeaturesView::dashboardRequested);
        fv->refreshDashboard();
        ASSERT_EQ(asked.count(), 1);
        EXPECT_EQ(asked.front().front().toLongLong(), f);
        ASSERT_TRUE(QTest::qWaitFor([&] { return fv->dashboard().feature == f; }, kWaitMs));
    }
    // The token strip is coloured by the feature's activation at each token.
    EXPECT_EQ(strip->customColouring(), QStringLiteral("feature.resid.3.%1 activation").arg(f));
    const std::vector<float> colours = strip->values();
    ASSERT_EQ(static_cast<int64_t>(colours.size()), T);
    for (int64_t i = 0; i < T; ++i)
        EXPECT_FLOAT_EQ(colours[static_cast<size_t>(i)], z.at2(i, f)) << i;
    EXPECT_FALSE(fv->dataTables().empty());
    // Visible whole at 1280 x 720 with its dashboard (no scrolling inside the dock).
    auto* scroll = w.findChild<QScrollArea*>(QStringLiteral("scroll_features"));
    ASSERT_TRUE(scroll);
    QTest::qWait(50);
    EXPECT_FALSE(scroll->verticalScrollBar()->isVisible())
        << fv->minimumSizeHint().height() << " in " << scroll->viewport()->height();
    // A new run: activations for its tokens.
    w.setPrompt(QStringLiteral("She could not help laughing"));
    QSignalSpy done(&w, &MainWindow::runFinished);
    w.run();
    ASSERT_TRUE(done.wait(kWaitMs));
    const int64_t T2 = w.workbenchData().tokenCount();
    ASSERT_NE(T2, T);
    EXPECT_TRUE(QTest::qWaitFor(
        [&] { return fv->features() && static_cast<int64_t>(fv->features()->perToken.size()) == T2; }, kWaitMs));
    // A folder that is not a dictionary: said in the banner, the view keeps the last one.
    QTemporaryDir empty;
    w.openDictionary(empty.path());
    auto* notice = w.findChild<QLabel*>(QStringLiteral("promptNotice"));
    ASSERT_TRUE(notice);
    EXPECT_TRUE(
        QTest::qWaitFor([&] { return notice->text().contains(QStringLiteral("not a dictionary folder")); }, kWaitMs))
        << notice->text().toStdString();
    EXPECT_TRUE(fv->features() != nullptr);
}

TEST(FeaturesInWindow, ACrosscoderShowsItsRelativeNormsAndFiltersByKind) {
    Trained& tr = trained();
    const auto window = gwb::app::test::windowAfterARun(kPrompt, kWaitMs);
    ASSERT_TRUE(window);
    MainWindow& w = *window;
    std::string why;
    auto* fv = openAndWait(w, tr.crosscoder, why);
    ASSERT_TRUE(fv) << why;
    const gwb::views::FeatureData& f = *fv->features();
    EXPECT_TRUE(f.crosscoder);
    ASSERT_EQ(static_cast<int64_t>(f.relativeNorms.size()), f.dSae);
    const gwb::engine::Dictionary d = gwb::engine::loadDictionary(tr.crosscoder.toStdString());
    const std::vector<double> want = gwb::engine::relativeDecoderNorms(d);
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_DOUBLE_EQ(f.relativeNorms[i], want[i]);
    double histogramTotal = 0;
    const gwb::views::ChartData chart = fv->relativeNormChart();
    for (const gwb::views::ChartSeries& s : chart.series) // one stacked series per kind
        for (double v : s.y)
            histogramTotal += v;
    EXPECT_EQ(histogramTotal, static_cast<double>(f.dSae));
    w.selection()->setToken(static_cast<int>(w.workbenchData().tokenCount()) - 1);
    const size_t all = fv->listedFeatures().size();
    size_t byKind = 0;
    for (const char* kind : {"first", "shared", "second"}) {
        fv->setKindFilter(QString::fromLatin1(kind));
        byKind += fv->listedFeatures().size();
    }
    EXPECT_EQ(byKind, all); // every listed feature is of exactly one kind
    // Clicking a bar of the histogram lists that bar's kind.
    fv->setKindFilter(QStringLiteral("all"));
    Q_EMIT fv->relativeNormWidget()->barClicked(1);
    EXPECT_EQ(fv->kindFilter(), QStringLiteral("first"));
    Q_EMIT fv->relativeNormWidget()->barClicked(5);
    EXPECT_EQ(fv->kindFilter(), QStringLiteral("shared"));
    Q_EMIT fv->relativeNormWidget()->barClicked(9);
    EXPECT_EQ(fv->kindFilter(), QStringLiteral("second"));
    fv->setKindFilter(QStringLiteral("all"));
}

TEST(FeaturesInWindow, ADictionaryOfAnotherModelIsRefusedAndTheOpenOneStays) {
    // Issue 52: a dictionary trained on another model with the bundled model's name loaded, dropped
    // the dictionary open before, and said "…not one of the window's models" in one cut-off line.
    Trained& tr = trained();
    WindowWithDictionary opened = windowWithDictionary(tr.dictionary);
    ASSERT_TRUE(opened.fv) << opened.why;
    MainWindow& w = *opened.window;
    auto* fv = opened.fv;
    const gwb::views::FeatureData* before = fv->features();
    // The same dictionary, said to be trained on other weights under the same model name.
    gwb::engine::Dictionary foreign = gwb::engine::loadDictionary(tr.dictionary.toStdString());
    const std::string ownHash = foreign.config.modelHash;
    foreign.config.modelHash = std::string(ownHash.size(), 'f');
    QTemporaryDir dir;
    const QString foreignPath = dir.filePath(QStringLiteral("foreign"));
    gwb::engine::saveDictionary(foreign, foreignPath.toStdString());
    w.openDictionary(foreignPath);
    ASSERT_TRUE(QTest::qWaitFor([&] { return w.noticeText().contains(QStringLiteral("not opened")); }, kWaitMs));
    const QString notice = w.noticeText();
    EXPECT_TRUE(notice.contains(QStringLiteral("(weights ffffffffffff)"))) << notice.toStdString();
    EXPECT_TRUE(notice.contains(QString::fromStdString(ownHash.substr(0, 12)))) << notice.toStdString();
    EXPECT_TRUE(notice.contains(QString::fromStdString(foreign.config.modelName))) << notice.toStdString();
    EXPECT_TRUE(notice.contains(QStringLiteral("The dictionary open before stays"))) << notice.toStdString();
    EXPECT_FALSE(notice.contains(QStringLiteral("window's models"))) << notice.toStdString();
    EXPECT_TRUE(w.statusText().contains(QStringLiteral("Dictionary not opened"))) << w.statusText().toStdString();
    // The dictionary open before is still the one shown, with its features and no error.
    EXPECT_EQ(fv->features(), before);
    EXPECT_TRUE(fv->features()->error.empty());
    EXPECT_FALSE(fv->listedFeatures().empty());
}

TEST(FeaturesInWindow, ADictionaryWithoutAWeightsHashOpensOnTheModelItFits) {
    // SAELens's trainer writes no gwb weights hash (tests/python/test_saelens_dictionaries.py): the
    // window opens such a file on the open model whose site it fits, and lists its features.
    Trained& tr = trained();
    gwb::engine::Dictionary d = gwb::engine::loadDictionary(tr.dictionary.toStdString());
    d.config.modelHash.clear();
    d.config.modelName = "trained elsewhere";
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("from-saelens"));
    gwb::engine::saveDictionary(d, path.toStdString());
    WindowWithDictionary opened = windowWithDictionary(path);
    ASSERT_TRUE(opened.fv) << opened.why;
    EXPECT_TRUE(opened.fv->features()->error.empty());
    EXPECT_FALSE(opened.fv->listedFeatures().empty());
}

TEST(FeaturesInWindow, ColourTokensBySaysWhenTheStripShowsAFeature) {
    // Issue 52: "Colour tokens by" still said "surprisal" while the strip showed a feature's
    // activation. It names the feature now, and choosing a scalar there returns to it.
    Trained& tr = trained();
    WindowWithDictionary opened = windowWithDictionary(tr.dictionary);
    ASSERT_TRUE(opened.fv) << opened.why;
    MainWindow& w = *opened.window;
    auto* fv = opened.fv;
    auto* combo = w.findChild<QComboBox*>(QStringLiteral("scalarCombo"));
    auto* strip = w.findChild<gwb::views::TokenStrip*>(QStringLiteral("tokenStrip"));
    ASSERT_TRUE(combo && strip);
    const QString before = combo->currentText();
    w.selection()->setToken(static_cast<int>(w.workbenchData().tokenCount()) - 1);
    const auto listed = fv->listedFeatures();
    ASSERT_FALSE(listed.empty());
    auto* list = fv->findChild<QTableWidget*>(QStringLiteral("featuresList"));
    ASSERT_TRUE(list);
    const QSize listBefore = list->size();
    fv->chooseFeature(listed.front().first);
    ASSERT_TRUE(
        QTest::qWaitFor([&] { return strip->customColouring().startsWith(QLatin1String("feature.")); }, kWaitMs));
    ASSERT_TRUE(QTest::qWaitFor([&] { return fv->dashboard().feature == listed.front().first; }, kWaitMs));
    QCoreApplication::processEvents();
    // Issue 52: the list shrank to ~210 px once a feature's dashboard filled the right-hand side.
    EXPECT_EQ(list->size(), listBefore) << list->width() << "x" << list->height() << " from " << listBefore.width()
                                        << "x" << listBefore.height();
    EXPECT_EQ(combo->currentText(), strip->customColouring());
    // Shown whole, not cut to another feature's name ("feature.resid.3.5" for 3.59).
    QCoreApplication::processEvents();
    EXPECT_GE(combo->width(), combo->fontMetrics().horizontalAdvance(combo->currentText()))
        << combo->width() << " px for " << combo->currentText().toStdString();
    // The list's columns fill its width (they stopped at ~280 px of a wider list).
    int columns = 0;
    for (int c = 0; c < list->columnCount(); ++c)
        columns += list->columnWidth(c);
    EXPECT_GE(columns, list->viewport()->width() - 2) << columns << " of " << list->viewport()->width();
    auto* bar = w.findChild<gwb::app::SelectionBar*>();
    ASSERT_TRUE(bar);
    EXPECT_EQ(bar->tokenScalar(), QStringLiteral("surprisal")) << "the chosen scalar is kept (sessions save it)";
    // Choosing a scalar in the box ends the feature's colouring and the box lists scalars only.
    combo->setCurrentIndex(combo->findData(QStringLiteral("mean_gate")));
    EXPECT_TRUE(strip->customColouring().isEmpty());
    EXPECT_EQ(combo->currentText(), QStringLiteral("mean gate"));
    EXPECT_EQ(combo->findData(QStringLiteral("custom")), -1);
    EXPECT_NE(before, QString());
}
