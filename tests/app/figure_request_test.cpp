#include "runs/figure_request.h"

#include <gtest/gtest.h>

using namespace gwb::app;

TEST(FigureRequest, ParsesLengths) {
    EXPECT_DOUBLE_EQ(parseLengthInches(QStringLiteral("3.5in")), 3.5);
    EXPECT_DOUBLE_EQ(parseLengthInches(QStringLiteral("7 in")), 7.0);
    EXPECT_DOUBLE_EQ(parseLengthInches(QStringLiteral("3.5")), 3.5);
    EXPECT_NEAR(parseLengthInches(QStringLiteral("89mm")), 89 / 25.4, 1e-12);
    EXPECT_NEAR(parseLengthInches(QStringLiteral("8.9cm")), 8.9 / 2.54, 1e-12);
    EXPECT_DOUBLE_EQ(parseLengthInches(QStringLiteral("252pt")), 3.5);
    EXPECT_THROW(parseLengthInches(QStringLiteral("wide")), std::invalid_argument);
    EXPECT_THROW(parseLengthInches(QStringLiteral("3.5furlongs")), std::invalid_argument);
    EXPECT_THROW(parseLengthInches(QStringLiteral("0in")), std::invalid_argument);
}

TEST(FigureRequest, PresetsFollowWidth) {
    FigureSettings s;
    EXPECT_DOUBLE_EQ(figureOptions(s).fontPoints, 8);
    s.widthInches = 7;
    EXPECT_DOUBLE_EQ(figureOptions(s).fontPoints, 9);
    s.fontPoints = 10;
    s.colormap = QStringLiteral("magma");
    s.dpi = 600;
    const auto o = figureOptions(s);
    EXPECT_DOUBLE_EQ(o.fontPoints, 10);
    EXPECT_EQ(o.colormap, QStringLiteral("magma"));
    EXPECT_EQ(o.dpi, 600);
    EXPECT_DOUBLE_EQ(o.widthInches, 7);
}

TEST(FigureRequest, FormatsAndTargets) {
    EXPECT_EQ(figureFormat(QStringLiteral("a/b.PNG")), QStringLiteral("png"));
    EXPECT_EQ(figureFormat(QStringLiteral("b.pdf")), QStringLiteral("pdf"));
    EXPECT_EQ(figureFormat(QStringLiteral("b.jpg")), QString());
    EXPECT_TRUE(
        checkWritableTarget(QStringLiteral("/nonexistent-gwb-dir/x.png")).contains(QStringLiteral("does not exist")));
}
