// Shared selection: clamping, one signal per real change, and propagation across views.
#include "synthetic_data.h"

#include "gwb/views/gate_view.h"
#include "gwb/views/heatmap_widget.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/selection.h"
#include "gwb/views/colormap.h"
#include "gwb/views/token_strip.h"

#include <QAction>
#include <QApplication>
#include <algorithm>
#include <QSignalSpy>
#include <QTest>
#include <gtest/gtest.h>

using namespace gwb::views;

namespace {
void app() {
    synthetic::ensureApp();
}
} // namespace

TEST(Selection, ClampsToExtentsAndSignalsOnlyChanges) {
    app();
    Selection s;
    s.setExtents(10, 3, 4, 2);
    QSignalSpy token(&s, &Selection::tokenChanged);
    QSignalSpy layer(&s, &Selection::layerChanged);
    s.setToken(20);
    EXPECT_EQ(s.token(), 9);
    s.setToken(9); // no change, no signal
    s.setToken(-5);
    EXPECT_EQ(s.token(), 0);
    EXPECT_EQ(token.count(), 2);
    EXPECT_EQ(token.at(0).at(0).toInt(), 9);
    s.setLayer(7);
    EXPECT_EQ(s.layer(), 2);
    EXPECT_EQ(layer.count(), 1);
    s.setHead(9);
    EXPECT_EQ(s.head(), 3);
    s.setOffsetIndex(5);
    EXPECT_EQ(s.offsetIndex(), 1);
    // Shrinking the extents re-clamps and emits.
    s.setToken(8);
    s.setExtents(5, 3, 4, 2);
    EXPECT_EQ(s.token(), 4);
}

TEST(Selection, ExtentsFromData) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    EXPECT_EQ(s.tokenCount(), 12);
    EXPECT_EQ(s.layerCount(), 3);
    EXPECT_EQ(s.headCount(), 4);
    EXPECT_EQ(s.offsetCount(), 3);
}

TEST(Selection, ClickInOneViewSelectsEverywhere) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    GateView gate;
    PluckerView plucker;
    TokenStrip strip;
    for (View* v : std::initializer_list<View*>{&gate, &plucker}) {
        v->setSelection(&s);
        v->setData(d);
        v->resize(900, 600);
    }
    strip.setSelection(&s);
    strip.setData(d);
    strip.resize(400, strip.heightForWidth(400));
    (void)gate.grab(); // lays out and paints, so that cell geometry is known
    HeatmapWidget* hm = gate.heatmap();
    // Find the widget position of cell (layer 2, token 7) by scanning.
    QPoint target(-1, -1);
    for (int y = 0; y < hm->height() && target.x() < 0; y += 2)
        for (int x = 0; x < hm->width(); x += 2)
            if (hm->cellAt(QPointF(x, y)) == QPoint(7, 2)) {
                target = QPoint(x + 1, y + 1);
                break;
            }
    ASSERT_GE(target.x(), 0);
    QSignalSpy tokenSpy(&s, &Selection::tokenChanged);
    QTest::mouseClick(hm, Qt::LeftButton, {}, target);
    EXPECT_EQ(s.token(), 7);
    EXPECT_EQ(s.layer(), 2);
    EXPECT_EQ(tokenSpy.count(), 1);
    // The other view follows.
    EXPECT_EQ(plucker.heatmap()->marks().col, 7);
    EXPECT_EQ(plucker.heatmap()->marks().row, 2);
    // The token strip selects by click and moves with the arrow keys.
    (void)strip.grab();
    ASSERT_EQ(strip.chipRects().size(), 12u);
    QTest::mouseClick(&strip, Qt::LeftButton, {}, strip.chipRects()[3].center().toPoint());
    EXPECT_EQ(s.token(), 3);
    EXPECT_EQ(gate.heatmap()->marks().col, 3);
    QTest::keyClick(&strip, Qt::Key_Right);
    EXPECT_EQ(s.token(), 4);
    QTest::keyClick(&strip, Qt::Key_Left);
    QTest::keyClick(&strip, Qt::Key_Left);
    EXPECT_EQ(s.token(), 2);
}

TEST(TokenStrip, ColoursByChosenScalar) {
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    s.setLayer(1);
    TokenStrip strip;
    strip.setSelection(&s);
    strip.setData(d);
    auto v = strip.values();
    ASSERT_EQ(v.size(), 12u);
    EXPECT_TRUE(std::isnan(v[0])); // surprisal undefined at t = 0
    EXPECT_FLOAT_EQ(v[5], d.grassmann->surprisal[5]);
    strip.setScalar(TokenStrip::Scalar::MeanGate);
    v = strip.values();
    EXPECT_FLOAT_EQ(v[5], d.grassmannAnalysis->grassmann[1].meanGate[5]);
    strip.setScalar(TokenStrip::Scalar::Planarity);
    EXPECT_FLOAT_EQ(strip.values()[6], d.grassmannAnalysis->grassmann[1].planarity[6]);
}

TEST(TokenStrip, MeanGateColoursSpanTheColormap) {
    // The mean gates of one prompt fill a narrow part of [0, 1]; on a fixed 0-1 scale every chip
    // had nearly one colour. The lowest and highest tokens now take the colormap's two ends.
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    s.setLayer(1);
    TokenStrip strip;
    strip.setSelection(&s);
    strip.setData(d);
    strip.setScalar(TokenStrip::Scalar::MeanGate);
    strip.resize(900, strip.heightForWidth(900));
    const QImage img = strip.grab().toImage();
    const auto v = strip.values();
    const auto lo = std::min_element(v.begin(), v.end()) - v.begin();
    const auto hi = std::max_element(v.begin(), v.end()) - v.begin();
    auto colourAt = [&](long t) {
        const QRectF r = strip.chipRects()[static_cast<size_t>(t)];
        return QColor(img.pixel(QPoint(static_cast<int>(r.left() + 3), static_cast<int>(r.top() + 3))));
    };
    auto near = [](const QColor& a, QRgb b) {
        return std::abs(a.red() - qRed(b)) < 12 && std::abs(a.green() - qGreen(b)) < 12 &&
               std::abs(a.blue() - qBlue(b)) < 12;
    };
    const auto& table = colormapTable(ColormapId::Viridis);
    EXPECT_TRUE(near(colourAt(lo), table.front())) << colourAt(lo).name().toStdString();
    EXPECT_TRUE(near(colourAt(hi), table.back())) << colourAt(hi).name().toStdString();
    // The strip offers the coherence colouring the README lists.
    strip.setScalar(TokenStrip::Scalar::Coherence);
    EXPECT_FLOAT_EQ(strip.values()[6], d.grassmannAnalysis->grassmann[1].coherence[6]);
}

TEST(TokenStrip, BarsGoWithTheirTokens) {
    // The bars and legend of a saliency or an ablation belonged to the old prompt and stayed over
    // a new one ("… at token 16" over 7 tokens) until a click; now new tokens clear them, and Delete
    // or the context menu clears them on request.
    app();
    const WorkbenchData d = synthetic::makeWorkbenchData();
    Selection s;
    s.setExtents(d);
    TokenStrip strip;
    strip.setSelection(&s);
    strip.setData(d);
    strip.setOverlay(std::vector<float>(12, 0.5f), QStringLiteral("bars: saliency at token 9"));
    strip.setData(d); // the same tokens again (a re-run of the same prompt): the bars stay
    EXPECT_EQ(strip.overlay().size(), 12u);
    const WorkbenchData shorter = synthetic::makeWorkbenchData({.tokens = 7});
    strip.setData(shorter);
    EXPECT_TRUE(strip.overlay().empty());
    EXPECT_TRUE(strip.tokenToolTip(3).indexOf(QStringLiteral("saliency")) < 0);

    strip.setData(d);
    strip.setSignedOverlay(std::vector<float>(12, -0.2f), QStringLiteral("ablation"));
    QAction* clear = strip.findChild<QAction*>(QStringLiteral("clearStripBars"));
    ASSERT_NE(clear, nullptr);
    EXPECT_TRUE(clear->isEnabled());
    QSignalSpy cleared(&strip, &TokenStrip::overlayCleared);
    strip.setFocus();
    QTest::keyClick(&strip, Qt::Key_Delete);
    EXPECT_TRUE(strip.overlay().empty());
    EXPECT_EQ(cleared.count(), 1);
    EXPECT_FALSE(clear->isEnabled());
}
