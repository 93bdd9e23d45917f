#pragma once
// Patching figure, both models: causal tests by activation patching (a corrupted prompt run with one
// site's value taken from the clean run) or by zero / mean ablation, swept over layers x positions
// (x offsets for Grassmann, x heads for the Transformer), both models side by side on one diverging
// scale centred at 0; or, over a pairs file, each cell's mean over the pairs with a clicked cell's
// distribution and the estimate against the exact change. It keeps the Patching view's fields and
// the results the application computed (setResult, setPairsResult), and gives what the view's
// widgets show (the heatmaps, the hover and status lines), so screen and figure are one computation.

#include "gwb/engine/causal_results.h"
#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"
#include "gwb/views/patching_pairs_paint.h"

#include <cstdint>

namespace gwb::views {

// The results a Patching figure draws are the engine's plain data (gwb/engine/causal_results.h).
using gwb::engine::PairsEstimates;
using gwb::engine::PairsGrid;
using gwb::engine::PatchingData;
using gwb::engine::PatchingGrid;
using gwb::engine::PatchingInputs;
using gwb::engine::patchingScale;
using gwb::engine::PatchingTopK;

class PatchingFigure final : public Figure {
public:
    PatchingFigure();
    QString id() const override { return view_id::kPatching; }
    QString title() const override { return QStringLiteral("Patching"); }
    /// The fields ("corrupt", "answer", "wrong", "site", "mode"), "pairs_method" and "pairs_file".
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The fields (clean = the data's prompt).
    PatchingInputs inputs() const;
    /// A site or mode the view does not offer keeps the one there was (as the view's lists do).
    void setInputs(const PatchingInputs& inputs);
    /// Checks what can be checked without a model; "" when the request may go.
    static QString checkInputs(const PatchingInputs& inputs);
    /// "" for a site the view offers, else the message naming them.
    static QString siteProblem(const std::string& site);
    /// "exact" or "attribution", for pairs files (another word is ignored).
    QString pairsMethod() const { return m_pairsMethod; }
    void setPairsMethod(const QString& method);
    /// The pairs file last run or restored from a session ("" = none).
    QString pairsFile() const { return m_pairsFile; }
    void setPairsFile(const QString& file) { m_pairsFile = file; }

    /// A computed sweep (leaves pairs mode); one with an error (bad input) changes nothing.
    void setResult(const PatchingData& result);
    const PatchingData& result() const { return m_result; }
    /// A pairs file's result: the heatmaps show each cell's mean over the pairs, and the cell shown
    /// below starts at the largest |mean| whose pairs differ. One without a grid changes nothing.
    void setPairsResult(const PairsData& result);
    const PairsData& pairsResult() const { return m_pairs; }
    /// The heatmaps show a pairs file's means (else a single pair's sweep).
    bool pairsMode() const { return m_pairsMode; }
    /// The cell of model 0/1 whose distribution over the pairs is drawn (model -1: the default one).
    void setPairsCell(int model, int64_t r, int64_t c);
    int pairsCellModel() const { return m_cellModel; }
    int64_t pairsCellRow() const { return m_cellRow; }
    int64_t pairsCellCol() const { return m_cellCol; }

    /// The heatmap of model 0 (Grassmann) / 1 (Transformer): the sweep or the pairs' means on the
    /// shared diverging scale (the same source while the result stays), or why there is none.
    HeatmapPanel panel(int model) const { return m_panels[model == 0 ? 0 : 1]; }
    /// The quantity the cells show (the colour bar's label).
    QString valueName() const;
    /// Hover text of cell (r, c) of model 0/1: raw and normalised values, "—" where undefined;
    /// `why` gets the tooltip for an undefined value.
    QString cellText(int model, int64_t r, int64_t c, QString* why = nullptr) const;
    /// Why cell (r, c) of model 0/1 is undefined, for the heatmap's hover readout.
    QString undefinedReason(int model, int64_t r, int64_t c) const;
    /// The status line: the metric of each model, or what the pairs file gave.
    QString statusText() const;

private:
    const PatchingGrid& grid(int model) const { return model == 0 ? m_result.grassmann : m_result.transformer; }
    void buildPanels();
    QString panelTitle(int model) const;
    // The pairs-file part (patching_figure_pairs.cpp).
    HeatmapPanel pairsPanel(int model) const;
    /// What a pairs grid's cells show ("ratio of means", "mean raw effect (logits)", ...).
    static QString shownLabel(const PairsGrid& grid);
    QString pairsCellText(int model, int64_t r, int64_t c) const;
    QString pairsCaption() const;
    std::vector<DataTable> pairsTables() const;
    QString pairsStatusText() const;
    void drawPairs(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const;

    PatchingInputs m_inputs;
    QString m_pairsMethod = QStringLiteral("exact");
    QString m_pairsFile;
    PatchingData m_result;
    PairsData m_pairs;
    bool m_pairsMode = false;
    int m_cellModel = -1;
    int64_t m_cellRow = -1, m_cellCol = -1;
    HeatmapPanel m_panels[2]; ///< built with each result: the widgets keep their zoom while it stays
};

} // namespace gwb::views
