#pragma once
// Attention figure (baseline trace): thumbnails of every head of the selected layer, the selected
// head large (query x key), and the selected query row's metrics (entropy, normalized entropy,
// S(a), top-1 mass, effective support, transport cost) for every head. Rows of long prompts come
// from gwb::engine::attentionRow on demand: no T x T matrix is allocated above the dense limit.

#include "gwb/views/downsample.h"
#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"

#include <memory>
#include <vector>

namespace gwb::views {

/// Row source for one head: attention probabilities (query rows, key columns), NaN above the diagonal.
MatrixSourcePtr attentionSource(const gwb::engine::TracePtr& trace, int layer, int head);

class AttentionFigure final : public Figure {
public:
    QString id() const override { return view_id::kAttention; }
    QString title() const override { return QStringLiteral("Attention"); }
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.0 : 0.55; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The selected head large: its rows (the same source while data, layer and head stay), the
    /// colour range [0, headMax(head)] and the selected query row; a placeholder without attention.
    HeatmapPanel panel() const;
    /// One pyramid per head of the selected layer (the same ones while the baseline trace and the
    /// layer stay: the screen's thumbnails compute their levels into them); empty without attention.
    std::vector<std::shared_ptr<MatrixPyramid>> headPyramids() const;
    /// Colour scale of the thumbnails: 0 to headMax(-1) on `map`.
    ColorScale gridScale(ColormapId map) const;
    /// Colour-scale maximum of a head (-1 = all heads): 95th percentile of its rows' largest probabilities.
    double headMax(int head) const;
    /// Column names of the metrics ("H (nats)", "H/log(t+1)", ...), in metricRows() order.
    QStringList metricNames() const;
    /// Heads x 6 metrics of the selected query (NaN where undefined); empty without an analysis.
    std::vector<std::vector<double>> metricRows() const;

protected:
    void dataChanged() override;

private:
    const gwb::engine::AttentionLayerAnalysis* layerAnalysis() const;

    QString m_traceData;              ///< address of the baseline trace m_pyramids come from
    QString m_analysisData;           ///< address of the baseline analysis m_panel's range comes from
    mutable int m_pyramidsLayer = -1; ///< layer of m_pyramids (-1 = none)
    mutable std::vector<std::shared_ptr<MatrixPyramid>> m_pyramids;
    mutable QString m_panelKey; ///< layer and head of m_panel ("" = none)
    mutable HeatmapPanel m_panel;
};

} // namespace gwb::views
