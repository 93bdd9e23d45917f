// The Features view of a crosscoder (issue 52, item 2): its relative-norm histogram reads 0, 0.5
// and 1 whole on screen, its title fits, every bar says on hover what it counts and of which kind;
// the one-column figure has both models, the chosen feature's histogram and the relative norms,
// lettered as the caption names them (no "Right:" about a panel that stands below).
#include "svg_text.h"
#include "synthetic_data.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/features_view.h"
#include "gwb/views/figure_export.h"

#include <QAbstractBarSeries>
#include <QBarSet>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QCoreApplication>
#include <QFontMetrics>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QTemporaryDir>
#include <QTest>
#include <gtest/gtest.h>

using namespace gwb::views;

namespace {

struct CrosscoderView {
    WorkbenchData d;
    Selection s;
    FeaturesView v;
    FeatureDataPtr f;
    CrosscoderView() {
        d = synthetic::makeWorkbenchData({});
        s.setExtents(d);
        s.setToken(5);
        v.setSelection(&s);
        v.setData(d);
        f = synthetic::makeFeatureData(d, /*crosscoder=*/true);
        v.setFeatures(f);
    }
};

} // namespace

TEST(FeaturesFigure, TheCrosscoderHistogramReadsWholeAndSaysWhatEachBarIs) {
    synthetic::ensureApp();
    CrosscoderView cv;
    cv.v.resize(1280, 640);
    cv.v.show();
    ChartWidget* w = cv.v.relativeNormWidget();
    ASSERT_TRUE(w->isVisible());
    const ChartData& c = w->chart();
    // Every feature counted once, in the bar of its kind (stacked: one series per kind).
    double total = 0;
    for (const ChartSeries& s : c.series)
        for (double y : s.y)
            total += y;
    EXPECT_EQ(total, static_cast<double>(cv.f->dSae));
    ASSERT_EQ(c.series.size(), 3u);
    EXPECT_EQ(c.series[0].name, QStringLiteral("first only")); // the header names the models
    EXPECT_EQ(c.series[2].name, QStringLiteral("second only"));
    EXPECT_TRUE(cv.v.relativeNormChart(true).series[2].name.contains(QString::fromStdString(cv.f->secondModelName)));
    // On screen: ticks on the bin edges, 0, 0.5 and 1 among them, whole.
    auto* view = w->findChild<QChartView*>();
    ASSERT_TRUE(view);
    QCategoryAxis* edges = nullptr;
    for (QAbstractAxis* a : view->chart()->axes(Qt::Horizontal))
        if (auto* e = qobject_cast<QCategoryAxis*>(a)) edges = e;
    ASSERT_TRUE(edges);
    const QStringList labels = edges->categoriesLabels();
    for (const char* want : {"0", "0.5", "1"})
        EXPECT_TRUE(labels.contains(QString::fromLatin1(want))) << labels.join(QStringLiteral(", ")).toStdString();
    // The title fits the chart's width (it was "Relative decoder norm: 0 = austen-…").
    EXPECT_LT(QFontMetrics(view->chart()->titleFont()).horizontalAdvance(view->chart()->title()), w->width());
    // Hovering a bar says its range, its count and its kind.
    auto* series = qobject_cast<QAbstractBarSeries*>(view->chart()->series().front());
    ASSERT_TRUE(series);
    int bin = 0;
    for (QBarSet* set : series->barSets()) {
        Q_EMIT set->hovered(true, 4);
        const QString tip = w->shownBarTip();
        EXPECT_TRUE(tip.contains(QStringLiteral("0.4\u20130.5"))) << tip.toStdString();
        EXPECT_TRUE(tip.contains(QStringLiteral("shared"))) << tip.toStdString();
        EXPECT_TRUE(tip.contains(QStringLiteral("feature"))) << tip.toStdString();
        ++bin;
    }
    EXPECT_EQ(bin, 3);
    Q_EMIT series->barSets().front()->hovered(true, 9);
    EXPECT_TRUE(w->shownBarTip().contains(QString::fromStdString(cv.f->secondModelName)))
        << w->shownBarTip().toStdString();
    Q_EMIT series->barSets().front()->hovered(false, 9);
    EXPECT_TRUE(w->shownBarTip().isEmpty());
}

TEST(FeaturesFigure, TheOneColumnCrosscoderFigureHasBothModelsAndTheHistogram) {
    synthetic::ensureApp();
    CrosscoderView cv;
    const int64_t chosen = cv.f->perToken[5].front().first;
    cv.v.chooseFeature(chosen);
    cv.v.setDashboard(synthetic::makeFeatureDashboard(*cv.f, chosen));
    const QString caption = cv.v.caption();
    EXPECT_TRUE(caption.contains(QStringLiteral("crosscoder"))) << caption.toStdString();
    EXPECT_TRUE(caption.contains(QString::fromStdString(cv.f->secondModelName))) << caption.toStdString();
    EXPECT_FALSE(caption.contains(QStringLiteral("Right:"))) << caption.toStdString();
    EXPECT_FALSE(caption.contains(QStringLiteral("a topk dictionary"))) << caption.toStdString();
    EXPECT_TRUE(caption.contains(QStringLiteral("(b)")) && caption.contains(QStringLiteral("(c)")))
        << caption.toStdString();
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        QString error;
        const QStringList texts =
            gwb::test::figureTexts(cv.v, o, dir.filePath(QStringLiteral("f%1.svg").arg(o.widthInches)), &error);
        ASSERT_FALSE(texts.isEmpty()) << error.toStdString();
        const QString all = texts.join(QLatin1Char('\n'));
        for (const QString& want :
             {QStringLiteral("(a) Most active features"), QStringLiteral("(c) Relative decoder norm"),
              QStringLiteral("(b) ") + QString::fromStdString(cv.f->featureName(chosen)),
              QString::fromStdString(cv.f->modelName) + QStringLiteral(" only"),
              QString::fromStdString(cv.f->secondModelName) + QStringLiteral(" only"), QStringLiteral("0.5")})
            EXPECT_TRUE(all.contains(want)) << want.toStdString() << " missing at " << o.widthInches << " in";
        const QStringList cut = gwb::test::cutTexts(texts);
        EXPECT_TRUE(cut.isEmpty()) << cut.join(QStringLiteral(" | ")).toStdString();
    }
}

TEST(ChartLabels, CategoryLabelsOnScreenAreNeverCutByQtCharts) {
    // Issue 52: the Saliency chart's x labels read "10_Eliza…" and "14_read…": Qt Charts cut the
    // upright composed labels. Every label Qt draws must be whole: the composed label, or its index.
    synthetic::ensureApp();
    const char* pieces[] = {
        "\u2581It",   "\u2581is",      "\u2581a",    "\u2581truth",      "\u2581universally", "\u2581acknowledged",
        ",",          "\u2581that",    "\u2581a",    "\u2581single",     "\u2581Elizabeth",   "\u2581read",
        "\u2581the",  "\u2581letter",  "\u2581read", "\u2581possession", "\u2581of",          "\u2581a",
        "\u2581good", "\u2581fortune", "."};
    ChartData c;
    c.kind = ChartData::Kind::Bar;
    c.title = QStringLiteral("Token 20: saliency share");
    ChartSeries s;
    for (int j = 0; j < 21; ++j) {
        c.categories << QStringLiteral("%1 %2").arg(j).arg(QString::fromUtf8(pieces[j]));
        s.y.push_back(0.05 * (j % 5));
    }
    c.series.push_back(s);
    for (const QSize size : {QSize(800, 220), QSize(800, 330), QSize(800, 450), QSize(1200, 600), QSize(500, 700),
                             QSize(600, 700), QSize(700, 500), QSize(650, 300), QSize(420, 400)}) {
        ChartWidget w;
        w.resize(size);
        w.setChart(c);
        w.show();
        auto* view = w.findChild<QChartView*>();
        ASSERT_TRUE(view);
        // Qt Charts lays its axes out over several passes after the widget is shown: wait until its
        // labels are placed (whole ones, if it ever gets there; the check below says which are cut).
        auto cut = [&] {
            for (QGraphicsItem* item : view->scene()->items())
                if (auto* text = dynamic_cast<QGraphicsTextItem*>(item);
                    text && text->toPlainText().endsWith(QLatin1String("...")))
                    return true;
            return false;
        };
        (void)QTest::qWaitFor([&] { return !cut(); }, 2000);
        int labels = 0;
        for (QGraphicsItem* item : view->scene()->items()) {
            auto* text = dynamic_cast<QGraphicsTextItem*>(item);
            if (!text) continue;
            labels += text->isVisible() && !text->toPlainText().isEmpty() ? 1 : 0;
            // Qt Charts elides with "..." (three full stops).
            EXPECT_FALSE(text->toPlainText().endsWith(QChar(0x2026)) ||
                         text->toPlainText().endsWith(QLatin1String("...")))
                << text->toPlainText().toStdString() << " at " << size.width() << " x " << size.height();
        }
        EXPECT_GE(labels, 5) << "the check reads Qt Charts' labels";
    }
}
