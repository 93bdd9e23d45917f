#include "gwb/views/heatmap_widget.h"

#include "plot_util.h"

#include <QFontMetricsF>
#include <QFuture>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>
#include <cmath>
#include <limits>

namespace gwb::views {
namespace {
// Matrices up to this many cells are downsampled synchronously while painting; bigger ones in
// the background (the picture shows a coarser cached level or a note meanwhile).
constexpr int64_t kSyncCells = int64_t{1} << 20;
constexpr double kZoomStep = 1.25;
} // namespace

HeatmapWidget::HeatmapWidget(QWidget* parent)
    : QWidget(parent), m_fixedLow(std::nan("")), m_fixedHigh(std::nan("")),
      m_cancel(std::make_shared<std::atomic<bool>>(false)) {
    setMouseTracking(true);
    setMinimumSize(160, 120);
    setFocusPolicy(Qt::ClickFocus);
}

HeatmapWidget::~HeatmapWidget() {
    m_cancel->store(true);
}

void HeatmapWidget::setMatrix(MatrixSourcePtr source, const HeatmapAxes& axes) {
    m_source = std::move(source);
    m_axes = axes;
    m_placeholder.clear();
    rebuildPyramid();
    resetZoom();
}

void HeatmapWidget::setPanel(const HeatmapPanel& panel) {
    m_marks = panel.marks;
    if (!panel.source) {
        setPlaceholder(panel.placeholder);
        return;
    }
    m_fixedLow = panel.fixedLow;
    m_fixedHigh = panel.fixedHigh;
    m_diverging = panel.diverging;
    if (panel.diverging) m_map = ColormapId::RdBu;
    if (panel.mode != m_mode) {
        m_mode = panel.mode;
        m_source.reset(); // a new pyramid below
    }
    if (panel.source != m_source)
        setMatrix(panel.source, panel.axes);
    else
        setAxes(panel.axes);
}

void HeatmapWidget::setAxes(const HeatmapAxes& axes) {
    m_axes = axes;
    update();
}

void HeatmapWidget::rebuildPyramid() {
    m_cancel->store(true); // results for the previous matrix are dropped
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_pending.clear();
    m_pyramid = m_source ? std::make_shared<MatrixPyramid>(m_source, m_mode) : nullptr;
    updateRange();
    update();
}

void HeatmapWidget::updateRange() {
    m_dataLow = 0;
    m_dataHigh = 1;
    if (!m_source || !m_source->dense()) return; // computed rows: callers give a fixed range
    const auto [lo, hi] = finiteRange(*m_source);
    if (std::isfinite(lo)) {
        m_dataLow = lo;
        m_dataHigh = hi;
    }
}

void HeatmapWidget::setColormap(ColormapId map) {
    m_map = map;
    update();
}
void HeatmapWidget::setDiverging(bool diverging) {
    m_diverging = diverging;
    update();
}
void HeatmapWidget::setFixedRange(double low, double high) {
    m_fixedLow = low;
    m_fixedHigh = high;
    update();
}
void HeatmapWidget::setDownsampleMode(DownsampleMode mode) {
    if (mode == m_mode) return;
    m_mode = mode;
    rebuildPyramid();
}
void HeatmapWidget::setMarks(const HeatmapMarks& marks) {
    m_marks = marks;
    update();
}
void HeatmapWidget::setStaleNote(const QString& text) {
    if (text == m_staleNote) return;
    m_staleNote = text;
    update();
}

void HeatmapWidget::setUndefinedReason(std::function<QString(int64_t, int64_t)> reason) {
    m_undefinedReason = std::move(reason);
}

void HeatmapWidget::setPlaceholder(const QString& text) {
    m_placeholder = text;
    m_source.reset();
    rebuildPyramid();
}

ColorScale HeatmapWidget::colorScale() const {
    const bool fixed = std::isfinite(m_fixedLow) && std::isfinite(m_fixedHigh);
    return ColorScale::fromRange(m_map, fixed ? m_fixedLow : m_dataLow, fixed ? m_fixedHigh : m_dataHigh, m_diverging);
}

void HeatmapWidget::resetZoom() {
    m_window = m_source ? QRectF(0, 0, static_cast<double>(m_source->cols()), static_cast<double>(m_source->rows()))
                        : QRectF();
    update();
}

void HeatmapWidget::setWindow(const QRectF& window) {
    m_window = window;
    clampWindow();
    update();
}

void HeatmapWidget::clampWindow() {
    if (!m_source) return;
    const double C = static_cast<double>(m_source->cols());
    const double R = static_cast<double>(m_source->rows());
    double w = std::clamp(m_window.width(), std::min(C, 2.0), C);
    double h = std::clamp(m_window.height(), std::min(R, 2.0), R);
    double x = std::clamp(m_window.left(), 0.0, C - w);
    double y = std::clamp(m_window.top(), 0.0, R - h);
    m_window = QRectF(x, y, w, h);
}

void HeatmapWidget::requestLevel(int ly, int lx) {
    if ((ly == 0 && lx == 0) || !m_pyramid || m_pending.count({ly, lx})) return;
    m_pending.insert({ly, lx});
    auto pyramid = m_pyramid;
    auto cancel = m_cancel;
    QPointer<HeatmapWidget> self(this);
    QtConcurrent::run([pyramid, cancel, ly, lx] {
        pyramid->level(ly, lx, cancel.get());
    }).then(this, [self, cancel, ly, lx] {
        if (!self || cancel->load()) return; // stale: the matrix changed meanwhile
        self->m_pending.erase({ly, lx});
        self->update();
    });
}

void HeatmapWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    FigureStyle style = FigureStyle::forScreen(font());
    // Inside a scroll area (the paths view's tall matrices) only part of the widget is in view.
    if (const QRect shown = visibleRegion().boundingRect(); !shown.isEmpty() && shown != rect())
        style.visible = QRectF(shown);
    if (!m_pyramid) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                   m_placeholder.isEmpty() ? QStringLiteral("No data") : m_placeholder);
        return;
    }
    const QFontMetricsF fm(font());
    // Two lines under the matrix for the hover readout, so a long one wraps instead of being cut
    // (at 1280 x 720 one line held half of it); a stale result's banner gets its own band above
    // the matrix instead of covering its title and first row.
    const double hintHeight = fm.height() * 2.4;
    QRectF area = QRectF(rect()).adjusted(4, 4, -4, -hintHeight);
    QRectF banner;
    if (!m_staleNote.isEmpty()) {
        banner = QRectF(4, 4, width() - 8, std::min<double>(height() / 3.0, fm.height() * 3.4));
        area.setTop(banner.bottom() + 4);
    }
    const bool sync = m_source->rows() * m_source->cols() <= kSyncCells;
    HeatmapImage used;
    m_geometry = paintHeatmap(p, area, *m_pyramid, m_window, colorScale(), m_axes, style, m_marks, sync, &used);
    if (used.image.isNull() || used.preview) requestLevel(used.levelRows, used.levelCols);
    p.setPen(palette().color(QPalette::Text));
    p.setFont(font());
    const QString hint =
        m_hoverText.isEmpty()
            ? QStringLiteral("wheel: zoom (Shift: columns only) \u00b7 drag: pan \u00b7 double-click: reset")
            : m_hoverText;
    const double lineWidth = width() - 8;
    p.drawText(QRectF(4, height() - hintHeight, lineWidth, hintHeight - 2),
               Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap,
               fm.horizontalAdvance(hint) > 1.8 * lineWidth ? fm.elidedText(hint, Qt::ElideRight, 1.8 * lineWidth)
                                                            : hint);
    if (!m_staleNote.isEmpty()) {
        // Stale: grey the picture and say why, so an old result is never read as the current one.
        p.fillRect(area, QColor(255, 255, 255, 150));
        p.fillRect(banner, QColor(255, 243, 205, 235));
        p.setPen(QColor(120, 80, 0));
        p.drawRect(banner);
        p.drawText(banner.adjusted(6, 2, -6, -2), Qt::AlignCenter | Qt::TextWordWrap, m_staleNote);
    }
}

QPoint HeatmapWidget::cellAt(const QPointF& pos) const {
    if (!m_source || !m_geometry.plot.contains(pos)) return {-1, -1};
    const double col =
        m_window.left() + (pos.x() - m_geometry.plot.left()) / m_geometry.plot.width() * m_window.width();
    const double row =
        m_window.top() + (pos.y() - m_geometry.plot.top()) / m_geometry.plot.height() * m_window.height();
    const int c = static_cast<int>(std::clamp<double>(std::floor(col), 0, static_cast<double>(m_source->cols() - 1)));
    const int r = static_cast<int>(std::clamp<double>(std::floor(row), 0, static_cast<double>(m_source->rows() - 1)));
    return {c, r};
}

double HeatmapWidget::valueAt(int64_t row, int64_t col) const {
    if (!m_source) return std::nan("");
    if (const float* d = m_source->dense()) return d[row * m_source->cols() + col];
    std::vector<float> buf(static_cast<size_t>(m_source->cols()));
    m_source->row(row, buf.data());
    return buf[static_cast<size_t>(col)];
}

QString HeatmapWidget::readout(int64_t row, int64_t col) const {
    auto label = [](const QStringList& l, int64_t i) {
        return i < l.size() ? QStringLiteral("'%1' (%2)").arg(detail::labelText(l[static_cast<int>(i)], 24)).arg(i)
                            : QString::number(i);
    };
    const QString rowName = m_axes.rowTitle.isEmpty() ? QStringLiteral("row") : m_axes.rowTitle;
    const QString colName = m_axes.colTitle.isEmpty() ? QStringLiteral("col") : m_axes.colTitle;
    return QStringLiteral("%1 %2 \u00b7 %3 %4 \u00b7 %5 = %6")
               .arg(rowName, label(m_axes.rowLabels, row), colName, label(m_axes.colLabels, col),
                    m_axes.valueName.isEmpty() ? QStringLiteral("value") : m_axes.valueName,
                    detail::formatValue(valueAt(row, col))) +
           (std::isnan(valueAt(row, col))
                ? QStringLiteral(" (%1)").arg(m_undefinedReason ? m_undefinedReason(row, col)
                                                                : QStringLiteral("undefined here"))
                : QString());
}

void HeatmapWidget::wheelEvent(QWheelEvent* event) {
    if (!m_source) return;
    const double steps = event->angleDelta().y() / 120.0;
    if (steps == 0) return;
    const double f = std::pow(kZoomStep, -steps);
    const QPointF pos = event->position();
    const QRectF& plot = m_geometry.plot;
    const double fx = plot.width() > 0 ? std::clamp((pos.x() - plot.left()) / plot.width(), 0.0, 1.0) : 0.5;
    const double fy = plot.height() > 0 ? std::clamp((pos.y() - plot.top()) / plot.height(), 0.0, 1.0) : 0.5;
    const double cx = m_window.left() + fx * m_window.width();
    const double cy = m_window.top() + fy * m_window.height();
    const bool columnsOnly = event->modifiers() & Qt::ShiftModifier;
    const double w = m_window.width() * f;
    const double h = columnsOnly ? m_window.height() : m_window.height() * f;
    m_window = QRectF(cx - fx * w, columnsOnly ? m_window.top() : cy - fy * h, w, h);
    clampWindow();
    update();
    event->accept();
}

void HeatmapWidget::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton) return;
    m_dragging = true;
    m_dragMoved = false;
    m_dragStart = event->position();
    m_dragWindow = m_window;
}

void HeatmapWidget::mouseMoveEvent(QMouseEvent* event) {
    if (m_dragging && m_source && !m_geometry.plot.isEmpty()) {
        const QPointF d = event->position() - m_dragStart;
        if (d.manhattanLength() > 3) m_dragMoved = true;
        if (m_dragMoved) {
            m_window = m_dragWindow.translated(-d.x() / m_geometry.plot.width() * m_dragWindow.width(),
                                               -d.y() / m_geometry.plot.height() * m_dragWindow.height());
            clampWindow();
        }
    }
    const QPoint cell = cellAt(event->position());
    if (cell.x() >= 0) {
        m_hoverText = readout(cell.y(), cell.x());
        Q_EMIT cellHovered(cell.y(), cell.x(), m_hoverText);
    } else {
        m_hoverText.clear();
    }
    update();
}

void HeatmapWidget::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || !m_dragging) return;
    m_dragging = false;
    if (!m_dragMoved) {
        const QPoint cell = cellAt(event->position());
        if (cell.x() >= 0) Q_EMIT cellClicked(cell.y(), cell.x());
    }
}

void HeatmapWidget::mouseDoubleClickEvent(QMouseEvent*) {
    resetZoom();
}

void HeatmapWidget::leaveEvent(QEvent*) {
    m_hoverText.clear();
    update();
}

HeatmapGeometry HeatmapWidget::paintFigure(QPainter& p, const QRectF& area, const FigureStyle& style,
                                           const QString& title, ColormapId map) const {
    if (!m_pyramid) {
        p.save();
        p.setFont(style.body);
        p.setPen(Qt::darkGray);
        p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap,
                   m_placeholder.isEmpty() ? QStringLiteral("No data") : m_placeholder);
        p.restore();
        return {};
    }
    HeatmapAxes axes = m_axes;
    axes.title = title;
    ColorScale scale = colorScale();
    if (!m_diverging) scale.map = map; // signed data keeps its diverging map
    return paintHeatmap(p, area, *m_pyramid, m_window, scale, axes, style,
                        style.selection ? m_marks : HeatmapMarks{-1, -1, m_marks.cells},
                        /*computeMissing=*/true);
}

} // namespace gwb::views
