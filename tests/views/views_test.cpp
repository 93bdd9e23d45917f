// Every view builds from a synthetic trace + analysis, draws, exports consistent tables, keeps
// its settings, and shows a message without data.
#include "synthetic_data.h"

#include "gwb/views/attention_view.h"
#include "gwb/views/compare_view.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/gate_view.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/subspace_view.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/view.h"

#include <QAbstractButton>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QTableWidget>
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <set>

using namespace gwb::views;

namespace {
void app() {
    synthetic::ensureApp();
}

/// The application computes saliency; here a fixed signed vector per model stands in for it.
/// The views that show a computed result (Saliency, Patching) get one for `d`.
void feedSaliency(View* v, const WorkbenchData& d, int token) {
    synthetic::feedComputed(v, d, token);
}

int distinctColours(const QImage& img) {
    std::set<QRgb> c;
    for (int y = 0; y < img.height(); y += 3)
        for (int x = 0; x < img.width(); x += 3)
            c.insert(img.pixel(x, y));
    return static_cast<int>(c.size());
}
} // namespace

TEST(Views, FactoryKnowsEveryId) {
    app();
    EXPECT_EQ(viewIds(), (QStringList{"gate", "plucker", "angles", "subspace", "attention", "compare", "readout",
                                      "lens", "saliency", "patching", "paths", "features", "graph", "corpus"}));
    for (const QString& id : viewIds()) {
        auto v = createView(id);
        ASSERT_NE(v, nullptr) << id.toStdString();
        EXPECT_EQ(v->viewId(), id);
        EXPECT_FALSE(v->title().isEmpty());
    }
    EXPECT_EQ(createView(QStringLiteral("nope")), nullptr);
}

TEST(Views, EveryViewBuildsDrawsAndExportsTables) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    s.setToken(9);
    s.setLayer(1);
    s.setHead(2);
    for (const QString& id : viewIds()) {
        SCOPED_TRACE(id.toStdString());
        auto v = createView(id);
        v->setSelection(&s);
        v->setData(d);
        feedSaliency(v.get(), d, 9);
        v->resize(900, 600);
        EXPECT_TRUE(v->hasContent());
        EXPECT_FALSE(v->grab().isNull());
        EXPECT_FALSE(v->caption().isEmpty());
        const auto tables = v->dataTables();
        ASSERT_FALSE(tables.empty());
        for (const auto& t : tables) {
            EXPECT_FALSE(t.name.isEmpty());
            EXPECT_EQ(static_cast<int64_t>(t.values.data.size()), gwb::engine::FloatArray::count(t.values.shape));
            if (!t.rowLabels.isEmpty()) {
                EXPECT_EQ(t.rowLabels.size(), t.values.dim(0)) << t.name.toStdString();
            }
            if (!t.colLabels.isEmpty()) {
                EXPECT_EQ(t.colLabels.size(), t.values.dim(1)) << t.name.toStdString();
            }
        }
        FigureOptions o;
        o.dpi = 80;
        const QImage img = renderFigureImage(*v, o);
        EXPECT_GT(distinctColours(img), 20); // a real picture, not a blank page
        // Settings survive a round trip into a fresh view.
        auto w = createView(id);
        w->setSettings(v->settings());
        EXPECT_EQ(w->settings(), v->settings());
    }
}

TEST(Views, GateViewTablesFollowQuantityAndDrill) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    GateView v;
    v.setSelection(&s);
    v.setData(d);
    auto t = v.dataTables().front();
    EXPECT_EQ(t.values.shape, (std::vector<int64_t>{3, 12}));
    EXPECT_FLOAT_EQ(t.values.at2(2, 5), d.grassmannAnalysis->grassmann[2].meanGate[5]);
    v.setQuantity(GateView::Quantity::AboveHalf);
    t = v.dataTables().front();
    EXPECT_FLOAT_EQ(t.values.at2(1, 4), d.grassmannAnalysis->grassmann[1].gateAboveHalf[4]);
    v.setDrillLayer(1);
    t = v.dataTables().front();
    EXPECT_EQ(t.values.shape, (std::vector<int64_t>{12, 16}));
    EXPECT_FLOAT_EQ(t.values.at2(3, 7), d.grassmann->layers[1].grassmann->gate.at2(3, 7));
    QJsonObject st = v.settings();
    EXPECT_EQ(st.value("drill_layer").toInt(), 1);
    EXPECT_EQ(st.value("quantity").toString(), QStringLiteral("above_half"));
}

TEST(Views, MissingModelsShowAMessageNotABlank) {
    app();
    Selection s;
    for (const QString& id : viewIds()) {
        SCOPED_TRACE(id.toStdString());
        auto v = createView(id);
        v->setSelection(&s);
        v->setData(WorkbenchData{});
        EXPECT_FALSE(v->hasContent());
        EXPECT_TRUE(v->dataTables().empty());
        FigureOptions o;
        o.dpi = 60;
        o.caption = false;
        const QImage img = renderFigureImage(*v, o);
        EXPECT_GT(distinctColours(img), 2); // the message text is drawn
    }
    // Only the Grassmann model: the attention view asks for the baseline.
    WorkbenchData g = synthetic::makeWorkbenchData();
    g.baseline.reset();
    g.baselineAnalysis.reset();
    AttentionView a;
    a.setSelection(&s);
    a.setData(g);
    EXPECT_FALSE(a.hasContent());
    CompareView c;
    c.setSelection(&s);
    c.setData(g);
    EXPECT_FALSE(c.rows().problem.isEmpty());
}

TEST(Views, AttentionRowsRecomputedWithoutDenseMatrix) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    auto sparse = std::make_shared<gwb::engine::Trace>(*d.baseline);
    for (auto& l : sparse->layers)
        l.attention->attn = {}; // as above the dense limit
    auto dense = attentionSource(d.baseline, 1, 2);
    auto computed = attentionSource(sparse, 1, 2);
    ASSERT_TRUE(dense && computed);
    EXPECT_EQ(computed->dense(), nullptr);
    std::vector<float> a(12), b(12);
    for (int64_t r = 0; r < 12; ++r) {
        dense->row(r, a.data());
        computed->row(r, b.data());
        for (int64_t c = 0; c < 12; ++c) {
            if (c > r) {
                EXPECT_TRUE(std::isnan(b[static_cast<size_t>(c)])); // future keys are undefined
            } else {
                EXPECT_NEAR(a[static_cast<size_t>(c)], b[static_cast<size_t>(c)], 1e-5);
            }
        }
    }
}

TEST(Views, CompareRowsAndAgreement) {
    app();
    // Identical rows: JS 0, top-1 agrees; disjoint rows: JS = ln 2.
    const RowComparison same = compareDistributions({0.2f, 0.8f}, {0.4f, 1.6f});
    EXPECT_NEAR(same.jsDivergence, 0.0, 1e-12);
    EXPECT_TRUE(same.top1Agrees);
    const RowComparison disjoint = compareDistributions({1, 0}, {0, 1});
    EXPECT_NEAR(disjoint.jsDivergence, std::log(2.0), 1e-12);
    EXPECT_FALSE(disjoint.top1Agrees);
    EXPECT_TRUE(std::isnan(compareDistributions({0, 0}, {0, 1}).jsDivergence));
    // Screen rows: NaN and negative entries count as 0, the longer row is cut to the shorter;
    // the result is the engine's compareRows on the cleaned rows.
    const float nan = std::nanf("");
    const RowComparison messy = compareDistributions({nan, 0.3f, -1.0f, 0.7f, 5.0f}, {0.1f, 0.2f, 0.3f, 0.4f});
    const gwb::engine::RowAgreement clean =
        gwb::engine::compareRows({0.0f, 0.3f, 0.0f, 0.7f}, {0.1f, 0.2f, 0.3f, 0.4f});
    EXPECT_DOUBLE_EQ(messy.jsDivergence, clean.jsDivergence);
    EXPECT_EQ(messy.top1Agrees, clean.top1Agrees);
    EXPECT_TRUE(messy.top1Agrees);
    EXPECT_GT(messy.jsDivergence, 0.0);

    const WorkbenchData d = synthetic::makeWorkbenchData();
    const auto& ga = d.grassmannAnalysis->grassmann[1];
    const auto row = influenceRow(ga, 9);
    ASSERT_EQ(row.size(), 10u);
    EXPECT_FLOAT_EQ(row[8], ga.influence.at2(9, 0)); // D = 1
    EXPECT_FLOAT_EQ(row[7], ga.influence.at2(9, 1)); // D = 2
    EXPECT_FLOAT_EQ(row[5], ga.influence.at2(9, 2)); // D = 4
    EXPECT_FLOAT_EQ(row[0], 0.0f);
    Selection s;
    s.setExtents(d);
    s.setToken(9);
    s.setLayer(1);
    CompareView c;
    c.setSelection(&s);
    c.setData(d);
    const auto rows = c.rows();
    ASSERT_EQ(rows.values.size(), 6u); // influence, 4 heads, mean
    EXPECT_EQ(rows.agreement.size(), 5u);
    EXPECT_NEAR(rows.agreement[0].jsDivergence, compareDistributions(rows.values[0], rows.values[1]).jsDivergence,
                1e-12);
}

TEST(Views, SubspacePictureCirclesContainTheProjectedVectors) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    const auto& gl = *d.grassmann->layers[1].grassmann;
    const SubspacePicture pic = computeSubspacePicture(gl, 9, tokenLabels(*d.grassmann));
    ASSERT_EQ(pic.offsets, (std::vector<int>{1, 2, 4}));
    ASSERT_EQ(pic.sphere.circles.size(), 3u);
    EXPECT_GT(pic.explainedVariance, 0.0);
    EXPECT_LE(pic.explainedVariance, 1.0);
    // Projected z_t (the last point) lies on every circle: orthogonal to each circle's normal.
    const Vec3 zt = pic.sphere.points.back().v;
    for (const auto& c : pic.sphere.circles) {
        const Vec3 n{c.e1[1] * c.e2[2] - c.e1[2] * c.e2[1], c.e1[2] * c.e2[0] - c.e1[0] * c.e2[2],
                     c.e1[0] * c.e2[1] - c.e1[1] * c.e2[0]};
        EXPECT_NEAR(n[0] * zt[0] + n[1] * zt[1] + n[2] * zt[2], 0.0, 1e-9);
        EXPECT_NEAR(c.e1[0] * c.e2[0] + c.e1[1] * c.e2[1] + c.e1[2] * c.e2[2], 0.0, 1e-9);
    }
    for (double k : pic.keptFraction) {
        EXPECT_GE(k, 0.0);
        EXPECT_LE(k, 1.0 + 1e-12);
    }
    // Token 0 has no valid offset: no circles, a note says why.
    const SubspacePicture none = computeSubspacePicture(gl, 0, tokenLabels(*d.grassmann));
    EXPECT_TRUE(none.sphere.circles.empty());
    EXPECT_FALSE(none.sphere.notes.isEmpty());
    EXPECT_THROW(computeSubspacePicture(gl, 99, {}), std::invalid_argument);
}

TEST(Views, CompareDifferenceIsSignedAndCentredAtZero) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    CompareView c;
    c.setSelection(&s);
    c.setData(d);
    const ColorScale scale = c.differenceHeatmap()->colorScale();
    EXPECT_EQ(scale.map, ColormapId::RdBu);
    EXPECT_TRUE(scale.diverging);
    EXPECT_DOUBLE_EQ(scale.effectiveLow(), -scale.effectiveHigh());
    const auto tables = c.dataTables();
    const auto it = std::find_if(tables.begin(), tables.end(),
                                 [](const DataTable& t) { return t.name == "prompt_distance_difference"; });
    ASSERT_NE(it, tables.end());
    EXPECT_FLOAT_EQ(it->values.at2(0, 2), d.grassmannAnalysis->promptSubspaceDistance.at2(0, 2) -
                                              d.baselineAnalysis->promptSubspaceDistance.at2(0, 2));
}

TEST(Views, DrawTheEngineAnalysisOfASyntheticTrace) {
    app();
    WorkbenchData d = synthetic::makeWorkbenchData();
    // Replace the hand-made analyses by the real ones.
    d.grassmannAnalysis = std::make_shared<gwb::engine::TraceAnalysis>(gwb::engine::analyzeTrace(*d.grassmann));
    d.baselineAnalysis = std::make_shared<gwb::engine::TraceAnalysis>(gwb::engine::analyzeTrace(*d.baseline));
    ASSERT_EQ(d.grassmannAnalysis->grassmann.size(), 3u);
    ASSERT_EQ(d.baselineAnalysis->attention.size(), 3u);
    Selection s;
    s.setExtents(d);
    s.setToken(9);
    s.setLayer(1);
    for (const QString& id : viewIds()) {
        SCOPED_TRACE(id.toStdString());
        auto v = createView(id);
        v->setSelection(&s);
        v->setData(d);
        feedSaliency(v.get(), d, 9);
        EXPECT_TRUE(v->hasContent());
        EXPECT_FALSE(v->dataTables().empty());
        FigureOptions o;
        o.dpi = 60;
        EXPECT_GT(distinctColours(renderFigureImage(*v, o)), 20);
    }
    // Our compare rows agree with the engine's definitions of the influence row and JS divergence.
    const auto& ga = d.grassmannAnalysis->grassmann[1];
    const auto full = gwb::engine::influenceMatrix(ga, d.grassmann->length());
    const auto row = influenceRow(ga, 9);
    for (int64_t j = 0; j <= 9; ++j)
        EXPECT_NEAR(row[static_cast<size_t>(j)], full.at2(9, j), 1e-6) << j;
    const auto att = gwb::engine::attentionRow(*d.baseline->layers[1].attention, 0, 9);
    EXPECT_NEAR(compareDistributions(row, att).jsDivergence, gwb::engine::compareRows(row, att).jsDivergence, 1e-9);
    EXPECT_EQ(compareDistributions(row, att).top1Agrees, gwb::engine::compareRows(row, att).top1Agrees);
}

TEST(Views, TraceWithoutAnalysisSaysItIsBeingAnalysed) {
    app();
    WorkbenchData d = synthetic::makeWorkbenchData();
    d.grassmannAnalysis.reset();
    d.baselineAnalysis.reset();
    Selection s;
    s.setExtents(d);
    GateView g;
    g.setSelection(&s);
    g.setData(d);
    EXPECT_FALSE(g.hasContent());
    FigureOptions o;
    o.dpi = 60;
    EXPECT_FALSE(renderFigureImage(g, o).isNull());
    // Views that need only the trace still draw.
    auto sub = createView("subspace");
    sub->setSelection(&s);
    sub->setData(d);
    EXPECT_TRUE(sub->hasContent());
}

TEST(Views, AttentionSaysWhyACellIsGreyAndWhatEachMetricIs) {
    // A causally masked cell was called "undefined here, e.g. no valid offset"; the real reason is
    // that the key comes after the query. The metric columns had no tooltips, and a negative
    // transport cost was never explained.
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    s.setLayer(1);
    s.setToken(5);
    AttentionView v;
    v.setSelection(&s);
    v.setData(d);
    auto* heat = v.findChild<HeatmapWidget*>();
    ASSERT_NE(heat, nullptr);
    const QString masked = heat->readout(2, 7);
    EXPECT_TRUE(masked.contains(QStringLiteral("key 7 comes after query 2"))) << masked.toStdString();
    EXPECT_FALSE(masked.contains(QStringLiteral("offset"))) << masked.toStdString();
    auto* table = v.findChild<QTableWidget*>();
    ASSERT_NE(table, nullptr);
    for (int c = 0; c < table->columnCount(); ++c) {
        const QTableWidgetItem* h = table->horizontalHeaderItem(c);
        ASSERT_NE(h, nullptr);
        EXPECT_FALSE(h->toolTip().isEmpty()) << h->text().toStdString();
    }
    EXPECT_TRUE(table->horizontalHeaderItem(6)->toolTip().contains(QStringLiteral("negative")));
}

TEST(Views, LongMessagesWrapAndLeaveTheControlsWhereTheyAre) {
    // Issue 52: one error message in the Saliency view (Target "xyzzyq") was one unwrapped line that
    // shrank the Target field to 25 px, pushed Colormap off screen and brought a horizontal scroll
    // bar. Every view's message labels (detail::messageLabel) get a long message at 1280 x 720; the
    // controls keep their geometry and each message is shown whole within the view's width.
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    const QString message = QStringLiteral(
        "'xyzzyq' is not a piece of the Grassmann model's vocabulary (nor of the Transformer's): give one piece "
        "as the tokenizer writes it, for example \u2581the or \u2581she, or leave the field empty for the actual "
        "next token; the vocabulary has 4000 pieces and the nearest spellings are xy, zz and yq, none of which is "
        "what was asked for, so nothing was computed and the previous result stays on screen.");
    int labelled = 0;
    for (const QString& id : viewIds()) {
        SCOPED_TRACE(id.toStdString());
        auto v = createView(id);
        v->setSelection(&s);
        v->setData(d);
        feedSaliency(v.get(), d, 3);
        v->resize(1280, 720);
        v->show();
        v->layout()->activate();
        auto controls = [&] {
            std::vector<std::pair<QString, QRect>> out;
            for (QWidget* w : v->findChildren<QWidget*>())
                if (w->isVisibleTo(v.get()) && (qobject_cast<QAbstractButton*>(w) || qobject_cast<QComboBox*>(w) ||
                                                qobject_cast<QLineEdit*>(w) || qobject_cast<QAbstractSpinBox*>(w)))
                    out.emplace_back(w->objectName() + QLatin1Char('/') + QLatin1String(w->metaObject()->className()),
                                     QRect(w->mapTo(v.get(), QPoint(0, 0)), w->size()));
            return out;
        };
        const auto before = controls();
        const QList<QLabel*> labels = v->findChildren<QLabel*>();
        std::vector<QLabel*> messages;
        for (QLabel* l : labels)
            if (l->property("gwbMessage").toBool()) messages.push_back(l);
        if (id == QLatin1String("saliency") || id == QLatin1String("patching") || id == QLatin1String("paths")) {
            EXPECT_FALSE(messages.empty());
        }
        for (QLabel* l : messages) {
            l->setText(message);
            ++labelled;
        }
        v->layout()->activate();
        v->layout()->activate();
        EXPECT_LE(v->minimumSizeHint().width(), 1280);
        const auto after = controls();
        ASSERT_EQ(before.size(), after.size());
        for (size_t i = 0; i < before.size(); ++i) {
            EXPECT_EQ(before[i].first, after[i].first);
            // Below a message row the controls may move down, never change size or order across.
            EXPECT_EQ(before[i].second.size(), after[i].second.size()) << before[i].first.toStdString();
            EXPECT_EQ(before[i].second.x(), after[i].second.x()) << before[i].first.toStdString();
            EXPECT_GE(after[i].second.right(), 0);
            EXPECT_LE(after[i].second.right(), v->width()) << before[i].first.toStdString();
        }
        for (QLabel* l : messages) {
            if (!l->isVisibleTo(v.get())) continue;
            SCOPED_TRACE(l->objectName().toStdString());
            EXPECT_LE(l->mapTo(v.get(), QPoint(0, 0)).x() + l->width(), v->width());
            EXPECT_GE(l->height(), l->heightForWidth(l->width()));               // every wrapped line shown
            EXPECT_GT(l->heightForWidth(l->width()), l->fontMetrics().height()); // it did wrap
        }
    }
    EXPECT_GE(labelled, 3);
}
