#pragma once
// Compare figure: for the selected token and layer, the Grassmann influence row over past tokens
// next to the baseline's attention rows (every head and the head mean), with Jensen-Shannon
// divergence and top-1 agreement per head; below, both models' layer x layer prompt-subspace
// distance matrices side by side on one colour scale, and their difference (diverging RdBu).

#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"
#include "gwb/views/row_comparison.h"

namespace gwb::views {

class CompareFigure final : public Figure {
public:
    enum class Model { Grassmann, Baseline };

    QString id() const override { return view_id::kCompare; }
    QString title() const override { return QStringLiteral("Compare"); }
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.35 : 0.8; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    unsigned analysisParts() const override {
        return gwb::engine::kAnalysisCore | gwb::engine::kAnalysisPromptSubspaces;
    }
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// Rows shown: influence, head 0..H-1, head mean (each over keys 0..t); empty when unavailable.
    struct Rows {
        QStringList names;
        std::vector<std::vector<float>> values;
        std::vector<RowComparison> agreement; ///< per attention row (heads and mean) vs influence
        QString problem;                      ///< why rows are missing
    };
    Rows rows() const;
    /// The rows as a heatmap (range [0, 1], the selected head's row marked), or rows().problem.
    HeatmapPanel rowsPanel() const;
    /// A model's layer x layer prompt-subspace distances; both models share one colour range.
    HeatmapPanel distancePanel(Model model) const;
    /// Grassmann minus baseline distances (signed, diverging around 0), or why there are none.
    HeatmapPanel differencePanel() const;

protected:
    void dataChanged() override;

private:
    /// The distance panels and their difference (m_distance, m_difference) for the current analyses.
    void updateDistancePanels() const;

    QString m_rowsData;        ///< addresses of the traces and the Grassmann analysis the rows come from
    QString m_distanceData;    ///< addresses of both analyses the distances come from
    mutable QString m_rowsKey; ///< token and layer of m_rowsPanel ("" = none)
    mutable HeatmapPanel m_rowsPanel;
    mutable bool m_distanceValid = false; ///< m_distance and m_difference are the analyses' now
    mutable HeatmapPanel m_distance[2];
    mutable HeatmapPanel m_difference;
};

} // namespace gwb::views
