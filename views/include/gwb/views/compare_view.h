#pragma once
// Compare view: for the selected token and layer, the Grassmann influence row over past tokens
// next to the baseline's attention rows (every head and the head mean), with Jensen-Shannon
// divergence and top-1 agreement per head; below, both models' layer x layer prompt-subspace
// distance matrices side by side on one colour scale, and their difference (diverging RdBu).

#include "gwb/views/row_comparison.h"
#include "gwb/views/view.h"

class QTableWidget;

namespace gwb::views {

class HeatmapWidget;

class CompareView : public View {
    Q_OBJECT
public:
    explicit CompareView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("compare"); }
    QString title() const override { return QStringLiteral("Compare"); }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    unsigned analysisParts() const override {
        return gwb::engine::kAnalysisCore | gwb::engine::kAnalysisPromptSubspaces;
    }
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 1.35 : 0.8; }
    HeatmapWidget* rowsHeatmap() const { return m_rows; }
    HeatmapWidget* differenceHeatmap() const { return m_diff; }

    /// Rows shown: influence, head 0..H-1, head mean (each over keys 0..t); empty when unavailable.
    struct Rows {
        QStringList names;
        std::vector<std::vector<float>> values;
        std::vector<RowComparison> agreement; ///< per attention row (heads and mean) vs influence
        QString problem;                      ///< why rows are missing
    };
    Rows rows() const;

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override {
        return QStringLiteral("Compare needs both a Grassmann and a baseline trace of the same prompt: run a prompt "
                              "with both models loaded.");
    }

private:
    HeatmapWidget* m_rows;
    HeatmapWidget* m_gDist;
    HeatmapWidget* m_bDist;
    HeatmapWidget* m_diff; ///< Grassmann minus baseline distances (signed, RdBu centred at 0)
    QTableWidget* m_table;
};

} // namespace gwb::views
