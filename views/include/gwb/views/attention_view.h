#pragma once
// Attention view (baseline trace): thumbnails of every head of the selected layer, the selected
// head large (query x key), and the selected query row's metrics (entropy, normalized entropy,
// S(a), top-1 mass, effective support, transport cost) for every head. Rows of long prompts come
// from gwb::engine::attentionRow on demand: no T x T matrix is allocated above the dense limit.

#include "gwb/views/downsample.h"
#include "gwb/views/view.h"

#include <memory>

class QLabel;

class QTableWidget;

namespace gwb::views {

class HeatmapWidget;
class HeadGrid;

/// Row source for one head: attention probabilities (query rows, key columns), NaN above the diagonal.
MatrixSourcePtr attentionSource(const gwb::engine::TracePtr& trace, int layer, int head);

class AttentionView : public View {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);
    ~AttentionView() override;
    QString viewId() const override { return QStringLiteral("attention"); }
    QString title() const override { return QStringLiteral("Attention"); }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 1.0 : 0.55; }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    HeatmapWidget* heatmap() const { return m_heatmap; }

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override {
        return QStringLiteral("No baseline (Transformer) trace yet: load a baseline model and run a prompt.");
    }

private:
    const gwb::engine::AttentionLayerAnalysis* layerAnalysis() const;
    QStringList metricNames() const;
    /// Colour-scale maximum of a head (-1 = all heads): 95th percentile of its rows' largest probabilities.
    double headMax(int head) const;
    std::vector<std::vector<double>> metricRows() const; ///< heads x 6 metrics of the selected query
    HeadGrid* m_grid;
    HeatmapWidget* m_heatmap;
    QTableWidget* m_table;
    QLabel* m_scaleNote; ///< where the colour scale ends and why (its 95th-percentile top)
    std::vector<std::shared_ptr<MatrixPyramid>> m_pyramids; ///< one per head of the selected layer
    QString m_key;
};

} // namespace gwb::views
