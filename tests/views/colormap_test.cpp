// Colormaps: published table entries, value -> colour mapping, NaN grey, RdBu symmetric about 0.
#include "gwb/views/colormap.h"

#include <gtest/gtest.h>
#include <cmath>

using namespace gwb::views;

TEST(Colormap, TableEndsMatchPublishedValues) {
    EXPECT_EQ(colormapTable(ColormapId::Viridis)[0], qRgb(68, 1, 84));      // #440154
    EXPECT_EQ(colormapTable(ColormapId::Viridis)[255], qRgb(253, 231, 37)); // #fde725
    EXPECT_EQ(colormapTable(ColormapId::Magma)[0], qRgb(0, 0, 4));          // #000004
    EXPECT_EQ(colormapTable(ColormapId::Magma)[255], qRgb(252, 253, 191));  // #fcfdbf
    EXPECT_EQ(colormapTable(ColormapId::Cividis)[0], qRgb(0, 34, 78));      // #00224e
    EXPECT_EQ(colormapTable(ColormapId::Cividis)[255], qRgb(254, 232, 56)); // #fee838
    EXPECT_EQ(colormapTable(ColormapId::RdBu)[0], qRgb(0x67, 0x00, 0x1f));
    EXPECT_EQ(colormapTable(ColormapId::RdBu)[255], qRgb(0x05, 0x30, 0x61));
}

TEST(Colormap, ViridisMidpointEntry) {
    // viridis[128] = (0.127568, 0.566949, 0.550556) = #21918c, the colour usually quoted for viridis(0.5).
    EXPECT_EQ(colormapTable(ColormapId::Viridis)[128], qRgb(33, 145, 140));
}

TEST(Colormap, ScaleMapsKnownValuesToKnownEntries) {
    const ColorScale s = ColorScale::fromRange(ColormapId::Viridis, 2.0, 4.0, false);
    const auto& t = colormapTable(ColormapId::Viridis);
    EXPECT_EQ(s.color(2.0), t[0]);
    EXPECT_EQ(s.color(4.0), t[255]);
    EXPECT_EQ(s.color(3.0), t[128]); // t = 0.5 -> bin 128 of 256
    EXPECT_EQ(s.color(2.0 + 2.0 * 10.5 / 256), t[10]);
    EXPECT_EQ(s.color(-100.0), t[0]); // clamped
    EXPECT_EQ(s.color(100.0), t[255]);
    EXPECT_EQ(s.color(std::nan("")), kNanColor);
    EXPECT_EQ(ColorScale::fromRange(ColormapId::Magma, 0, 1, false).color(std::nan("")), kNanColor);
}

TEST(Colormap, DivergingScaleIsSymmetricAroundZero) {
    const ColorScale s = ColorScale::fromRange(ColormapId::RdBu, -2.0, 5.0, true);
    EXPECT_DOUBLE_EQ(s.effectiveLow(), -5.0);
    EXPECT_DOUBLE_EQ(s.effectiveHigh(), 5.0);
    EXPECT_DOUBLE_EQ(s.normalized(0.0), 0.5);
    const auto& t = colormapTable(ColormapId::RdBu);
    EXPECT_EQ(s.color(0.0), t[128]);
    const QColor centre = QColor::fromRgb(t[128]);
    EXPECT_GT(centre.lightnessF(), 0.9); // near-white #f7f7f7 at 0
    for (double v : {0.3, 1.1, 2.7, 4.9}) {
        const double a = s.normalized(v), b = s.normalized(-v);
        EXPECT_NEAR(a + b, 1.0, 1e-12) << v;
        const int ia = static_cast<int>(a * 256), ib = static_cast<int>(b * 256);
        EXPECT_EQ(ia + ib, 255) << v;
        EXPECT_EQ(s.color(v), t[static_cast<size_t>(ia)]);
        // Positive values are blue-ish, negative red-ish (matplotlib's RdBu orientation).
        EXPECT_GT(QColor::fromRgb(s.color(v)).blue(), QColor::fromRgb(s.color(v)).red());
        EXPECT_GT(QColor::fromRgb(s.color(-v)).red(), QColor::fromRgb(s.color(-v)).blue());
    }
}

TEST(Colormap, NamesRoundTrip) {
    for (const QString& n : colormapNames())
        EXPECT_EQ(colormapName(colormapFromName(n)), n);
    EXPECT_EQ(colormapFromName(QStringLiteral("MAGMA")), ColormapId::Magma);
    EXPECT_EQ(colormapFromName(QStringLiteral("jet"), ColormapId::Cividis), ColormapId::Cividis);
}

TEST(Colormap, ConstantDataStillGetsAUsableScale) {
    const ColorScale s = ColorScale::fromRange(ColormapId::Viridis, 3.0, 3.0, false);
    EXPECT_LT(s.low, s.high);
    EXPECT_NE(s.color(3.0), kNanColor);
}
