#pragma once
// Patching view, both models: causal tests by activation patching (a corrupted prompt run with one
// site's value taken from the clean run, the window's current prompt) or by zero / mean ablation,
// swept over layers x positions (x offsets for Grassmann, x heads for the Transformer). Cells show
// the normalised effect (patched - corrupted) / (clean - corrupted) of the metric
// logit[answer] - logit[wrong], both models side by side on one diverging scale centred at 0.
// The view never runs a model: it asks (runRequested, topKRequested) and the application computes
// off the GUI thread and hands the results back (setResult, setTopK).

#include "gwb/views/patching_pairs.h"
#include "gwb/views/causal_view.h"
#include "gwb/views/view.h"

#include <cstdint>
#include <limits>
#include <vector>

class QLabel;
class QLineEdit;
class QComboBox;
class QProgressBar;
class QPushButton;
class QSplitter;
class QStackedWidget;
class QTableWidget;

namespace gwb::views {

class HeatmapWidget;

/// What the person asked for (the view's fields).
struct PatchingInputs {
    QString clean;   ///< clean prompt (the window's current prompt)
    QString corrupt; ///< corrupted prompt, same token length; "" = ablate the clean prompt
    QString answer;  ///< answer piece of the metric ("" with wrong "" = no metric: an ablation of the prompt)
    QString wrong;   ///< wrong piece of the metric
    /// "resid", "mixer", "gate", "ffn" or "offset/head" (Grassmann offsets, Transformer heads).
    QString site = QStringLiteral("resid");
    QString mode = QStringLiteral("patch"); ///< "patch", "zero" or "mean"
};

/// One model's sweep as drawn (copied by the application from the engine's result).
struct PatchingGrid {
    QString model;     ///< "Grassmann" or "Transformer"
    QString modelName; ///< the model's display name
    QString site;      ///< the site run on this model: "resid", ..., "offset" or "head"
    QString error;     ///< why there is no grid ("" = there is one)
    int64_t rows = 0;  ///< layers (resid: N+1 block inputs)
    int64_t cols = 0;  ///< positions, offsets or heads
    QStringList rowLabels, colLabels;
    QString rowTitle, colTitle;   ///< e.g. "layer", "position"
    std::vector<uint8_t> defined; ///< rows*cols: 0 where the cell does not exist (an offset the layer lacks,
                                  ///< or one that reaches before the prompt at every position)
    int64_t tokens = 0;           ///< the prompt's length T (why an offset D >= T is undefined)
    bool hasMetric = false;       ///< answer and wrong given: metric and effect are filled
    double cleanMetric = std::numeric_limits<double>::quiet_NaN();   ///< logit diff of the clean run
    double corruptMetric = std::numeric_limits<double>::quiet_NaN(); ///< of the corrupted run
    bool effectDefined = false;                                      ///< clean and corrupted metrics differ
    std::vector<double> metric;    ///< rows*cols raw metric of the changed run (NaN: undefined)
    std::vector<double> effect;    ///< rows*cols normalised effect (NaN: undefined)
    std::vector<double> meanDelta; ///< rows*cols mean delta log p(next token), nats (ablation without metric)

    bool hasGrid() const { return error.isEmpty() && rows > 0 && cols > 0; }
    /// Which quantity the cells show.
    enum class Shown { Effect, MetricChange, MeanDelta };
    Shown shown() const;
    /// The drawn value of cell (r, c): the effect; else (ablation with a metric but no corrupted
    /// prompt) metric - clean metric; else the mean delta log p. NaN where undefined.
    double value(int64_t r, int64_t c) const;
    /// Why cell (r, c) is undefined ("" when it is defined).
    QString undefinedReason(int64_t r, int64_t c) const;
};

/// A whole result: both models' grids for one request.
struct PatchingData {
    PatchingInputs inputs;
    QString error;       ///< bad input: the message shown, nothing else changes
    QString answerPiece; ///< the pieces as the tokenizer reads them ("▁she")
    QString wrongPiece;
    int64_t metricPosition = -1; ///< token whose next-token logits give the metric
    QStringList cleanTokens;     ///< pieces of the clean prompt
    QStringList corruptTokens;   ///< pieces of the corrupted prompt (empty without one)
    PatchingGrid grassmann, transformer;
    bool hasGrid() const { return grassmann.hasGrid() || transformer.hasGrid(); }
};

/// The patched run of one clicked cell: its top-K next pieces at the metric position.
struct PatchingTopK {
    int model = 0; ///< 0 Grassmann, 1 Transformer
    int64_t row = -1, col = -1;
    QStringList pieces;         ///< K pieces, most probable first
    std::vector<double> probs;  ///< their probabilities
    std::vector<double> logits; ///< their logits
    QString error;              ///< why there is none
};

/// Largest |value| over the defined cells of both grids (the shared colour scale), 0 when none.
double patchingScale(const PatchingData& data);

class PatchingView : public CausalView {
    Q_OBJECT
public:
    explicit PatchingView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("patching"); }
    QString title() const override { return QStringLiteral("Patching"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    double figureAspect(double widthInches) const override;

    /// The fields as they are now (clean = the current prompt).
    PatchingInputs inputs() const;
    void setInputs(const PatchingInputs& inputs);
    /// Checks what the view can check without a model; "" when the request may go.
    QString checkInputs(const PatchingInputs& inputs) const;
    /// Presses Run: checks the fields and emits runRequested, or shows the problem.
    void run();

    /// A computed result: a bad-input message (result.error) is shown and changes nothing else.
    void setResult(const PatchingData& result);
    const PatchingData& result() const { return m_result; }
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
    const PairsData& pairsResult() const { return m_pairs; }
    /// The heatmaps show a pairs file's means (else a single pair's sweep).
    bool pairsMode() const { return m_pairsMode; }
    /// The pairs file last run or restored from a session ("" = none).
    QString pairsFile() const { return m_pairsFile; }
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
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    const PatchingGrid& grid(int model) const { return model == 0 ? m_result.grassmann : m_result.transformer; }
    void showGrid(int model);
    /// Marks the heatmaps stale when they no longer match the inputs (a refused run, edited
    /// fields, another prompt), and clears the mark when they do.
    void updateStale() override;
    void hovered(int model, qint64 row, qint64 col);
    QString valueName() const;
    QString pairsCellText(int model, int64_t r, int64_t c) const;
    QString pairsCaption() const;
    std::vector<DataTable> pairsTables() const;
    void showSide(bool pairs);

    QComboBox* m_site;
    QComboBox* m_mode;
    QComboBox* m_method;
    QPushButton* m_pairsButton;
    QSplitter* m_split;
    QStackedWidget* m_side;
    PairsPlotsWidget* m_pairsPlots;
    PairsData m_pairs;
    QString m_pairsFile;
    bool m_pairsMode = false;
    PatchingData m_result;
};

} // namespace gwb::views

Q_DECLARE_METATYPE(gwb::views::PatchingInputs)
Q_DECLARE_METATYPE(gwb::views::PatchingData)
Q_DECLARE_METATYPE(gwb::views::PatchingTopK)
Q_DECLARE_METATYPE(gwb::views::PairsInputs)
Q_DECLARE_METATYPE(gwb::views::PairsData)
