// Tile downsampling (max/mean, NaN-aware, partial edge tiles) and window colouring.
#include "gwb/views/downsample.h"
#include "gwb/views/heatmap_painter.h"
#include "gwb/views/heatmap_widget.h"
#include "synthetic_data.h"

#include <QTest>

#include <gtest/gtest.h>
#include <cmath>
#include <limits>

using namespace gwb::views;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();
// 4 x 6 with one NaN.
std::vector<float> small() {
    return {1, 2, 3, 4, 5, 6, 7, 8, kNaN, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
}
} // namespace

TEST(Downsample, MaxOfTilesWithPartialEdgeAndNaN) {
    DenseMatrixSource src(4, 6, small());
    const MatrixLevel l = downsample(src, 2, 4, DownsampleMode::Max);
    ASSERT_EQ(l.rows, 2);
    ASSERT_EQ(l.cols, 2);
    EXPECT_FLOAT_EQ(l.at(0, 0), 10);
    EXPECT_FLOAT_EQ(l.at(0, 1), 12);
    EXPECT_FLOAT_EQ(l.at(1, 0), 22);
    EXPECT_FLOAT_EQ(l.at(1, 1), 24);
}

TEST(Downsample, MeanOfTilesCountsOnlyFiniteCells) {
    DenseMatrixSource src(4, 6, small());
    const MatrixLevel l = downsample(src, 2, 4, DownsampleMode::Mean);
    EXPECT_FLOAT_EQ(l.at(0, 0), 35.0f / 7.0f); // the NaN is left out, not counted as 0
    EXPECT_FLOAT_EQ(l.at(0, 1), 8.5f);
    EXPECT_FLOAT_EQ(l.at(1, 0), 17.5f);
    EXPECT_FLOAT_EQ(l.at(1, 1), 20.5f);
}

TEST(Downsample, TileWithoutFiniteValuesIsNaN) {
    DenseMatrixSource src(2, 2, {kNaN, kNaN, 1, 2});
    const MatrixLevel l = downsample(src, 1, 2, DownsampleMode::Mean);
    EXPECT_TRUE(std::isnan(l.at(0, 0)));
    EXPECT_FLOAT_EQ(l.at(1, 0), 1.5f);
}

TEST(Downsample, RowFunctionSourceMatchesDense) {
    const auto values = small();
    DenseMatrixSource dense(4, 6, values);
    RowFunctionSource rows(4, 6, [&values](int64_t r, float* out) { std::copy_n(values.data() + r * 6, 6, out); });
    for (auto mode : {DownsampleMode::Max, DownsampleMode::Mean}) {
        const MatrixLevel a = downsample(dense, 2, 2, mode);
        const MatrixLevel b = downsample(rows, 2, 2, mode);
        ASSERT_EQ(a.values.size(), b.values.size());
        for (size_t i = 0; i < a.values.size(); ++i)
            EXPECT_FLOAT_EQ(a.values[i], b.values[i]);
    }
}

TEST(Downsample, LevelChoiceIsLargestPowerOfTwoNotAboveCellsPerPixel) {
    EXPECT_EQ(MatrixPyramid::levelFor(1.0, 0.5), std::make_pair(0, 0));
    EXPECT_EQ(MatrixPyramid::levelFor(3.9, 2.0), std::make_pair(1, 1));
    EXPECT_EQ(MatrixPyramid::levelFor(4.0, 1.0), std::make_pair(2, 0));
    EXPECT_EQ(MatrixPyramid::levelFor(1.0, 8192.0 / 800.0), std::make_pair(0, 3));
}

TEST(Downsample, PyramidCachesEachLevelOnce) {
    MatrixPyramid pyr(makeDenseSource(4, 6, small()), DownsampleMode::Max);
    EXPECT_EQ(pyr.cached(1, 1), nullptr);
    const auto a = pyr.level(1, 1);
    const auto b = pyr.level(1, 1);
    EXPECT_EQ(a.get(), b.get());
    EXPECT_EQ(pyr.bestCachedCoarser(0, 0).get(), a.get());
}

TEST(Downsample, ColorizedWindowMapsCellsAndNaN) {
    MatrixPyramid pyr(makeDenseSource(2, 2, {0.0f, 1.0f, kNaN, 0.5f}), DownsampleMode::Max);
    const ColorScale s = ColorScale::fromRange(ColormapId::Magma, 0, 1, false);
    const HeatmapImage img = colorizeWindow(pyr, QRectF(0, 0, 2, 2), QSize(4, 4), s, true);
    ASSERT_FALSE(img.image.isNull());
    EXPECT_EQ(img.image.pixel(0, 0), s.color(0.0));
    EXPECT_EQ(img.image.pixel(3, 1), s.color(1.0));
    EXPECT_EQ(img.image.pixel(1, 3), kNanColor);
    EXPECT_EQ(img.image.pixel(2, 2), s.color(0.5));
}

TEST(Downsample, MaxTilesKeepASingleSpikeVisible) {
    const int64_t n = 1024;
    std::vector<float> v(static_cast<size_t>(n * n), 0.0f);
    v[static_cast<size_t>(517 * n + 300)] = 1.0f; // one hot cell
    MatrixPyramid pyr(makeDenseSource(n, n, std::move(v)), DownsampleMode::Max);
    const ColorScale s = ColorScale::fromRange(ColormapId::Viridis, 0, 1, false);
    const HeatmapImage img = colorizeWindow(pyr, QRectF(0, 0, n, n), QSize(64, 64), s, true);
    EXPECT_EQ(img.blockRows, 16);
    EXPECT_EQ(img.blockCols, 16);
    EXPECT_EQ(img.image.pixel(300 / 16, 517 / 16), s.color(1.0));
    int hot = 0;
    for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 64; ++x)
            hot += img.image.pixel(x, y) == s.color(1.0);
    EXPECT_EQ(hot, 1);
}

TEST(Downsample, CachedRowSourceReturnsTheSameRowsAndEvicts) {
    int calls = 0;
    auto inner = std::make_shared<RowFunctionSource>(5, 3, [&calls](int64_t r, float* out) {
        ++calls;
        for (int c = 0; c < 3; ++c)
            out[c] = static_cast<float>(r * 10 + c);
    });
    CachedRowSource cached(inner, 2);
    float row[3];
    cached.row(1, row);
    cached.row(1, row);
    EXPECT_EQ(calls, 1);
    EXPECT_FLOAT_EQ(row[2], 12.0f);
    cached.row(2, row);
    cached.row(3, row); // evicts row 1 (least recently used)
    cached.row(1, row);
    EXPECT_EQ(calls, 4);
    EXPECT_FLOAT_EQ(row[0], 10.0f);
}

TEST(Downsample, WidgetComputesBigLevelsOffTheGuiThread) {
    synthetic::ensureApp();
    const int64_t n = 2048; // 4M cells: above the synchronous limit
    std::vector<float> v(static_cast<size_t>(n * n));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(i % 977) / 977.0f;
    HeatmapWidget w;
    w.resize(600, 500);
    w.setMatrix(makeDenseSource(n, n, std::move(v)), HeatmapAxes{});
    // First paint: the level is not there yet, so the plot shows a grey "downsampling" panel and a
    // background job starts (the job is started after the paint, so this is deterministic).
    auto greyShare = [](const QImage& img) {
        int grey = 0;
        for (int y = 0; y < img.height(); y += 4)
            for (int x = 0; x < img.width(); x += 4)
                grey += img.pixel(x, y) == qRgb(235, 235, 235);
        return grey / static_cast<double>((img.height() / 4) * (img.width() / 4));
    };
    const QImage first = w.grab().toImage().convertToFormat(QImage::Format_RGB32);
    EXPECT_GT(greyShare(first), 0.3);
    const MatrixPyramid* pyr = w.pyramid();
    ASSERT_NE(pyr, nullptr);
    auto anyLevel = [pyr] {
        for (int ly = 1; ly < 6; ++ly)
            for (int lx = 1; lx < 6; ++lx)
                if (pyr->cached(ly, lx)) return true;
        return false;
    };
    EXPECT_TRUE(QTest::qWaitFor(anyLevel, 10000));
    // The continuation that repaints is queued to this thread: wait for it, not for a fixed time
    // (a loaded machine can hold the worker between caching and queuing).
    EXPECT_TRUE(QTest::qWaitFor(
        [&] { return greyShare(w.grab().toImage().convertToFormat(QImage::Format_RGB32)) < 0.01; }, 10000));
    // A new matrix drops the old one's pending work; painting keeps working.
    w.setMatrix(makeDenseSource(2, 2, {1, 2, 3, 4}), HeatmapAxes{});
    EXPECT_FALSE(w.grab().isNull());
}

TEST(Downsample, AStaleBannerSitsAboveTheMatrixNotOverItsTitleAndFirstRow) {
    // Issue 67: at 1280 x 720 the stale-result banner covered the heatmap's title and its L0 row.
    // It now has a band of its own: the plot starts below it, and the plot is the same size as
    // without the banner but for that band.
    synthetic::ensureApp();
    HeatmapWidget w;
    w.resize(520, 300);
    HeatmapAxes axes;
    axes.title = QStringLiteral("Effect");
    axes.rowLabels = {QStringLiteral("L0"), QStringLiteral("L1"), QStringLiteral("L2")};
    w.setMatrix(makeDenseSource(3, 4, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}), axes);
    (void)w.grab();
    const QRectF fresh = w.plotRect();
    w.setStaleNote(QStringLiteral("These results are for an earlier input: press Run."));
    (void)w.grab();
    const QRectF stale = w.plotRect();
    const QFontMetricsF fm(w.font());
    EXPECT_GT(stale.top(), fresh.top() + fm.height() * 2) << "the plot moved below the banner";
    EXPECT_NEAR(stale.bottom(), fresh.bottom(), 1.0);
    EXPECT_GT(stale.height(), 20.0);
    w.setStaleNote(QString());
    (void)w.grab();
    EXPECT_EQ(w.plotRect(), fresh);
}
