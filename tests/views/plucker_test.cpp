// The Plücker view and the token strip show the bivector coherence ||B_t|| by default: what they
// draw and export is the analysis field, on the fixed [0, 1] scale; residual and planarity stay
// selectable and their caption calls them a rounding check.
#include "synthetic_data.h"

#include "gwb/engine/npy.h"
#include "gwb/views/chart_widget.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/token_strip.h"

#include <QApplication>
#include <QAbstractAxis>
#include <QChart>
#include <QChartView>
#include <QImage>
#include <QTemporaryDir>
#include <gtest/gtest.h>
#include <cmath>

using namespace gwb::views;

namespace {
// Synthetic trace with the engine's own analysis (real coherence, residual and planarity).
WorkbenchData analysedData() {
    synthetic::ensureApp();
    WorkbenchData d = synthetic::makeWorkbenchData();
    d.grassmannAnalysis = std::make_shared<gwb::engine::TraceAnalysis>(gwb::engine::analyzeTrace(*d.grassmann));
    return d;
}

QString definition(const char* key) {
    return QString::fromStdString(gwb::engine::definitions().at(key));
}
} // namespace

TEST(PluckerView, CoherenceIsTheDefaultAndDrawsTheAnalysisField) {
    const WorkbenchData d = analysedData();
    Selection s;
    s.setExtents(d);
    s.setToken(9);
    s.setLayer(1);
    PluckerView v;
    v.setSelection(&s);
    v.setData(d);
    EXPECT_EQ(v.quantity(), PluckerView::Quantity::Coherence);
    EXPECT_EQ(v.settings().value("quantity").toString(), QStringLiteral("coherence"));
    const auto& layers = d.grassmannAnalysis->grassmann;
    const int64_t T = d.grassmann->length();
    // What the heatmap draws: layer x token, equal to GrassmannLayerAnalysis::coherence.
    const MatrixSource* src = v.heatmap()->source();
    ASSERT_NE(src, nullptr);
    ASSERT_EQ(src->rows(), static_cast<int64_t>(layers.size()));
    ASSERT_EQ(src->cols(), T);
    std::vector<float> row(static_cast<size_t>(T));
    int finite = 0;
    for (int64_t l = 0; l < src->rows(); ++l) {
        src->row(l, row.data());
        for (int64_t t = 0; t < T; ++t) {
            const float want = layers[static_cast<size_t>(l)].coherence[static_cast<size_t>(t)];
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(row[static_cast<size_t>(t)])) << l << "," << t;
                continue;
            }
            EXPECT_FLOAT_EQ(row[static_cast<size_t>(t)], want) << l << "," << t;
            EXPECT_GE(want, 0.0f);
            EXPECT_LE(want, 1.0f + 1e-6f);
            ++finite;
        }
    }
    EXPECT_GT(finite, 0);
    // Token 0 has no valid offset: undefined (grey), not 0.
    src->row(0, row.data());
    EXPECT_TRUE(std::isnan(row[0]));
    // Coherence lives in [0, 1]: the colour scale is fixed, not stretched to the data.
    EXPECT_DOUBLE_EQ(v.heatmap()->colorScale().effectiveLow(), 0.0);
    EXPECT_DOUBLE_EQ(v.heatmap()->colorScale().effectiveHigh(), 1.0);
    // The caption carries the engine's definition.
    EXPECT_TRUE(v.caption().contains(definition("coherence")));
    EXPECT_FALSE(v.caption().contains(QStringLiteral("Rounding check")));
}

TEST(PluckerView, ExportedCoherenceNpyEqualsTheAnalysisField) {
    const WorkbenchData d = analysedData();
    QTemporaryDir dir;
    FigureOptions o;
    o.dpi = 60;
    const ExportResult r =
        exportViewFigure("plucker", d, SelectionState{7, 2, 0, 0}, {}, o, dir.filePath("fig.png"), dir.filePath("fig"));
    ASSERT_TRUE(r.ok) << r.message.toStdString();
    const gwb::engine::NpyArray a = gwb::engine::readNpy(dir.filePath("fig_coherence.npy").toStdString());
    const auto& layers = d.grassmannAnalysis->grassmann;
    const int64_t T = d.grassmann->length();
    ASSERT_EQ(a.type, gwb::engine::NpyType::Float32);
    ASSERT_EQ(a.shape, (std::vector<int64_t>{static_cast<int64_t>(layers.size()), T}));
    const std::vector<float> v = a.values<float>();
    for (size_t l = 0; l < layers.size(); ++l)
        for (int64_t t = 0; t < T; ++t) {
            const float want = layers[l].coherence[static_cast<size_t>(t)];
            const float got = v[l * static_cast<size_t>(T) + static_cast<size_t>(t)];
            if (std::isnan(want))
                EXPECT_TRUE(std::isnan(got));
            else
                EXPECT_FLOAT_EQ(got, want);
        }
}

TEST(PluckerView, ResidualAndPlanaritySelectableAsARoundingCheck) {
    const WorkbenchData d = analysedData();
    Selection s;
    s.setExtents(d);
    PluckerView v;
    v.setSelection(&s);
    v.setData(d);
    QJsonObject st;
    st.insert("quantity", "residual");
    v.setSettings(st);
    EXPECT_EQ(v.quantity(), PluckerView::Quantity::Residual);
    EXPECT_EQ(v.settings().value("quantity").toString(), QStringLiteral("residual"));
    EXPECT_TRUE(v.caption().contains(QStringLiteral("Rounding check")));
    EXPECT_TRUE(v.caption().contains(QStringLiteral("always a plane")));
    EXPECT_TRUE(v.caption().contains(definition("residual")));
    auto t = v.dataTables().front();
    EXPECT_EQ(t.name, QStringLiteral("residual"));
    EXPECT_FLOAT_EQ(t.values.at2(2, 6), d.grassmannAnalysis->grassmann[2].residual[6]);
    v.setQuantity(PluckerView::Quantity::Planarity);
    EXPECT_TRUE(v.caption().contains(QStringLiteral("Rounding check")));
    EXPECT_TRUE(v.caption().contains(definition("planarity")));
    t = v.dataTables().front();
    EXPECT_EQ(t.name, QStringLiteral("planarity"));
    EXPECT_EQ(t.definitionKey, QStringLiteral("planarity"));
    EXPECT_FLOAT_EQ(t.values.at2(1, 6), d.grassmannAnalysis->grassmann[1].planarity[6]);
    v.setQuantity(PluckerView::Quantity::Coherence);
    t = v.dataTables().front();
    EXPECT_EQ(t.name, QStringLiteral("coherence"));
    EXPECT_EQ(t.definitionKey, QStringLiteral("coherence"));
    // Ids round-trip; unknown ids give the default.
    for (auto q : {PluckerView::Quantity::Coherence, PluckerView::Quantity::Residual, PluckerView::Quantity::Planarity})
        EXPECT_EQ(PluckerView::quantityFromId(PluckerView::quantityId(q)), q);
    EXPECT_EQ(PluckerView::quantityFromId("nonsense"), PluckerView::Quantity::Coherence);
}

TEST(TokenStrip, ColoursByCoherenceOfTheSelectedLayer) {
    const WorkbenchData d = analysedData();
    Selection s;
    s.setExtents(d);
    s.setLayer(2);
    TokenStrip strip;
    strip.setSelection(&s);
    strip.setData(d);
    strip.setScalar(TokenStrip::Scalar::Coherence);
    strip.setColormap(ColormapId::Viridis);
    EXPECT_FALSE(TokenStrip::scalarName(TokenStrip::Scalar::Coherence).isEmpty());
    const auto& c2 = d.grassmannAnalysis->grassmann[2].coherence;
    auto v = strip.values();
    ASSERT_EQ(v.size(), c2.size());
    EXPECT_TRUE(std::isnan(v[0])); // no valid offset at t = 0
    for (size_t t = 1; t < v.size(); ++t)
        EXPECT_FLOAT_EQ(v[t], c2[t]) << t;
    s.setLayer(0);
    EXPECT_FLOAT_EQ(strip.values()[6], d.grassmannAnalysis->grassmann[0].coherence[6]);
    // The chip is filled with the value's colour on the fixed [0, 1] scale.
    strip.resize(600, strip.heightForWidth(600));
    const QImage img = strip.grab().toImage();
    ASSERT_EQ(strip.chipRects().size(), v.size());
    const ColorScale scale = ColorScale::fromRange(ColormapId::Viridis, 0.0, 1.0, false);
    for (size_t t : {size_t{3}, size_t{6}}) {
        const QRectF chip = strip.chipRects()[t];
        const QPoint inside(static_cast<int>(chip.left() + 3), static_cast<int>(chip.center().y()));
        EXPECT_EQ(img.pixel(inside), scale.color(d.grassmannAnalysis->grassmann[0].coherence[t])) << t;
    }
}

TEST(PluckerView, WithoutATraceTheChartIsAMessageNotEmptyAxes) {
    // After a failed first run the pair-norm chart drew a 0..1 frame with grid lines under its
    // message, as if it held data.
    synthetic::ensureApp();
    PluckerView v;
    v.setData(WorkbenchData{});
    auto* view = v.chart()->findChild<QChartView*>();
    ASSERT_TRUE(view && view->chart());
    EXPECT_TRUE(view->chart()->title().contains(QStringLiteral("No Grassmann trace yet")));
    ASSERT_FALSE(view->chart()->axes().isEmpty());
    for (const QAbstractAxis* axis : view->chart()->axes())
        EXPECT_FALSE(axis->isVisible());
    // With a trace the axes come back.
    const WorkbenchData d = analysedData();
    Selection s;
    s.setExtents(d);
    s.setToken(9);
    v.setSelection(&s);
    v.setData(d);
    view = v.chart()->findChild<QChartView*>();
    ASSERT_TRUE(view && view->chart());
    for (const QAbstractAxis* axis : view->chart()->axes())
        EXPECT_TRUE(axis->isVisible());
}

TEST(TokenStrip, ColoursByAFeaturesActivationUntilAScalarOrNewTokens) {
    const WorkbenchData d = analysedData();
    Selection s;
    s.setExtents(d);
    TokenStrip strip;
    strip.setSelection(&s);
    strip.setData(d);
    const int64_t T = d.tokenCount();
    std::vector<float> act(static_cast<size_t>(T), 0.0f);
    act[3] = 2.5f;
    act[7] = 1.0f;
    strip.setCustomColouring(act, QStringLiteral("feature.resid.1.17 activation"));
    EXPECT_EQ(strip.customColouring(), QStringLiteral("feature.resid.1.17 activation"));
    EXPECT_EQ(strip.values(), act);
    EXPECT_TRUE(strip.tokenToolTip(3).contains(QStringLiteral("feature.resid.1.17 activation: 2.5")))
        << strip.tokenToolTip(3).toStdString();
    // Choosing a scalar ends it; so do new tokens.
    strip.setScalar(TokenStrip::Scalar::Surprisal);
    EXPECT_TRUE(strip.customColouring().isEmpty());
    EXPECT_NE(strip.values(), act);
    strip.setCustomColouring(act, QStringLiteral("feature.resid.1.17 activation"));
    synthetic::SyntheticSizes longer;
    longer.tokens = T + 3;
    strip.setData(synthetic::makeWorkbenchData(longer));
    EXPECT_TRUE(strip.customColouring().isEmpty());
}
