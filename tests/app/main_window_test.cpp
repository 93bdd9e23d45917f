#include "gui/main_window.h"
#include "gui/recent_files.h"
#include "gui/views_guide.h"

#include "../views/std_text.h"
#include "app_test_util.h"
#include "test_models.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/features.h"
#include "gwb/engine/model.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/graph_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/saliency_view.h"

#include <QAction>
#include <QApplication>
#include <QMessageBox>
#include <QTimer>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QComboBox>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QSet>
#include <QTest>

#include <gtest/gtest.h>

#include <unistd.h>

using namespace gwb::app;
using gwb::app::test::ensureApp;
using gwb::app::test::testModels;

namespace {

constexpr int kWaitMs = 60000; ///< generous: CI machines are slow and shared

std::unique_ptr<MainWindow> makeWindow() {
    ensureApp();
    MainWindowOptions o;
    o.useBundledModels = false;
    o.restoreSettings = false;
    auto w = std::make_unique<MainWindow>(o);
    w->setModelPaths(testModels().grassmann, testModels().transformer);
    return w;
}

/// Runs the current prompt and waits for the result.
bool runAndWait(MainWindow& w) {
    QSignalSpy done(&w, &MainWindow::runFinished);
    QSignalSpy failed(&w, &MainWindow::runFailed);
    w.run();
    if (!failed.isEmpty()) return false;
    return done.wait(kWaitMs) && done.count() == 1;
}

} // namespace

TEST(MainWindow, BuildsAndRunsAPrompt) {
    auto w = makeWindow();
    EXPECT_FALSE(w->views().empty());
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    ASSERT_TRUE(runAndWait(*w)) << w->statusText().toStdString();
    ASSERT_TRUE(w->workbenchData().grassmann && w->workbenchData().baseline);
    EXPECT_EQ(w->selection()->tokenCount(), w->workbenchData().grassmann->length());
    EXPECT_EQ(w->selection()->layerCount(), 2);
    EXPECT_EQ(w->selection()->headCount(), 2);
    EXPECT_TRUE(w->statusText().startsWith(QStringLiteral("Traced"))) << w->statusText().toStdString();
    for (const auto* v : w->views()) {
        EXPECT_EQ(v->selection(), w->selection()) << v->viewId().toStdString();
        EXPECT_TRUE(v->data().grassmann) << v->viewId().toStdString();
    }
    EXPECT_FALSE(w->isRunning());
}

TEST(MainWindow, SelectionPropagatesToControlsAndKeys) {
    auto w = makeWindow();
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    ASSERT_TRUE(runAndWait(*w));
    auto* tokenSpin = w->findChild<QSpinBox*>(QStringLiteral("tokenSpin"));
    auto* layerSpin = w->findChild<QSpinBox*>(QStringLiteral("layerSpin"));
    ASSERT_TRUE(tokenSpin && layerSpin);
    w->selection()->setToken(3);
    EXPECT_EQ(tokenSpin->value(), 3);
    layerSpin->setValue(1);
    EXPECT_EQ(w->selection()->layer(), 1);
    // Arrow keys on a view move the token (the focus is not in a text field).
    gwb::views::View* gate = w->view(QStringLiteral("gate"));
    ASSERT_TRUE(gate);
    QTest::keyClick(gate, Qt::Key_Right);
    EXPECT_EQ(w->selection()->token(), 4);
    QTest::keyClick(gate, Qt::Key_Left);
    QTest::keyClick(gate, Qt::Key_Left);
    EXPECT_EQ(w->selection()->token(), 2);
    EXPECT_EQ(tokenSpin->value(), 2);
}

TEST(MainWindow, CancelStopsATrace) {
    auto w = makeWindow();
    w->setPrompt(QStringLiteral("it is a truth"));
    ASSERT_TRUE(runAndWait(*w));
    const auto before = w->workbenchData().grassmann;
    QSignalSpy cancelled(w.get(), &MainWindow::runCancelled);
    QSignalSpy finished(w.get(), &MainWindow::runFinished);
    w->setPrompt(gwb::app::test::promptOfTokens(20));
    w->run();
    EXPECT_TRUE(w->isRunning());
    w->cancelRun();
    ASSERT_TRUE(cancelled.wait(kWaitMs));
    EXPECT_EQ(finished.count(), 0);
    EXPECT_FALSE(w->isRunning());
    EXPECT_EQ(w->workbenchData().grassmann, before); // the earlier results stay
}

TEST(MainWindow, NewRunDropsStaleResults) {
    auto w = makeWindow();
    QSignalSpy finished(w.get(), &MainWindow::runFinished);
    w->setPrompt(QStringLiteral("emma was in her"));
    w->run();
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    w->run();
    ASSERT_TRUE(finished.wait(kWaitMs));
    QTest::qWait(200); // a stale result would arrive now
    EXPECT_EQ(finished.count(), 1);
    EXPECT_EQ(w->workbenchData().prompt(), "it is a truth universally acknowledged");
}

TEST(MainWindow, SessionRoundTrips) {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("study.json"));
    Session saved;
    {
        auto w = makeWindow();
        w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
        ASSERT_TRUE(runAndWait(*w));
        w->selection()->setLayer(1);
        w->selection()->setToken(4);
        w->selection()->setHead(1);
        w->selection()->setOffsetIndex(1);
        w->showView(QStringLiteral("plucker"));
        ASSERT_EQ(w->saveSession(path), QString());
        saved = w->currentSession();
    }
    auto w2 = makeWindow();
    w2->setModelPaths({}, {});
    QSignalSpy finished(w2.get(), &MainWindow::runFinished);
    ASSERT_EQ(w2->openSession(path), QString());
    ASSERT_TRUE(finished.wait(kWaitMs));
    const Session reopened = w2->currentSession();
    EXPECT_EQ(reopened.grassmannModel, QFileInfo(testModels().grassmann).absoluteFilePath());
    EXPECT_EQ(reopened.token, 4);
    EXPECT_EQ(reopened.layer, 1);
    EXPECT_EQ(reopened.head, 1);
    EXPECT_EQ(reopened.offsetIndex, 1);
    EXPECT_EQ(reopened, saved);
}

TEST(MainWindow, BadInputsGiveMessagesAndKeepState) {
    auto w = makeWindow();
    w->setPrompt(QStringLiteral("it is a truth"));
    ASSERT_TRUE(runAndWait(*w));
    const auto before = w->workbenchData().grassmann;

    // Empty prompt: nothing runs, the message names the problem, results stay.
    w->setPrompt(QStringLiteral("  "));
    QSignalSpy failed(w.get(), &MainWindow::runFailed);
    w->run();
    ASSERT_EQ(failed.count(), 1);
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("empty"))) << w->noticeText().toStdString();
    EXPECT_EQ(w->workbenchData().grassmann, before);

    // Non-UTF-8 prompt file: refused, editor unchanged.
    QTemporaryDir dir;
    const QString bin = dir.filePath(QStringLiteral("latin1.txt"));
    {
        QFile f(bin);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write("caf\xe9 au lait");
    }
    w->setPrompt(QStringLiteral("kept"));
    EXPECT_TRUE(w->openPromptFile(bin).contains(QStringLiteral("UTF-8")));
    EXPECT_EQ(w->prompt(), QStringLiteral("kept"));
    // Said once: in the notice, with the file named once; the status bar only says it did not open.
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("UTF-8"))) << w->noticeText().toStdString();
    EXPECT_EQ(w->noticeText().count(QStringLiteral("latin1.txt")), 1) << w->noticeText().toStdString();
    EXPECT_FALSE(w->statusText().contains(QStringLiteral("UTF-8"))) << w->statusText().toStdString();
    // A sample prompt is a new prompt: the error about the file goes with the old one.
    auto* samples = w->findChild<QComboBox*>(QStringLiteral("samplePrompts"));
    ASSERT_TRUE(samples && samples->count() > 1);
    Q_EMIT samples->activated(1);
    EXPECT_TRUE(w->noticeText().isEmpty() || !w->noticeText().contains(QStringLiteral("UTF-8")))
        << w->noticeText().toStdString();
    EXPECT_NE(w->prompt(), QStringLiteral("kept"));

    // A file that is not a model: the message names it; the other model stays.
    QSignalSpy models(w.get(), &MainWindow::modelsChanged);
    w->openModel(testModels().notAModel);
    ASSERT_TRUE(models.wait(kWaitMs));
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("notes.gwb"))) << w->noticeText().toStdString();
    // What a person needs first, the parser's detail after it.
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("is not a model file (.gwb, .pt, .safetensors)")))
        << w->noticeText().toStdString();
    EXPECT_FALSE(w->grassmannPath().isEmpty());

    // Export to a missing folder, and to a read-only one (only meaningful when not root).
    EXPECT_FALSE(w->exportFigureTo(QStringLiteral("/nonexistent-gwb-folder/fig.png"), QStringLiteral("gate")));
    EXPECT_TRUE(w->statusText().contains(QStringLiteral("does not exist"))) << w->statusText().toStdString();
    if (geteuid() != 0) {
        const QString ro = dir.filePath(QStringLiteral("ro"));
        ASSERT_TRUE(QDir().mkpath(ro));
        QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
        EXPECT_FALSE(w->exportFigureTo(ro + QStringLiteral("/fig.pdf"), QStringLiteral("gate")));
        EXPECT_TRUE(w->statusText().contains(QStringLiteral("not writable"))) << w->statusText().toStdString();
        QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    }
    EXPECT_EQ(w->workbenchData().grassmann, before);

    // Long prompt: visible truncation notice.
    w->setPrompt(gwb::app::test::promptOfTokens(40));
    ASSERT_TRUE(runAndWait(*w));
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("dropped"))) << w->noticeText().toStdString();
    EXPECT_EQ(w->workbenchData().grassmann->length(), 24);
}

// Issue 67: File ▸ Open Prompt File reads a file by the engine's one rule (as gwb figure and
// gwb trace do): an editor's final line end is not part of the prompt; a blank line after it is.
TEST(MainWindow, APromptFilesFinalLineEndIsNotPartOfThePrompt) {
    auto w = makeWindow();
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("prompt.txt"));
    auto write = [&](const QByteArray& bytes) {
        QFile f(path);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
        f.write(bytes);
    };
    write("it is a truth\n");
    EXPECT_TRUE(w->openPromptFile(path).isEmpty());
    EXPECT_EQ(w->prompt(), QStringLiteral("it is a truth"));
    write("it is a truth\n\n");
    EXPECT_TRUE(w->openPromptFile(path).isEmpty());
    EXPECT_EQ(w->prompt(), QStringLiteral("it is a truth\n"));
}

TEST(MainWindow, ExportsEveryViewAsPngSvgPdf) {
    auto w = makeWindow();
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    ASSERT_TRUE(runAndWait(*w));
    QTemporaryDir dir;
    // Saliency comes from a worker: its numbers exist once the result is in.
    const auto* sv = qobject_cast<const gwb::views::SaliencyView*>(w->view(QStringLiteral("saliency")));
    ASSERT_TRUE(sv);
    ASSERT_TRUE(QTest::qWaitFor([&] { return !sv->dataTables().empty(); }, kWaitMs));
    // The Patching view draws a sweep the user runs: patch "it" -> "she" at the first token.
    {
        auto* pv = qobject_cast<gwb::views::PatchingView*>(w->view(QStringLiteral("patching")));
        ASSERT_TRUE(pv);
        gwb::views::PatchingInputs in;
        in.corrupt = "she is a truth universally acknowledged";
        in.answer = "that";
        in.wrong = "the";
        in.site = "resid";
        in.mode = "patch";
        pv->setInputs(in);
        pv->run();
        ASSERT_TRUE(QTest::qWaitFor([&] { return pv->hasContent(); }, kWaitMs)) << pv->message().toStdString();
    }
    // The Paths view too: "Trace paths from here" on the Patching view's cell of h^1 at token 0.
    {
        auto* pv = qobject_cast<gwb::views::PatchingView*>(w->view(QStringLiteral("patching")));
        auto* paths = qobject_cast<gwb::views::PathsView*>(w->view(QStringLiteral("paths")));
        ASSERT_TRUE(paths);
        Q_EMIT pv->tracePathsRequested(0, 1, 0);
        EXPECT_EQ(paths->inputs().corrupt, QStringLiteral("she is a truth universally acknowledged"));
        EXPECT_EQ(paths->inputs().position, 0);
        ASSERT_TRUE(QTest::qWaitFor([&] { return paths->hasContent(); }, kWaitMs)) << paths->message().toStdString();
        EXPECT_TRUE(stdToQ(paths->result().grassmann.senders).contains(QStringLiteral("offset.0.1")));
        EXPECT_TRUE(stdToQ(paths->result().transformer.senders).contains(QStringLiteral("head.1.1")));
    }
    // The Corpus view draws corpus statistics: a short Run > Corpus over a text file.
    {
        QFile text(dir.filePath(QStringLiteral("corpus.txt")));
        ASSERT_TRUE(text.open(QIODevice::WriteOnly));
        text.write(gwb::app::test::promptOfTokens(60).toUtf8());
        text.close();
        gwb::app::CorpusRequest r = w->corpusRequest();
        r.files = {text.fileName()};
        r.window = 12;
        r.stride = 12;
        r.outPath = dir.filePath(QStringLiteral("S.npz"));
        QSignalSpy corpusDone(w.get(), &gwb::app::MainWindow::corpusFinished);
        ASSERT_TRUE(w->runCorpus(r));
        ASSERT_TRUE(corpusDone.wait(kWaitMs));
        // The Features view draws a dictionary: a small one trained on the same text.
        const gwb::engine::Model g = gwb::engine::Model::load(w->grassmannPath().toStdString(), "cpu");
        gwb::engine::FeatureTrainOptions o;
        o.site = "resid.1";
        o.files = {text.fileName().toStdString()};
        o.dSae = 16;
        o.k = 2;
        o.tokens = 4 * 64;
        o.batch = 64;
        o.contextSize = 12;
        o.device = "cpu";
        const QString sae = dir.filePath(QStringLiteral("sae"));
        gwb::engine::saveDictionary(gwb::engine::trainDictionary(g, o).dictionary, sae.toStdString());
        w->openDictionary(sae);
        auto* fv = w->view(QStringLiteral("features"));
        ASSERT_TRUE(QTest::qWaitFor([&] { return fv->hasContent(); }, kWaitMs));
        // The Graph view draws attribution graphs: a small transcoder set of the Grassmann model.
        o.site.clear();
        const QString tc = dir.filePath(QStringLiteral("tc"));
        ASSERT_TRUE(gwb::engine::trainTranscoderSet(g, o, tc.toStdString()));
        auto* gv = qobject_cast<gwb::views::GraphView*>(w->view(QStringLiteral("graph")));
        ASSERT_TRUE(gv);
        gv->setTranscoders(0, tc);
        Q_EMIT gv->runRequested();
        ASSERT_TRUE(QTest::qWaitFor([&] { return gv->hasContent() && !gv->running(); }, kWaitMs))
            << gv->message().toStdString();
    }
    for (const auto* v : w->views()) {
        for (const char* suffix : {".png", ".svg", ".pdf"}) {
            const QString path = dir.filePath(v->viewId() + QLatin1String(suffix));
            EXPECT_TRUE(w->exportFigureTo(path, v->viewId())) << w->statusText().toStdString();
            EXPECT_GT(QFileInfo(path).size(), 0) << path.toStdString();
        }
        EXPECT_TRUE(w->exportDataTo(dir.filePath(v->viewId()), v->viewId())) << w->statusText().toStdString();
        EXPECT_TRUE(QFileInfo::exists(dir.filePath(v->viewId() + QStringLiteral(".json"))));
    }
}

TEST(MainWindow, EditedPromptMarksTheResultsStale) {
    auto w = makeWindow();
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    ASSERT_TRUE(runAndWait(*w)) << w->statusText().toStdString();
    auto* strip = w->findChild<QDockWidget*>(QStringLiteral("dock_tokens"));
    ASSERT_TRUE(strip);
    EXPECT_EQ(strip->windowTitle(), QStringLiteral("Tokens"));
    EXPECT_TRUE(w->noticeText().isEmpty()) << w->noticeText().toStdString();
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged that"));
    EXPECT_TRUE(strip->windowTitle().contains(QStringLiteral("edited"))) << strip->windowTitle().toStdString();
    EXPECT_TRUE(w->noticeText().contains(QStringLiteral("still show the last run"))) << w->noticeText().toStdString();
    // Back to the traced text (undo): nothing is stale.
    w->setPrompt(QStringLiteral("it is a truth universally acknowledged"));
    EXPECT_EQ(strip->windowTitle(), QStringLiteral("Tokens"));
    EXPECT_TRUE(w->noticeText().isEmpty());
    // A run of the edited text clears the mark.
    w->setPrompt(QStringLiteral("it is a truth"));
    ASSERT_TRUE(runAndWait(*w));
    EXPECT_EQ(strip->windowTitle(), QStringLiteral("Tokens"));
}

TEST(MainWindow, HelpHasAViewsGuideWithDefinitionsAndShortcuts) {
    auto w = makeWindow();
    QAction* guide = w->findChild<QAction*>(QStringLiteral("actionViewsGuide"));
    ASSERT_TRUE(guide);
    guide->trigger();
    auto* dialog = w->findChild<QDialog*>(QStringLiteral("viewsGuide"));
    ASSERT_TRUE(dialog);
    EXPECT_TRUE(dialog->isVisible());
    const QString html = gwb::app::viewsGuideHtml();
    // Every view has a section, with the definitions the data exports carry, and the shortcuts.
    for (const auto* v : w->views())
        EXPECT_TRUE(html.contains(QStringLiteral("<h3>") + v->title().toHtmlEscaped())) << v->title().toStdString();
    // Definitions are named in words, the JSON key only beside them (issue 41).
    EXPECT_TRUE(html.contains(QStringLiteral("<b>mean gate</b>"))) << html.toStdString();
    EXPECT_FALSE(html.contains(QStringLiteral("<b>meanGate</b>")));
    EXPECT_FALSE(html.contains(QStringLiteral("<b>pairNorm</b>")));
    // Every view is reachable from the keyboard: Alt+1..9, Alt+0, then Ctrl+PgDown through all.
    EXPECT_TRUE(html.contains(QStringLiteral("Alt+0")));
    QAction* next = nullptr;
    for (QAction* a : w->findChildren<QAction*>())
        if (a->text() == QLatin1String("&Next View")) next = a;
    ASSERT_TRUE(next);
    EXPECT_EQ(next->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_PageDown));
    const QString first = w->currentViewId();
    QStringList seen;
    for (size_t i = 0; i < w->views().size(); ++i) {
        next->trigger();
        seen << w->currentViewId();
    }
    EXPECT_EQ(seen.last(), first) << "Ctrl+PgDown cycles through every view";
    EXPECT_EQ(QSet<QString>(seen.begin(), seen.end()).size(), static_cast<qsizetype>(w->views().size()))
        << seen.join(QLatin1Char(' ')).toStdString();
    EXPECT_TRUE(html.contains(QString::fromStdString(gwb::engine::definitions().at("coherence")).toHtmlEscaped()));
    EXPECT_TRUE(html.contains(QStringLiteral("Ctrl+Shift+Return")));
    dialog->close();
}

// Issue 31: file dialogs open where the last file was chosen (kept across restarts).
TEST(MainWindow, FileDialogsRememberTheLastFolder) {
    ensureApp();
    QTemporaryDir dir;
    ASSERT_TRUE(QDir(dir.path()).mkpath(QStringLiteral("models")));
    gwb::app::rememberDialogFolder(dir.filePath(QStringLiteral("models/m.gwb")));
    EXPECT_EQ(gwb::app::dialogFolder(), QDir(dir.filePath(QStringLiteral("models"))).absolutePath());
    gwb::app::rememberDialogFolder(QString()); // a cancelled dialog changes nothing
    EXPECT_EQ(gwb::app::dialogFolder(), QDir(dir.filePath(QStringLiteral("models"))).absolutePath());
    gwb::app::rememberDialogFolder(dir.filePath(QStringLiteral("gone/x.json")));
    EXPECT_EQ(gwb::app::dialogFolder(), QDir::homePath()) << "a folder that no longer exists falls back to home";
}

// Issue 41: each kind of file has its own last folder: Save Session no longer proposes the folder
// a model came from.
TEST(MainWindow, EachKindOfFileRemembersItsOwnFolder) {
    ensureApp();
    QTemporaryDir dir;
    ASSERT_TRUE(QDir(dir.path()).mkpath(QStringLiteral("models")));
    ASSERT_TRUE(QDir(dir.path()).mkpath(QStringLiteral("sessions")));
    QSettings().remove(QStringLiteral("dialogs/folder/sessions"));
    gwb::app::rememberDialogFolder(dir.filePath(QStringLiteral("models/m.gwb")), QStringLiteral("models"));
    EXPECT_EQ(gwb::app::dialogFolder(QStringLiteral("models")),
              QDir(dir.filePath(QStringLiteral("models"))).absolutePath());
    EXPECT_EQ(gwb::app::dialogFolder(QStringLiteral("sessions")), QDir::homePath());
    gwb::app::rememberDialogFolder(dir.filePath(QStringLiteral("sessions/s.json")), QStringLiteral("sessions"));
    EXPECT_EQ(gwb::app::dialogFolder(QStringLiteral("sessions")),
              QDir(dir.filePath(QStringLiteral("sessions"))).absolutePath());
    EXPECT_EQ(gwb::app::dialogFolder(QStringLiteral("models")),
              QDir(dir.filePath(QStringLiteral("models"))).absolutePath());
}

// Issue 41: the Patching and Paths views share their corrupted prompt, answer and wrong piece.
TEST(MainWindow, CausalViewsShareTheirMetricFields) {
    auto w = makeWindow();
    auto* patching = qobject_cast<gwb::views::PatchingView*>(w->view(QStringLiteral("patching")));
    auto* paths = qobject_cast<gwb::views::PathsView*>(w->view(QStringLiteral("paths")));
    ASSERT_TRUE(patching && paths);
    gwb::views::PatchingInputs in;
    in.corrupt = "He said that he would";
    in.answer = "she";
    in.wrong = "he";
    patching->setInputs(in);
    w->showView(QStringLiteral("paths")); // shown with no corrupted prompt of its own: it takes Patching's
    EXPECT_TRUE(QTest::qWaitFor([&] { return paths->inputs().corrupt == in.corrupt; }, kWaitMs));
    EXPECT_EQ(paths->inputs().answer, in.answer);
    EXPECT_EQ(paths->inputs().wrong, in.wrong);
    // A run in Paths with other fields carries them back to Patching; the site stays Patching's.
    gwb::views::PathsInputs p = paths->inputs();
    p.corrupt = "They said that they would";
    p.answer = "they";
    paths->setInputs(p);
    Q_EMIT paths->runRequested(paths->inputs());
    EXPECT_EQ(patching->inputs().corrupt, p.corrupt);
    EXPECT_EQ(patching->inputs().answer, QStringLiteral("they"));
    EXPECT_EQ(patching->inputs().site, in.site);
    // Showing Patching again does not overwrite what it has.
    w->showView(QStringLiteral("patching"));
    QCoreApplication::processEvents();
    EXPECT_EQ(patching->inputs().corrupt, p.corrupt);
}

TEST(MainWindow, TheWindowIsActiveAgainWhenAModalDialogCloses) {
    // Issue 52: without a window manager, closing a modal dialog left no window active, so the
    // window's shortcuts (F1, Ctrl+Q, Ctrl+Return: window-context shortcuts) did nothing until a click.
    auto w = makeWindow();
    w->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    w->activateWindow();
    ASSERT_TRUE(QTest::qWaitFor([&] { return QApplication::activeWindow() == w.get(); }, kWaitMs));
    QMessageBox box(QMessageBox::Information, QStringLiteral("gwb"), QStringLiteral("A modal message"), QMessageBox::Ok,
                    w.get());
    bool sawDialogActive = false;
    QTimer::singleShot(0, &box, [&] {
        sawDialogActive = QTest::qWaitFor([&] { return QApplication::activeWindow() == &box; }, kWaitMs);
        box.accept();
    });
    box.exec();
    EXPECT_TRUE(sawDialogActive);
    EXPECT_TRUE(QTest::qWaitFor([&] { return QApplication::activeWindow() == w.get(); }, kWaitMs))
        << "active window: " << (QApplication::activeWindow() ? "another" : "none");
    // A window shortcut reaches its action again.
    QAction* guide = w->findChild<QAction*>(QStringLiteral("actionViewsGuide"));
    ASSERT_TRUE(guide);
    ASSERT_FALSE(guide->shortcut().isEmpty());
    QSignalSpy triggered(guide, &QAction::triggered);
    QTest::keyClick(w.get(), guide->shortcut()[0].key(), guide->shortcut()[0].keyboardModifiers());
    EXPECT_EQ(triggered.count(), 1) << guide->shortcut().toString().toStdString();
}

TEST(MainWindow, TheProbeOfAModelNoLongerChosenChangesNothing) {
    // The window starts with the bundled models and probes them; --model and --baseline
    // (setModelPaths) replace them at once. Those first probes (small files) come back first: they
    // must not take the choice back, or the first Run traces the bundled models while the toolbar
    // names the others (seen with a GrassLM-100M-shaped --model under --tour).
    ensureApp();
    MainWindowOptions o;
    o.restoreSettings = false; // and useBundledModels: the window opens the bundled ones
    MainWindow w(o);
    const QString bundledG = w.grassmannPath(), bundledT = w.baselinePath();
    if (bundledG.isEmpty() || bundledT.isEmpty()) GTEST_SKIP() << "no bundled models here";
    auto* controller = w.findChild<TraceController*>();
    ASSERT_TRUE(controller);
    QStringList probed;
    QStringList choiceAfterBundledProbe;
    QObject::connect(controller, &TraceController::modelProbed, &w, [&](const ModelInfo& info) {
        probed << info.path; // after the window's own slot, which was connected first
        if (info.path == bundledG || info.path == bundledT)
            choiceAfterBundledProbe << w.grassmannPath() << w.baselinePath();
    });
    const QString g = QFileInfo(testModels().grassmann).absoluteFilePath();
    const QString t = QFileInfo(testModels().transformer).absoluteFilePath();
    w.setModelPaths(g, t);
    ASSERT_TRUE(QTest::qWaitFor(
        [&] {
            return probed.contains(bundledG) && probed.contains(bundledT) && probed.contains(g) && probed.contains(t);
        },
        kWaitMs))
        << probed.join(QLatin1Char(' ')).toStdString();
    EXPECT_EQ(choiceAfterBundledProbe.join(QLatin1Char(' ')).toStdString(),
              QStringList({g, t, g, t}).join(QLatin1Char(' ')).toStdString());
    EXPECT_EQ(w.grassmannPath(), g);
    EXPECT_EQ(w.baselinePath(), t);
    // And a Run traces them.
    QSignalSpy done(&w, &MainWindow::runFinished);
    w.setPrompt(gwb::app::test::promptOfTokens(8));
    w.run();
    ASSERT_TRUE(done.wait(kWaitMs)) << w.statusText().toStdString();
    ASSERT_TRUE(w.workbenchData().grassmann);
    EXPECT_EQ(w.workbenchData().grassmann->layers.size(), 2u);
    EXPECT_EQ(w.workbenchData().baseline->layers.size(), 2u);
}
