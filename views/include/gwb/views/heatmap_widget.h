#pragma once
// The one heatmap widget of the workbench: a matrix drawn from a QImage of its visible window
// (never one item per cell), with colorbar, token labels, wheel zoom, drag pan, hover readout and
// tile downsampling (max or mean) computed off the GUI thread once per zoom level.

#include "gwb/views/colormap.h"
#include "gwb/views/downsample.h"
#include "gwb/views/heatmap_painter.h"
#include "gwb/views/heatmap_panel.h"

#include <QWidget>
#include <functional>
#include <atomic>
#include <memory>
#include <set>

namespace gwb::views {

class HeatmapWidget : public QWidget {
    Q_OBJECT
public:
    explicit HeatmapWidget(QWidget* parent = nullptr);
    ~HeatmapWidget() override;

    /// New matrix; resets zoom. The colour range follows the data (see setFixedRange).
    void setMatrix(MatrixSourcePtr source, const HeatmapAxes& axes);
    void setAxes(const HeatmapAxes& axes);
    /// Shows a figure's panel: its matrix (zoom kept while the source is the same one), axes,
    /// range, downsampling, marks, or its placeholder.
    void setPanel(const HeatmapPanel& panel);
    void setColormap(ColormapId map);
    ColormapId colormap() const { return m_map; }
    /// Diverging data: symmetric range around 0 (use with RdBu).
    void setDiverging(bool diverging);
    /// Fixed colour range (e.g. [0, 1] for gates); NaN, NaN = follow the data.
    void setFixedRange(double low, double high);
    void setDownsampleMode(DownsampleMode mode);
    DownsampleMode downsampleMode() const { return m_mode; }
    void setMarks(const HeatmapMarks& marks);
    HeatmapMarks marks() const { return m_marks; }
    /// Message shown instead of a matrix (e.g. "no Grassmann trace: run a prompt").
    void setPlaceholder(const QString& text);
    /// A banner over the matrix saying the picture no longer matches its inputs ("" = none); the
    /// matrix stays visible underneath, greyed.
    void setStaleNote(const QString& text);
    QString staleNote() const { return m_staleNote; }
    /// Why a NaN cell is undefined, for the hover readout (default: "undefined here").
    void setUndefinedReason(std::function<QString(int64_t row, int64_t col)> reason);

    bool hasMatrix() const { return m_pyramid != nullptr; }
    /// The cache of downsampled levels of the current matrix (null without one).
    const MatrixPyramid* pyramid() const { return m_pyramid.get(); }
    const MatrixSource* source() const { return m_pyramid ? &m_pyramid->source() : nullptr; }
    const HeatmapAxes& axes() const { return m_axes; }
    ColorScale colorScale() const;
    /// Visible window in cells (x = column, y = row).
    QRectF window() const { return m_window; }
    void setWindow(const QRectF& window);
    void resetZoom();

    /// Draws the current window as a figure panel (synchronously computes the needed level).
    /// Returns where the matrix went (empty without a matrix).
    HeatmapGeometry paintFigure(QPainter& p, const QRectF& area, const FigureStyle& style, const QString& title,
                                ColormapId map) const;
    /// Where the last paint put the matrix; empty when the widget was too small to draw it
    /// (the "panel too small" notice) or has not painted yet.
    QRectF plotRect() const { return m_geometry.plot; }
    /// Where the colour bar was last painted (empty when off).
    QRectF colorbarRect() const { return m_geometry.colorbar; }
    /// Cell under a widget position, or (-1, -1).
    QPoint cellAt(const QPointF& pos) const;
    /// Text of the hover readout for a cell.
    QString readout(int64_t row, int64_t col) const;

Q_SIGNALS:
    void cellClicked(qint64 row, qint64 col);
    void cellHovered(qint64 row, qint64 col, const QString& text);

protected:
    void paintEvent(QPaintEvent* event) override;
    void wheelEvent(QWheelEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;

private:
    void rebuildPyramid();
    void updateRange();
    void requestLevel(int ly, int lx);
    void clampWindow();
    double valueAt(int64_t row, int64_t col) const;

    MatrixSourcePtr m_source;
    std::shared_ptr<MatrixPyramid> m_pyramid;
    HeatmapAxes m_axes;
    HeatmapMarks m_marks;
    ColormapId m_map = ColormapId::Viridis;
    DownsampleMode m_mode = DownsampleMode::Max;
    bool m_diverging = false;
    double m_fixedLow;
    double m_fixedHigh;
    double m_dataLow = 0;
    double m_dataHigh = 1;
    QRectF m_window;
    QString m_placeholder;
    QString m_staleNote;
    std::function<QString(int64_t, int64_t)> m_undefinedReason;
    QString m_hoverText;
    HeatmapGeometry m_geometry;
    bool m_dragging = false;
    bool m_dragMoved = false;
    QPointF m_dragStart;
    QRectF m_dragWindow;
    std::set<std::pair<int, int>> m_pending;     ///< levels being computed
    std::shared_ptr<std::atomic<bool>> m_cancel; ///< set to drop work for an old matrix
};

} // namespace gwb::views
