// The Lens view in the window as a person uses it: after a Run, lens folders are opened beside the
// models; their readouts arrive off the GUI thread and the view shows every lens beside the logit
// lens for both models, saying where each was fitted and when that was another model; a new Run
// reads them out again on its prompt; "Logit lens only" goes back to the logit lens.

#include "gui/lens_job.h"
#include "gui/main_window.h"

#include "app_test_util.h"
#include "window_run_util.h"

#include "gwb/engine/features.h"
#include "gwb/engine/lens.h"
#include "gwb/engine/model.h"
#include "gwb/views/lens_view.h"

#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QStackedWidget>
#include <QTemporaryDir>
#include <QTest>

#include <gtest/gtest.h>

using namespace gwb::app;

namespace {

constexpr int kWaitMs = 180000;

/// A tuned lens of the bundled Grassmann model and a Jacobian lens of the bundled Transformer
/// (tiny budgets), and a zero tuned lens recorded as fitted on some other model of the same shape.
struct Folders {
    QTemporaryDir dir;
    QString tuned, jacobian, other;
    Folders() {
        const gwb::engine::Model g =
            gwb::engine::Model::load(gwb::app::test::bundledModelPath("grassmann-austen.gwb"), "cpu");
        const gwb::engine::Model t =
            gwb::engine::Model::load(gwb::app::test::bundledModelPath("transformer-austen.gwb"), "cpu");
        const std::vector<int32_t> ids = g.tokenizer()->encodeIds(
            "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in "
            "want of a wife. However little known the feelings or views of such a man may be.");
        gwb::engine::LensFitRequest r;
        r.promptIds = {ids};
        r.window = 32;
        r.kind = gwb::engine::LensKind::Tuned;
        r.steps = 2;
        r.tokensPerStep = 32;
        tuned = dir.filePath(QStringLiteral("g-tuned"));
        gwb::engine::writeLens(gwb::engine::fitLens(g, r), tuned.toStdString());
        r.kind = gwb::engine::LensKind::Jacobian;
        r.skipFirst = 2;
        r.maxPrompts = 1;
        jacobian = dir.filePath(QStringLiteral("t-jacobian"));
        gwb::engine::writeLens(gwb::engine::fitLens(t, r), jacobian.toStdString());
        gwb::engine::Lens zero = gwb::engine::readLens(tuned.toStdString());
        for (auto& m : zero.matrix)
            std::fill(m.data.begin(), m.data.end(), 0.0f);
        zero.modelName = "somebody-elses-model";
        zero.modelHash = "0000";
        other = dir.filePath(QStringLiteral("other-tuned"));
        gwb::engine::writeLens(zero, other.toStdString());
    }
};

Folders& folders() {
    static Folders f;
    return f;
}

QPushButton* button(QWidget* w, const QString& text) {
    for (auto* b : w->findChildren<QPushButton*>())
        if (b->text() == text) return b;
    return nullptr;
}

std::vector<std::string> kinds(const std::vector<gwb::engine::LensReadout>& rs) {
    std::vector<std::string> out;
    for (const auto& r : rs)
        out.push_back(r.lens + (r.sameModel ? "" : "*"));
    return out;
}

} // namespace

TEST(LensInWindow, OpenedLensesAreReadOutBesideTheModelsAndFollowANewRun) {
    Folders& f = folders();
    auto w = gwb::app::test::windowAfterARun(QStringLiteral("It is a truth universally acknowledged, that a single"),
                                             kWaitMs);
    ASSERT_NE(w, nullptr);
    auto* lv = qobject_cast<gwb::views::LensView*>(w->view(QStringLiteral("lens")));
    ASSERT_NE(lv, nullptr);
    w->showView(QStringLiteral("lens"));
    ASSERT_NE(button(lv, QStringLiteral("Open lenses\u2026")), nullptr);
    EXPECT_FALSE(lv->comparing());
    lv->setLensFolders({f.tuned, f.jacobian, f.other});
    // The readouts are computed off the GUI thread: it keeps serving events meanwhile.
    int ticks = 0;
    ASSERT_TRUE(QTest::qWaitFor(
        [&] {
            ++ticks;
            return lv->comparing() && !lv->lensMessage().contains(QStringLiteral("Reading out"));
        },
        kWaitMs))
        << lv->lensMessage().toStdString();
    EXPECT_GT(ticks, 1);
    const auto* lens = dynamic_cast<const gwb::views::LensFigure*>(&lv->figure());
    ASSERT_NE(lens, nullptr);
    const gwb::engine::LensComparisonPtr c = lens->comparison();
    ASSERT_NE(c, nullptr);
    // Each lens on the model it was fitted on; the other model's lens on both, marked.
    EXPECT_EQ(kinds(c->grassmann), (std::vector<std::string>{"logit", "tuned", "tuned*"}));
    EXPECT_EQ(kinds(c->baseline), (std::vector<std::string>{"logit", "jacobian", "tuned*"}));
    const QString message = lv->lensMessage();
    EXPECT_TRUE(message.contains(QStringLiteral("fitted on somebody-elses-model \u2014 another model than the one "
                                                "drawn")))
        << message.toStdString();
    EXPECT_TRUE(lv->findChild<QLabel*>(QStringLiteral("lensStatus"))->isVisible());
    EXPECT_EQ(lv->findChild<QStackedWidget*>()->currentIndex(), 1); // the lenses side by side
    const int64_t firstLength = w->workbenchData().grassmann->length();
    EXPECT_EQ(c->grassmann[1].top1.dim(1), firstLength);
    // A new Run: the lenses are read out again on the new prompt.
    w->setPrompt(QStringLiteral("It is a truth universally acknowledged, that a single man in possession of a good "
                                "fortune, must be in want of a wife."));
    QSignalSpy done(w.get(), &MainWindow::runFinished);
    w->run();
    ASSERT_TRUE(done.wait(kWaitMs));
    const int64_t secondLength = w->workbenchData().grassmann->length();
    ASSERT_NE(secondLength, firstLength);
    ASSERT_TRUE(QTest::qWaitFor(
        [&] {
            const auto now = lens->comparison();
            return now && !now->grassmann.empty() && now->grassmann[0].top1.dim(1) == secondLength &&
                   !lv->lensMessage().contains(QStringLiteral("Reading out"));
        },
        kWaitMs));
    // Back to the logit lens alone.
    button(lv, QStringLiteral("Logit lens only"))->click();
    EXPECT_FALSE(lv->comparing());
    EXPECT_TRUE(lv->lensFolders().isEmpty());
    EXPECT_EQ(lv->findChild<QStackedWidget*>()->currentIndex(), 0);
    EXPECT_FALSE(lv->findChild<QLabel*>(QStringLiteral("lensStatus"))->isVisible());
}

TEST(LensInWindow, AFolderThatIsNotALensIsNamed) {
    auto w = gwb::app::test::windowAfterARun(QStringLiteral("It is a truth"), kWaitMs);
    ASSERT_NE(w, nullptr);
    auto* lv = qobject_cast<gwb::views::LensView*>(w->view(QStringLiteral("lens")));
    ASSERT_NE(lv, nullptr);
    QTemporaryDir empty;
    lv->setLensFolders({empty.path()});
    ASSERT_TRUE(
        QTest::qWaitFor([&] { return lv->lensMessage().contains(QStringLiteral("could not be read out")); }, kWaitMs))
        << lv->lensMessage().toStdString();
    EXPECT_TRUE(lv->lensMessage().contains(empty.path())) << lv->lensMessage().toStdString();
    EXPECT_FALSE(lv->comparing());
}
