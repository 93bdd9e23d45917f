#pragma once
// Paths view, both models: path patching (engine pathPatching, gwb paths). Rows are the senders
// (offset.l.D, mixer.l, gate.l, ffn.l / head.l.H, mixer.l, ffn.l, in layer order), columns the
// receivers (logits: the direct effect; resid.M: the effect through block input h^M). Cells show
// the normalised effect of the metric logit[answer] - logit[wrong], both models side by side on
// one diverging scale. The clean prompt is the window's prompt. The view never runs a model: it
// asks (runRequested, topKRequested) and the application computes off the GUI thread. The fields,
// the result and the picture are PathsFigure's (paths_figure.h); the view shows its panels.

#include "gwb/views/causal_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_figure.h"
#include "gwb/views/view.h"

#include <cstdint>
#include <limits>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QDoubleSpinBox;
class QSpinBox;
class QTableWidget;

class QScrollArea;

namespace gwb::views {

class HeatmapWidget;

class PathsView : public CausalView {
    Q_OBJECT
public:
    explicit PathsView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kPaths; }
    QString title() const override { return QStringLiteral("Paths"); }
    void setSettings(const QJsonObject& settings) override;
    /// Pixels each sender row gets on screen (the matrices scroll when the view is shorter).
    int rowPitchOnScreen(int model) const;

    PathsInputs inputs() const;
    void setInputs(const PathsInputs& inputs);
    QString checkInputs(const PathsInputs& inputs) const;
    void run();
    void setResult(const PathsData& result);
    const PathsData& result() const { return fig().result(); }
    /// Runs a pairs file with the view's senders, receivers and threshold: emits pairsRequested.
    void runPairs(const QString& file);
    /// A pairs file's run (paths_view_pairs.cpp): one without a grid says why and changes nothing.
    void setPairsResult(const PathsPairsData& result);
    const PathsPairsData& pairsResult() const { return fig().pairsResult(); }
    bool pairsMode() const { return fig().pairsMode(); }
    void setRunning(bool running);
    /// A clicked cell's run: its top next pieces (row = sender, col = receiver; -1: the cell last
    /// clicked).
    void setTopK(const PatchingTopK& topK);
    /// Outlines the sender row `label` in both matrices where it exists ("" = none).
    void markSender(const QString& label);

    QString cellText(int model, int64_t r, int64_t c, QString* why = nullptr) const;

Q_SIGNALS:
    void runRequested(const gwb::views::PathsInputs& inputs);
    void pairsRequested(const gwb::views::PathsPairsInputs& inputs);
    void cancelRequested();
    void topKRequested(int model, const QString& sender, const QString& receiver);

protected:
    void refresh() override;

private:
    PathsFigure& fig() const { return figureAs<PathsFigure>(); }
    const PathsGrid& grid(int model) const { return model == 0 ? result().grassmann : result().transformer; }
    /// The matrices from the figure's panels, their rows as tall as a label (fitRowsToLabels).
    void showPanels();
    /// Row heights from the row count (see rowPitchOnScreen).
    void fitRowsToLabels();
    /// A field was edited: the figure takes the fields as they are now.
    void fieldsEdited();
    void updateStale() override;
    void hovered(int model, qint64 row, qint64 col);
    void choosePairsFile();

    QScrollArea* m_scroll = nullptr;
    QPushButton* m_pairsButton = nullptr;
    QComboBox* m_senders;
    QComboBox* m_receivers;
    QSpinBox* m_position;
    QDoubleSpinBox* m_minDifference;
    int64_t m_topKCell[3] = {-1, -1, -1}; ///< model, row, column of the cell last clicked
};

} // namespace gwb::views

Q_DECLARE_METATYPE(gwb::views::PathsInputs)
Q_DECLARE_METATYPE(gwb::views::PathsData)
Q_DECLARE_METATYPE(gwb::views::PathsPairsInputs)
Q_DECLARE_METATYPE(gwb::views::PathsPairsData)
