#pragma once
// Logit-lens view, both models side by side (workbench-spec.md section 1 "Logit lens"): each
// model's lens-layer x token grid of top-1 next-token predictions, the top-K list of the selected
// cell, and the rank of the actual next token per lens layer. The picture is LensFigure's
// (lens_figure.h); clicking a cell selects its lens layer and token. "Open lenses…" adds tuned and
// Jacobian lens folders (gwb lens fit): the window reads them out off the GUI thread (the app's
// lens job) and the view then shows every lens beside the logit lens for both models, saying when
// a lens was fitted on another model; "Logit lens only" goes back.

#include "gwb/views/lens_figure.h"
#include "gwb/views/view.h"

class QLabel;
class QPushButton;
class QStackedWidget;
class QTableWidget;

namespace gwb::views {

class ChartWidget;
class LensGrid;
class LensComparePane;

class LensView : public View {
    Q_OBJECT
public:
    static constexpr int kWindow = LensFigure::kWindow; ///< tokens a figure shows around the selection, at most
    static constexpr int kScreenWindow = 64;            ///< tokens the screen shows, at most (as many as fit whole)

    explicit LensView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kLens; }
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

    /// The lens folders shown beside the logit lens; setting them (for the current traces, and
    /// again after each new run) asks for their readouts with comparisonRequested. Empty: the
    /// logit lens alone.
    void setLensFolders(const QStringList& folders);
    QStringList lensFolders() const { return m_folders; }
    /// The readouts of lensFolders() (from the app's lens job): the view shows them.
    void setComparison(const gwb::engine::LensComparisonPtr& comparison);
    /// Whether the view shows lenses beside the logit lens now.
    bool comparing() const;
    /// While the readouts are computed: the buttons wait, the status line says so.
    void setLensRunning(bool running);
    /// The status line above the lenses ("" = none): what is shown, where each lens was fitted, problems.
    void setLensMessage(const QString& text);
    QString lensMessage() const;

Q_SIGNALS:
    /// "Open lenses…" was pressed: the window asks for a folder and adds it (setLensFolders).
    void lensesRequested();
    /// The readouts of `folders` on the current traces are needed (setComparison answers).
    void comparisonRequested(const QStringList& folders);

protected:
    void refresh() override;

private:
    const LensFigure& synced() const { return static_cast<const LensFigure&>(figure()); }
    /// The on-screen grids, with as many tokens as their width holds (again after a resize).
    void refreshGrids();
    /// Asks for the readouts when the folders are set and the traces are not the ones asked for.
    void requestComparisonIfStale();
    QStringList m_folders;
    const void* m_requestedFor[2] = {nullptr, nullptr}; ///< the traces of the last request
    QPushButton* m_open;
    QPushButton* m_clear;
    QLabel* m_status;
    QStackedWidget* m_stack;
    LensComparePane* m_pane;
    LensGrid* m_grassmannGrid;
    LensGrid* m_baselineGrid;
    ChartWidget* m_rank;
    QTableWidget* m_table;
};

} // namespace gwb::views
