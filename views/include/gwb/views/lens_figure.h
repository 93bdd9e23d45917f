#pragma once
// Logit-lens figure, both models side by side (workbench-spec.md section 1 "Logit lens"): a
// lens-layer x token grid of each model's top-1 next-token prediction (text) coloured by its
// probability, the top-K list of the selected cell, and the rank of the actual next token per
// lens layer. Lens layer l < N is block l's input state, N the final state (final LN + tied head).
// With lenses beside it (setComparison: gwb figure --view lens --lens DIR, the view's Open lenses)
// it draws each model's logit, tuned and Jacobian lens grids (top-1 piece coloured by KL to the
// final layer) and the rank and KL charts per layer (lens_compare.cpp); with gwb lens eval's files
// (setEvalSummaries) the per-layer summary charts.

#include "gwb/views/chart_data.h"
#include "gwb/views/figure.h"
#include "gwb/views/lens_grid_paint.h"

#include "gwb/engine/lens_readout.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace gwb::views {

class LensFigure final : public Figure {
public:
    static constexpr int kWindow = 14; ///< tokens a figure shows around the selection, at most

    QString id() const override { return view_id::kLens; }
    QString title() const override { return QStringLiteral("Logit lens"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    /// One column: the grids, the top-K lists and the rank chart stacked, each readable.
    double aspect(double widthInches) const override;
    QString caption() const override;
    /// caption(); one column (under 5 in) says that each model's lenses are drawn at the selected
    /// token only, as columns, and that the wide figure and the data export have the window.
    QString captionAt(double widthPoints) const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// Lens layer of the top-K list (0..N; -1 or past N: N = final state).
    int lensLayer() const { return m_lensLayer; }
    void setLensLayer(int l) { m_lensLayer = l; }
    /// Grid data of one model, `window` tokens around the selected one (nullptr trace or no lens: empty).
    LensGridData gridData(const gwb::engine::TracePtr& trace, int window = kWindow) const;
    /// Why a model's grid is empty (no trace, its lens still computing, or none); "" when it has one.
    QString gridPlaceholder(bool grassmann) const;
    /// Rank chart of the actual next token per lens layer, both models.
    ChartData rankChart() const;
    /// Why the rank chart has no point ("" when it has some): the selected token is the last,
    /// which has no next token.
    QString rankPlaceholder() const;
    /// The selected cell's top-K: "piece probability", "← next" on the actual next token.
    QStringList topKLines(const gwb::engine::TracePtr& trace) const;
    /// The selected lens layer's label ("L2 in", "final") in the primary trace's lens; "" without one.
    QString lensLayerLabel() const;
    /// Lens rank (0 = top-1) of the actual next token at the selected lens layer and token: negative
    /// at the last token (no next token), none when the trace has no ranks there.
    std::optional<int32_t> nextRank(const gwb::engine::TracePtr& trace) const;
    /// Tokens a grid of this width shows (at most maxWindow, at least 3) so that every piece fits
    /// its cell whole (or in a font down to minScale of the size).
    int figureWindow(double gridWidth, const FigureStyle& style, int maxWindow = kWindow, double minScale = 1.0) const;
    /// Row label of lens layer l of N + 1: "L2 in" = the input state of block 2, N = "final".
    static QString layerLabel(int64_t l, int64_t N);

    // Lenses beside the logit lens.
    void setComparison(gwb::engine::LensComparisonPtr comparison) { m_comparison = std::move(comparison); }
    const gwb::engine::LensComparisonPtr& comparison() const { return m_comparison; }
    bool comparing() const { return m_comparison && !m_comparison->empty(); }
    /// Grid of one readout (rows s = 0..N, a window of `window` tokens around the selection): the
    /// top-1 piece coloured by KL(p_final || p_s), on the scale 0..readoutKlMax().
    LensGridData readoutGrid(const gwb::engine::LensReadout& readout, int window = kWindow) const;
    /// One model's lenses at the selected token, as the one-column figure draws them: a column per
    /// lens (logit, tuned, Jacobian, as drawn), rows s = 0..N, the top-1 piece coloured by KL.
    LensGridData selectedTokenGrid(bool grassmann) const;
    /// The KL colour scale's top: the largest KL of any readout at any token (at least 0.01 nats).
    float readoutKlMax() const;
    /// "Grassmann · tuned lens", with "(fitted on X: another model)" when it was: a panel title.
    static QString readoutTitle(const gwb::engine::LensReadout& readout);
    /// Rank (1 = top-1) of the actual next token after the selected token per lens layer, one series
    /// per model and lens; and the mean KL to the final layer over the prompt's tokens per layer.
    ChartData readoutRankChart() const;
    ChartData readoutKlChart() const;
    /// Tokens a readout grid of this width shows (at most maxWindow) with every piece whole.
    int readoutWindow(double gridWidth, const FigureStyle& style, int maxWindow = kWindow) const;

    /// gwb lens eval's files (one per model): per-layer KL, cross-entropy, top-1 agreement and rank.
    void setEvalSummaries(std::vector<gwb::engine::LensEvalPtr> evals) { m_evals = std::move(evals); }
    const std::vector<gwb::engine::LensEvalPtr>& evalSummaries() const { return m_evals; }
    /// The four summary charts (KL, cross-entropy, top-1 agreement, rank), one series per file and lens.
    std::vector<ChartData> evalCharts() const;

private:
    QString comparisonCaption(bool oneColumn = false) const;
    QString evalCaption() const;
    void drawComparison(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const;
    void drawEval(QPainter& p, const QRectF& rect, const FigureStyle& style) const;
    std::vector<DataTable> comparisonTables() const;
    int m_lensLayer = -1; ///< -1 = final
    gwb::engine::LensComparisonPtr m_comparison;
    std::vector<gwb::engine::LensEvalPtr> m_evals;
};

} // namespace gwb::views
