#pragma once
// Logit-lens view, both models side by side (workbench-spec.md section 1 "Logit lens"): each
// model's lens-layer x token grid of top-1 next-token predictions, the top-K list of the selected
// cell, and the rank of the actual next token per lens layer. The picture is LensFigure's
// (lens_figure.h); clicking a cell selects its lens layer and token.

#include "gwb/views/lens_figure.h"
#include "gwb/views/view.h"

class QTableWidget;

namespace gwb::views {

class ChartWidget;
class LensGrid;

class LensView : public View {
    Q_OBJECT
public:
    static constexpr int kWindow = LensFigure::kWindow; ///< tokens a figure shows around the selection, at most
    static constexpr int kScreenWindow = 64;            ///< tokens the screen shows, at most (as many as fit whole)

    explicit LensView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("lens"); }
    QString title() const override { return QStringLiteral("Logit lens"); }
    void setSettings(const QJsonObject& settings) override;

    /// Lens layer of the top-K list (0..N; default N = final state).
    int lensLayer() const { return figureAs<LensFigure>().lensLayer(); }
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

private:
    const LensFigure& synced() const { return static_cast<const LensFigure&>(figure()); }
    /// The on-screen grids, with as many tokens as their width holds (again after a resize).
    void refreshGrids();
    LensGrid* m_grassmannGrid;
    LensGrid* m_baselineGrid;
    ChartWidget* m_rank;
    QTableWidget* m_table;
};

} // namespace gwb::views
