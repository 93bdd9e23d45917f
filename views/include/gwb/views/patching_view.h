#pragma once
// Patching view, both models: causal tests by activation patching (a corrupted prompt run with one
// site's value taken from the clean run, the window's current prompt) or by zero / mean ablation,
// swept over layers x positions (x offsets for Grassmann, x heads for the Transformer). Cells show
// the normalised effect (patched - corrupted) / (clean - corrupted) of the metric
// logit[answer] - logit[wrong], both models side by side on one diverging scale centred at 0.
// The view never runs a model: it asks (runRequested, topKRequested) and the application computes
// off the GUI thread and hands the results back (setResult, setTopK). The fields, the results and
// the picture are PatchingFigure's (patching_figure.h); the view shows its panels.

#include "gwb/engine/causal_results.h"
#include "gwb/views/causal_view.h"
#include "gwb/views/patching_figure.h"
#include "gwb/views/patching_pairs.h"
#include "gwb/views/view.h"

#include <cstdint>
#include <limits>
#include <vector>

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QComboBox;
class QProgressBar;
class QScrollArea;
class QPushButton;
class QSplitter;
class QStackedWidget;
class QTableWidget;

namespace gwb::views {

class HeatmapWidget;

class PatchingView : public CausalView {
    Q_OBJECT
public:
    explicit PatchingView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kPatching; }
    QString title() const override { return QStringLiteral("Patching"); }
    void setSettings(const QJsonObject& settings) override;

    /// The fields as they are now (clean = the current prompt).
    PatchingInputs inputs() const;
    void setInputs(const PatchingInputs& inputs);
    /// Checks what the view can check without a model; "" when the request may go.
    QString checkInputs(const PatchingInputs& inputs) const;
    /// Presses Run: checks the fields and emits runRequested, or shows the problem.
    void run();

    /// A computed result: a bad-input message (result.error) is shown and changes nothing else.
    void setResult(const PatchingData& result);
    const PatchingData& result() const { return fig().result(); }
    /// Running: Run disabled, Cancel and progress shown.
    void setRunning(bool running);
    void setTopK(const PatchingTopK& topK);

    /// Over a pairs file: "Pairs file..." asks for the file (a dialog), then runs it.
    void choosePairsFile();
    /// Runs `file` with the view's site, mode and method: checks and emits pairsRequested.
    void runPairs(const QString& file);
    /// A computed pairs result: the heatmaps show each cell's mean over pairs, the side panel a
    /// clicked cell's distribution and the estimate-against-exact scatter. A result with an error
    /// (and no grid) is shown as a message and changes nothing else.
    void setPairsResult(const PairsData& result);
    const PairsData& pairsResult() const { return fig().pairsResult(); }
    /// The heatmaps show a pairs file's means (else a single pair's sweep).
    bool pairsMode() const { return fig().pairsMode(); }
    /// The pairs file last run or restored from a session ("" = none).
    QString pairsFile() const { return fig().pairsFile(); }
    /// "exact" or "attribution", for pairs files.
    QString pairsMethod() const;
    void setPairsMethod(const QString& method);
    /// A cell of model 0/1 clicked (as the mouse does): the top-K of a single pair's changed run,
    /// or the cell's distribution over pairs.
    void clickCell(int model, int64_t r, int64_t c);
    PairsPlotsWidget* pairsPlots() const { return m_pairsPlots; }

    /// Hover text of cell (r, c) of model 0 (Grassmann) / 1 (Transformer): raw and normalised
    /// values, "—" where undefined; `why` gets the tooltip for an undefined value.
    QString cellText(int model, int64_t r, int64_t c, QString* why = nullptr) const;

Q_SIGNALS:
    void runRequested(const gwb::views::PatchingInputs& inputs);
    void cancelRequested();
    /// The patched run of a cell of model 0/1 is wanted (its top-K next pieces).
    void topKRequested(int model, qint64 row, qint64 col);
    /// "Trace paths from here" on a cell's context menu: path patching of that component.
    void tracePathsRequested(int model, qint64 row, qint64 col);
    /// A pairs file is to be run (both models).
    void pairsRequested(const gwb::views::PairsInputs& inputs);

protected:
    void refresh() override;

private:
    PatchingFigure& fig() const { return figureAs<PatchingFigure>(); }
    /// The heatmaps from the figure's panels.
    void showPanels();
    /// A field was edited: the figure takes the fields as they are now.
    void fieldsEdited();
    /// Marks the heatmaps stale when they no longer match the inputs (a refused run, edited
    /// fields, another prompt), and clears the mark when they do.
    void updateStale() override;
    void hovered(int model, qint64 row, qint64 col);
    void showSide(bool pairs);

    QComboBox* m_site;
    QComboBox* m_mode;
    QDoubleSpinBox* m_minDifference;
    QComboBox* m_method;
    QPushButton* m_pairsButton;
    QSplitter* m_split;
    QStackedWidget* m_side;
    QScrollArea* m_pairsScroll;
    PairsPlotsWidget* m_pairsPlots;
};

} // namespace gwb::views

Q_DECLARE_METATYPE(gwb::views::PatchingInputs)
Q_DECLARE_METATYPE(gwb::views::PatchingData)
Q_DECLARE_METATYPE(gwb::views::PatchingTopK)
Q_DECLARE_METATYPE(gwb::views::PairsInputs)
Q_DECLARE_METATYPE(gwb::views::PairsData)
