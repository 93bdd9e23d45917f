// Heatmap speed on an 8192 x 8192 matrix: one-time tile downsampling per zoom level, and the
// per-frame cost of colouring the visible window from a cached level (what a repaint does).
#include "gwb/views/downsample.h"
#include "gwb/views/heatmap_painter.h"
#include "gwb/views/heatmap_widget.h"

#include <QApplication>
#include <QPainter>
#include <benchmark/benchmark.h>
#include <cmath>

using namespace gwb::views;

namespace {
constexpr int64_t kN = 8192;

MatrixSourcePtr bigMatrix() {
    static MatrixSourcePtr src = [] {
        std::vector<float> v(static_cast<size_t>(kN * kN));
        for (int64_t i = 0; i < kN; ++i)
            for (int64_t j = 0; j < kN; ++j)
                v[static_cast<size_t>(i * kN + j)] = std::sin(0.001f * static_cast<float>(i * j % 10007));
        return makeDenseSource(kN, kN, std::move(v));
    }();
    return src;
}

QApplication& app() {
    static int argc = 1;
    static char name[] = "views_bench";
    static char* argv[] = {name, nullptr};
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    static QApplication a(argc, argv);
    return a;
}
} // namespace

// One zoom level of tile maxima (8192^2 -> 512^2): computed once per level, off the GUI thread.
static void BM_DownsampleLevel16x16(benchmark::State& state) {
    auto src = bigMatrix();
    for (auto _ : state)
        benchmark::DoNotOptimize(downsample(*src, 16, 16, DownsampleMode::Max));
}
BENCHMARK(BM_DownsampleLevel16x16)->Unit(benchmark::kMillisecond);

// Repaint of the whole matrix into 800 x 800 pixels from the cached 16 x 16 level.
static void BM_ColorizeFullViewCached(benchmark::State& state) {
    MatrixPyramid pyr(bigMatrix(), DownsampleMode::Max);
    const ColorScale s = ColorScale::fromRange(ColormapId::Viridis, -1, 1, false);
    pyr.level(3, 3); // 8192 / 800 cells per pixel -> block 8
    for (auto _ : state)
        benchmark::DoNotOptimize(colorizeWindow(pyr, QRectF(0, 0, kN, kN), QSize(800, 800), s, false));
}
BENCHMARK(BM_ColorizeFullViewCached)->Unit(benchmark::kMillisecond);

// Repaint when zoomed in to 600 x 600 cells (level 0 read straight from the matrix).
static void BM_ColorizeZoomedIn(benchmark::State& state) {
    MatrixPyramid pyr(bigMatrix(), DownsampleMode::Max);
    const ColorScale s = ColorScale::fromRange(ColormapId::Viridis, -1, 1, false);
    for (auto _ : state)
        benchmark::DoNotOptimize(colorizeWindow(pyr, QRectF(3000, 3000, 600, 600), QSize(800, 800), s, false));
}
BENCHMARK(BM_ColorizeZoomedIn)->Unit(benchmark::kMillisecond);

// A full heatmap paint (labels thinned from 8192, colorbar) into 1000 x 900 px, level cached.
static void BM_HeatmapPaintCached(benchmark::State& state) {
    app();
    HeatmapWidget w;
    HeatmapAxes axes;
    for (int64_t i = 0; i < kN; ++i)
        axes.rowLabels << QStringLiteral("tok%1").arg(i);
    axes.colLabels = axes.rowLabels;
    w.setMatrix(bigMatrix(), axes);
    QImage target(1000, 900, QImage::Format_ARGB32);
    const FigureStyle style = FigureStyle::forScreen(QApplication::font());
    {
        QPainter p(&target);
        w.paintFigure(p, QRectF(0, 0, 1000, 900), style, QString(), ColormapId::Viridis); // computes the level once
    }
    for (auto _ : state) {
        QPainter p(&target);
        w.paintFigure(p, QRectF(0, 0, 1000, 900), style, QString(), ColormapId::Viridis);
    }
}
BENCHMARK(BM_HeatmapPaintCached)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
