#include "gwb/views/heatmap_painter.h"

#include "plot_util.h"

#include <QFontMetricsF>
#include <QPainterPath>
#include <algorithm>
#include <cmath>
#include <limits>

namespace gwb::views {
namespace {

// Row-on-demand sources are summarized only into levels of at most this many cells, so that a
// long prompt's T x T attention is never materialized (the preview is then somewhat coarser).
constexpr int64_t kMaxLevelCellsForComputedRows = int64_t{4} << 20;

} // namespace

HeatmapImage colorizeWindow(MatrixPyramid& pyramid, const QRectF& window, QSize pixels, const ColorScale& scale,
                            bool computeMissing) {
    HeatmapImage out;
    const MatrixSource& src = pyramid.source();
    if (pixels.isEmpty() || src.rows() == 0 || src.cols() == 0 || window.isEmpty()) return out;
    auto [ly, lx] = MatrixPyramid::levelFor(window.height() / pixels.height(), window.width() / pixels.width());
    if (!src.dense()) {
        while ((ly != 0 || lx != 0) &&
               ((src.rows() >> ly) + 1) * ((src.cols() >> lx) + 1) > kMaxLevelCellsForComputedRows) {
            if ((src.rows() >> ly) >= (src.cols() >> lx))
                ++ly;
            else
                ++lx;
        }
    }
    out.levelRows = ly;
    out.levelCols = lx;
    std::shared_ptr<const MatrixLevel> level;
    if (ly != 0 || lx != 0) {
        level = computeMissing ? pyramid.level(ly, lx) : pyramid.cached(ly, lx);
        if (!level) {
            level = pyramid.bestCachedCoarser(ly, lx);
            out.preview = true;
            if (!level) return out;
        }
        out.blockRows = level->blockRows;
        out.blockCols = level->blockCols;
    }

    QImage img(pixels, QImage::Format_ARGB32);
    const double cppR = window.height() / pixels.height();
    const double cppC = window.width() / pixels.width();
    std::vector<int64_t> colIndex(static_cast<size_t>(pixels.width()));
    const int64_t nCols = level ? level->cols : src.cols();
    const int64_t nRows = level ? level->rows : src.rows();
    for (int j = 0; j < pixels.width(); ++j) {
        const double sc = window.left() + (j + 0.5) * cppC;
        colIndex[static_cast<size_t>(j)] =
            std::clamp<int64_t>(static_cast<int64_t>(std::floor(sc / out.blockCols)), 0, nCols - 1);
    }
    std::vector<float> rowBuf(level ? 0 : static_cast<size_t>(src.cols()));
    int64_t bufferedRow = -1;
    for (int i = 0; i < pixels.height(); ++i) {
        const double sr = window.top() + (i + 0.5) * cppR;
        const int64_t r = std::clamp<int64_t>(static_cast<int64_t>(std::floor(sr / out.blockRows)), 0, nRows - 1);
        const float* values = nullptr;
        if (level) {
            values = level->values.data() + r * level->cols;
        } else if (src.dense()) {
            values = src.dense() + r * src.cols();
        } else {
            if (r != bufferedRow) {
                src.row(r, rowBuf.data());
                bufferedRow = r;
            }
            values = rowBuf.data();
        }
        auto* line = reinterpret_cast<QRgb*>(img.scanLine(i));
        for (int j = 0; j < pixels.width(); ++j)
            line[j] = scale.color(values[colIndex[static_cast<size_t>(j)]]);
    }
    out.image = std::move(img);
    return out;
}

void paintColorbar(QPainter& p, const QRectF& rect, const ColorScale& scale, const QString& valueName,
                   const FigureStyle& style) {
    p.save();
    const QFontMetricsF fm = style.metrics(style.small);
    p.setFont(style.small);
    const double barW = std::clamp(rect.width() * 0.22, 4.0, 14.0);
    if (rect.height() < fm.height() * 2) {
        p.restore();
        return;
    }
    const QRectF bar(rect.left(), rect.top() + fm.height() / 2, barW, rect.height() - fm.height());
    // 256 steps as an image keeps vector output small and exact.
    QImage strip(1, 256, QImage::Format_ARGB32);
    const auto& table = colormapTable(scale.map);
    for (int i = 0; i < 256; ++i)
        strip.setPixel(0, 255 - i, table[static_cast<size_t>(i)]);
    p.drawImage(bar, strip);
    p.setPen(QPen(Qt::black, style.hairline));
    p.setBrush(Qt::NoBrush);
    p.drawRect(bar);
    const double lo = scale.effectiveLow();
    const double hi = scale.effectiveHigh();
    const auto ticks = detail::niceTicks(lo, hi, std::max(3, static_cast<int>(bar.height() / (fm.height() * 3.0))));
    double maxTickW = 0;
    for (double t : ticks) {
        const double y = bar.bottom() - (t - lo) / (hi - lo) * bar.height();
        p.drawLine(QPointF(bar.right(), y), QPointF(bar.right() + barW * 0.3, y));
        const QString s = detail::formatValue(t);
        maxTickW = std::max(maxTickW, fm.horizontalAdvance(s));
        p.drawText(QPointF(bar.right() + barW * 0.4, y + fm.ascent() / 2 - fm.descent() / 2), s);
    }
    // The title runs along the bar; a bar shorter than it (a small panel) goes without it rather
    // than have it cut off at the panel's edge (the view's caption names the quantity).
    if (!valueName.isEmpty() && fm.horizontalAdvance(valueName) <= rect.height()) {
        const double x = bar.right() + barW * 0.5 + maxTickW + fm.height() * 0.7;
        detail::drawRotatedText(p, QPointF(x, bar.center().y()), valueName, Qt::AlignHCenter);
    }
    p.restore();
}

HeatmapGeometry paintHeatmap(QPainter& p, const QRectF& area, MatrixPyramid& pyramid, const QRectF& window,
                             const ColorScale& scale, const HeatmapAxes& axes, const FigureStyle& style,
                             const HeatmapMarks& marks, bool computeMissing, HeatmapImage* used) {
    HeatmapGeometry geo;
    const MatrixSource& src = pyramid.source();
    p.save();
    const QFontMetricsF fmS = style.metrics(style.small);
    const QFontMetricsF fmB = style.metrics(style.body);
    QRectF r = detail::paintPanelTitle(p, area, axes.title, style);
    // Rotated column labels may take on screen what the matrix does not need: 30% of the panel, or
    // more when its rows keep a text line each (a matrix of few rows); longer pieces are elided,
    // the hover readout has them whole. Figures print them whole.
    const double rowsShown = std::max(1.0, std::min(window.height(), static_cast<double>(src.rows())));
    const double colLabelCap =
        style.screen ? std::max({fmS.height() * 2.5, r.height() * 0.3,
                                 r.height() - rowsShown * fmS.height() * 1.2 - fmB.height() * 1.2 - fmS.height()})
                     : std::numeric_limits<double>::infinity();
    auto labelFor = [](const QStringList& labels, int64_t i) {
        return i < labels.size() ? detail::labelText(labels[static_cast<int>(i)]) : QString::number(i);
    };
    auto colLabelFor = [&](int64_t j) {
        const QString s = labelFor(axes.colLabels, j);
        return style.screen ? fmS.elidedText(s, Qt::ElideRight, colLabelCap) : s;
    };
    // Margins from the widest visible labels.
    const int64_t r0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(window.top())), 0, src.rows());
    const int64_t r1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(window.bottom())), 0, src.rows());
    const int64_t c0 = std::clamp<int64_t>(static_cast<int64_t>(std::floor(window.left())), 0, src.cols());
    const int64_t c1 = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(window.right())), 0, src.cols());
    double rowLabelW = 0, colLabelH = 0;
    // Measuring thousands of labels per repaint is slow: sample about 256 of them.
    const int64_t rs = std::max<int64_t>(1, (r1 - r0) / 256), cs = std::max<int64_t>(1, (c1 - c0) / 256);
    for (int64_t i = r0; i < r1; i += rs)
        rowLabelW = std::max(rowLabelW, fmS.horizontalAdvance(labelFor(axes.rowLabels, i)));
    for (int64_t j = c0; j < c1; j += cs)
        colLabelH = std::max(colLabelH, fmS.horizontalAdvance(colLabelFor(j)));
    const double tick = fmS.height() * 0.25;
    // Narrow panels drop the colorbar's title (the caption names the quantity) to keep the matrix readable.
    const bool narrow = r.width() < fmS.height() * 16;
    const QString barTitle = narrow ? QString() : axes.valueName;
    const double barBlock =
        style.colorbar ? std::max(fmS.height() * (barTitle.isEmpty() ? 3.4 : 4.8), narrow ? 0.0 : r.width() * 0.1) : 0;
    // A small panel (a docked view on a laptop screen) gives up, in this order, the axis titles,
    // the downsampling note and then the labels of that axis, before it gives up the matrix.
    // The downsampling note takes a line only when the matrix has more cells than the panel pixels.
    bool rowTitle = !axes.rowTitle.isEmpty(), colTitle = !axes.colTitle.isEmpty(),
         note = window.width() > r.width() || window.height() > r.height();
    bool rowLabels = true, colLabels = true;
    const double wantW = std::min(fmS.height() * 6, r.width() * 0.5),
                 wantH = std::min(fmS.height() * 5, r.height() * 0.45);
    auto leftMargin = [&] { return (rowLabels ? rowLabelW + tick * 2 : tick) + (rowTitle ? fmB.height() * 1.2 : 0); };
    auto bottomMargin = [&] {
        return (colLabels ? colLabelH + tick * 2 : tick) + (colTitle ? fmB.height() * 1.2 : 0) +
               (note ? fmS.height() * 1.2 : 0);
    };
    for (bool* drop : {&rowTitle, &rowLabels})
        if (r.width() - leftMargin() - barBlock < wantW) *drop = false;
    // Column labels lie flat and whole when the cells are wide enough for them, staggered over up to
    // four rows when each fits in as many cells; otherwise they are rotated (and on screen elided).
    int flatRows = 0;
    {
        const double plotW = r.width() - leftMargin() - barBlock - tick * 2;
        const double cellW = plotW / std::max(1e-9, window.width());
        double widest = 0;
        for (int64_t j = c0; j < c1; j += cs)
            widest = std::max(widest, fmS.horizontalAdvance(labelFor(axes.colLabels, j)));
        const double gap = fmS.height() * 0.5;
        for (int rows = 1; rows <= 4 && flatRows == 0 && c1 > c0; ++rows)
            if (widest + gap <= cellW * rows) flatRows = rows;
        if (flatRows > 0) colLabelH = fmS.height() * flatRows;
    }
    for (bool* drop : {&colTitle, &note, &colLabels})
        if (r.height() - bottomMargin() < wantH) *drop = false;
    const double leftM = leftMargin();
    const double noteH = note ? fmS.height() * 1.2 : 0;
    const double bottomM = bottomMargin();
    if (!colLabels) colLabelH = 0;
    if (r.width() - leftM - barBlock < fmS.height() * 2 || r.height() - bottomM < fmS.height() * 2) {
        // Not enough room for a readable matrix: say so instead of drawing a sliver.
        p.setFont(style.small);
        p.setPen(Qt::darkGray);
        p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap, QStringLiteral("(panel too small for this figure size)"));
        p.restore();
        return geo;
    }
    const QRectF plot(r.left() + leftM, r.top() + fmS.height() * 0.2,
                      std::max(4.0, r.width() - leftM - barBlock - tick * 2),
                      std::max(4.0, r.height() - bottomM - fmS.height() * 0.2));
    geo.plot = plot;

    // Matrix image at device resolution.
    const QTransform dt = p.deviceTransform();
    const double sx = std::hypot(dt.m11(), dt.m12());
    const double sy = std::hypot(dt.m21(), dt.m22());
    const QSize px(std::max(1, static_cast<int>(std::lround(plot.width() * sx))),
                   std::max(1, static_cast<int>(std::lround(plot.height() * sy))));
    HeatmapImage hi = colorizeWindow(pyramid, window, px, scale, computeMissing);
    if (!hi.image.isNull()) {
        p.drawImage(plot, hi.image);
    } else {
        p.fillRect(plot, QColor(235, 235, 235));
        p.setFont(style.body);
        p.setPen(Qt::darkGray);
        p.drawText(plot, Qt::AlignCenter, QStringLiteral("downsampling\u2026"));
    }
    if (used) *used = hi;
    p.setPen(QPen(Qt::black, style.hairline));
    p.setBrush(Qt::NoBrush);
    p.drawRect(plot);

    const double cellH = plot.height() / window.height();
    const double cellW = plot.width() / window.width();
    auto yOf = [&](double row) { return plot.top() + (row - window.top()) * cellH; };
    auto xOf = [&](double col) { return plot.left() + (col - window.left()) * cellW; };
    // Selection outline (drawn only when inside the window).
    QPen markPen(QColor(255, 255, 255), style.hairline * 2.5);
    QPen markPen2(QColor(0, 0, 0), style.hairline * 1.2);
    p.save();
    p.setClipRect(plot);
    for (const QPen& pen : {markPen, markPen2}) {
        p.setPen(pen);
        if (marks.col >= 0 && marks.col >= c0 && marks.col < c1)
            p.drawRect(QRectF(xOf(static_cast<double>(marks.col)), plot.top(), cellW, plot.height()));
        if (marks.row >= 0 && marks.row >= r0 && marks.row < r1)
            p.drawRect(QRectF(plot.left(), yOf(static_cast<double>(marks.row)), plot.width(), cellH));
    }
    // Marked cells (a test's survivors): a dot, black ringed with white, where cells are large enough.
    const int64_t srcCols = src.cols();
    if (!marks.cells.empty() && cellW >= 4 && cellH >= 4 &&
        marks.cells.size() == static_cast<size_t>(src.rows() * srcCols)) {
        const double radius = std::min(cellW, cellH) * 0.16;
        p.setPen(QPen(Qt::white, style.hairline * 1.5));
        p.setBrush(Qt::black);
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c)
                if (marks.cells[static_cast<size_t>(r * srcCols + c)])
                    p.drawEllipse(QPointF(xOf(static_cast<double>(c) + 0.5), yOf(static_cast<double>(r) + 0.5)), radius,
                                  radius);
        p.setBrush(Qt::NoBrush);
    }
    p.restore();

    // Labels, thinned to one per label pitch.
    p.setFont(style.small);
    p.setPen(Qt::black);
    const double pitch = fmS.height() * 1.05;
    // Steps of 1, 2, 5, 10, 20, ...: panels of nearly the same width (a figure's two models) thin
    // their labels alike, so one column never reads as two different tokens.
    auto niceStep = [](double minimum) {
        int64_t step = 1;
        for (int64_t decade = 1;; decade *= 10)
            for (int64_t k : {1, 2, 5})
                if ((step = k * decade) >= minimum) return step;
    };
    // A matrix of a few rows (heads, layers) labels every one of them, in a font up to a fifth
    // smaller, rather than leave rows unnamed; a long axis is thinned to one label per pitch.
    const bool fewRows = r1 - r0 <= 16 && cellH < pitch && cellH >= pitch * 0.8;
    const int64_t rowStep = fewRows ? 1 : niceStep(pitch / cellH);
    const int64_t colStep = flatRows > 0 ? 1 : niceStep(pitch / cellW);
    p.save();
    if (fewRows) p.setFont(detail::scaledFont(style.small, cellH / pitch));
    const QFontMetricsF fmR = fewRows ? style.metrics(p.font()) : fmS;
    for (int64_t i = (r0 + rowStep - 1) / rowStep * rowStep; rowLabels && i < r1; i += rowStep) {
        const double y = yOf(static_cast<double>(i) + 0.5);
        if (y < plot.top() - 0.5 || y > plot.bottom() + 0.5) continue;
        p.drawLine(QPointF(plot.left() - tick, y), QPointF(plot.left(), y));
        const QString s = labelFor(axes.rowLabels, i);
        p.drawText(QPointF(plot.left() - tick * 2 - fmR.horizontalAdvance(s), y + fmR.ascent() / 2 - fmR.descent() / 2),
                   s);
    }
    p.restore();
    // On screen, a plot taller than the scroll area showing it (the Paths view's matrices) keeps
    // its column labels and title in view: they stick to the bottom of the part in view, over a
    // white band, instead of showing only once scrolled to the end.
    double base = plot.bottom();
    if (const double band = (colLabels ? colLabelH + tick * 2 : tick) + (colTitle ? fmB.height() * 1.2 : 0);
        !style.visible.isEmpty() && plot.bottom() + band > style.visible.bottom() + 0.5 &&
        style.visible.bottom() - band > plot.top()) {
        base = style.visible.bottom() - band;
        p.fillRect(QRectF(r.left(), base, r.width(), band), Qt::white);
        p.drawLine(QPointF(plot.left(), base), QPointF(plot.right(), base));
    }
    if (flatRows > 0 && colLabels) {
        // Staggered flat labels: each hangs on a leader from its column, and a leader passes
        // under the labels of the rows above it only in the gaps between them.
        struct Flat {
            double x;
            int64_t row;
            QRectF box;
            QString text;
        };
        std::vector<Flat> flats;
        for (int64_t j = c0; j < c1; ++j) {
            const double x = xOf(static_cast<double>(j) + 0.5);
            if (x < plot.left() - 0.5 || x > plot.right() + 0.5) continue;
            const QString s = labelFor(axes.colLabels, j);
            const double w = fmS.horizontalAdvance(s);
            const double top = base + tick * 2 + static_cast<double>(j % flatRows) * fmS.height();
            flats.push_back({x, j % flatRows, QRectF(x - w / 2, top, w, fmS.height()), s});
        }
        for (const Flat& f : flats) {
            double y = base;
            const double end = f.box.top() - tick * 0.5;
            for (int64_t row = 0; row < f.row; ++row) // the rows above, top down
                for (const Flat& other : flats) {
                    if (other.row != row || f.x < other.box.left() - tick || f.x > other.box.right() + tick) continue;
                    if (other.box.top() > y) p.drawLine(QPointF(f.x, y), QPointF(f.x, other.box.top()));
                    y = std::max(y, other.box.bottom());
                }
            if (y < end) p.drawLine(QPointF(f.x, y), QPointF(f.x, end));
            p.drawText(QPointF(f.box.left(), f.box.top() + fmS.ascent()), f.text);
        }
    }
    for (int64_t j = (c0 + colStep - 1) / colStep * colStep; flatRows == 0 && colLabels && j < c1; j += colStep) {
        const double x = xOf(static_cast<double>(j) + 0.5);
        if (x < plot.left() - 0.5 || x > plot.right() + 0.5) continue;
        p.drawLine(QPointF(x, base), QPointF(x, base + tick));
        detail::drawRotatedText(p, QPointF(x, base + tick * 2), colLabelFor(j), Qt::AlignRight);
    }
    p.setFont(style.body);
    // On screen, a plot taller than the scroll area showing it keeps its row title and colour bar
    // in the part in view (centred there), not at its middle, which may be scrolled away.
    const QRectF shown = style.visible.isEmpty() ? plot : plot.intersected(style.visible);
    const QRectF titleSpan = shown.height() > 0 ? shown : plot;
    if (rowTitle)
        detail::drawRotatedText(p, QPointF(r.left() + fmB.height() * 0.5, titleSpan.center().y()), axes.rowTitle,
                                Qt::AlignHCenter);
    if (colTitle)
        p.drawText(
            QRectF(plot.center().x() - r.width() / 2, base + tick * 2 + colLabelH, r.width(), fmB.height() * 1.2),
            Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextDontClip, axes.colTitle);
    // Downsampling note: say how the picture summarizes the matrix.
    QString noteText;
    if (hi.blockRows > 1 || hi.blockCols > 1)
        noteText = QStringLiteral("%1 x %2 matrix; each pixel = %3 of a %4 x %5 tile%6")
                       .arg(src.rows())
                       .arg(src.cols())
                       .arg(downsampleModeName(pyramid.mode()))
                       .arg(hi.blockRows)
                       .arg(hi.blockCols)
                       .arg(hi.preview ? QStringLiteral(" (preview)") : QString());
    if (!noteText.isEmpty() && note) {
        // Wrapped, not cut: it may run into the caption's margin rather than lose its words.
        p.setFont(style.small);
        p.setPen(Qt::darkGray);
        p.drawText(QRectF(r.left(), r.bottom() - noteH, r.width(), noteH),
                   Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap | Qt::TextDontClip, noteText);
    }
    if (style.colorbar) {
        geo.colorbar = QRectF(plot.right() + tick * 3, titleSpan.top(), barBlock - tick, titleSpan.height());
        paintColorbar(p, geo.colorbar, scale, barTitle, style);
    }
    p.restore();
    return geo;
}

} // namespace gwb::views
