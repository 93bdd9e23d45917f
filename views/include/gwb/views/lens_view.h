#pragma once
// Logit-lens view, both models side by side (workbench-spec.md section 1 "Logit lens"): a
// lens-layer x token grid of each model's top-1 next-token prediction (text) coloured by its
// probability, the top-K list of the selected cell, and the rank of the actual next token per
// lens layer. Lens layer l < N is block l's input state, N the final state (final LN + tied head).

#include "gwb/views/view.h"

class QTableWidget;

namespace gwb::views {

class ChartWidget;
struct ChartData;
class LensGrid;

/// One model's lens numbers for drawing (from its LogitLens, WorkbenchData::lensOf).
struct LensGridData {
    QString title;
    QStringList rowLabels;      ///< N+1 lens layers
    QStringList colLabels;      ///< tokens shown (a window around the selection)
    int64_t firstToken = 0;     ///< token index of the first column
    std::vector<QString> text;  ///< rows x cols top-1 piece
    std::vector<float> prob;    ///< rows x cols top-1 probability (NaN = none)
    std::vector<bool> hitsNext; ///< rows x cols top-1 equals the actual next token
    int markRow = -1, markCol = -1;
    int rows() const { return static_cast<int>(rowLabels.size()); }
    int cols() const { return static_cast<int>(colLabels.size()); }
};

/// Draws a lens grid (cells with text, colourbar-free: probability in [0, 1] on `map`).
void paintLensGrid(QPainter& p, const QRectF& rect, const LensGridData& data, const FigureStyle& style, ColormapId map);

class LensView : public View {
    Q_OBJECT
public:
    static constexpr int kWindow = 14;       ///< tokens a figure shows around the selection, at most
    static constexpr int kScreenWindow = 64; ///< tokens the screen shows, at most (as many as fit whole)

    explicit LensView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("lens"); }
    QString title() const override { return QStringLiteral("Logit lens"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    /// One-column figures stack the grids and the chart, so they are taller.
    /// One column: the grids, the top-K lists and the rank chart stacked, each readable.
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 2.3 : 0.8; }

    /// Lens layer of the top-K list (0..N; default N = final state).
    int lensLayer() const { return m_lensLayer; }
    void setLensLayer(int l);
    /// Grid data of one model (nullptr trace: empty).
    LensGridData gridData(const gwb::engine::TracePtr& trace, int window = kWindow) const;
    /// Rank chart of the actual next token per lens layer, both models.
    ChartData rankChart() const;
    QTableWidget* table() const { return m_table; }
    /// Tokens the on-screen grids show now: as many as fit the grid's width with whole pieces.
    int screenColumns() const;

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    int clampedLensLayer(const gwb::engine::LogitLens& lens) const;
    /// Tokens a grid of this width shows (at most maxWindow, at least 3) so that every piece fits
    /// its cell whole.
    int figureWindow(double gridWidth, const FigureStyle& style, int maxWindow = kWindow, double minScale = 1.0) const;
    /// The on-screen grids, with as many tokens as their width holds (again after a resize).
    void refreshGrids();
    QStringList topKLines(const gwb::engine::TracePtr& trace) const;
    LensGrid* m_grassmannGrid;
    LensGrid* m_baselineGrid;
    ChartWidget* m_rank;
    QTableWidget* m_table;
    int m_lensLayer = -1; ///< -1 = final
};

} // namespace gwb::views
