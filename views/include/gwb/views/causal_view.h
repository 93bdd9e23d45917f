#pragma once
// What the Patching and Paths views share (no near-copies between them): the metric's
// fields, the Run / Cancel / progress / status row, the hover line, the two heatmaps (Grassmann,
// Transformer), the top-pieces table of a clicked cell, and how a run starts, is refused and is
// accepted. Each view adds its own inputs and results; its figure (PatchingFigure, PathsFigure)
// keeps them and draws the two heatmaps the view shows.

#include "gwb/views/view.h"

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace gwb::views {

class HeatmapWidget;
namespace detail {
/// causal_common.h: Run, Cancel, progress and status of a causal view.
struct RunControls {
    QPushButton* run = nullptr;
    QPushButton* cancel = nullptr;
    QProgressBar* progress = nullptr;
    QLabel* status = nullptr;
};
} // namespace detail

class CausalView : public View {
    Q_OBJECT
public:
    using View::View;
    /// The status line: the last problem, refusal or state shown.
    QString message() const;
    void setProgress(double fraction);
    bool running() const { return m_running; }
    HeatmapWidget* heatmap(int model) const { return model == 0 ? m_grassmann : m_transformer; }
    QLabel* hoverLabel() const { return m_hover; }
    QTableWidget* topKTable() const { return m_topK; }

protected:
    /// Shows `problem` (what the fields' check found) in the status line; false when it is "".
    bool showProblem(const QString& problem);
    /// A refused run (bad input the engine found): said in the status line and remembered, so the
    /// heatmaps, which keep the earlier result, are marked stale (updateStale).
    void refuse(const QString& error);
    /// Running: Run disabled, Cancel and progress shown, the status says `what`.
    void showRunningState(bool running, const QString& what);
    /// A new result arrived: no refusal or message any more, the top pieces and hover line cleared.
    void acceptResult();
    /// Marks the heatmaps stale when they no longer match the inputs, and clears the mark when they do.
    virtual void updateStale() = 0;
    /// Hands both heatmaps' zoom windows to the figure (an export shows what the screen shows).
    void syncFigure(Figure& figure) const override;

    QLineEdit* m_corrupt = nullptr;
    QLineEdit* m_answer = nullptr;
    QLineEdit* m_wrong = nullptr;
    detail::RunControls m_controls; ///< m_run .. m_status below are its widgets
    QPushButton* m_run = nullptr;
    QPushButton* m_cancel = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_hover = nullptr;
    HeatmapWidget* m_grassmann = nullptr;
    HeatmapWidget* m_transformer = nullptr;
    QTableWidget* m_topK = nullptr;
    QString m_message; ///< the last problem or state shown in m_status
    QString m_refused; ///< why the last run was refused (the heatmaps show an earlier result); "" = none
    bool m_running = false;
};

} // namespace gwb::views
