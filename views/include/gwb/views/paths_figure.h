#pragma once
// Paths figure, both models: path patching (engine pathPatching, gwb paths). Rows are the senders
// (offset.l.D, mixer.l, gate.l, ffn.l / head.l.H, mixer.l, ffn.l, in layer order), columns the
// receivers (logits: the direct effect; resid.M: the effect through block input h^M). Cells show
// the normalised effect of the metric logit[answer] - logit[wrong], both models side by side on
// one diverging scale. It keeps the Paths view's fields and the result the application computed
// (setResult), and gives what the view's widgets show (the heatmaps, the hover and status lines).

#include "gwb/engine/causal_results.h"
#include "gwb/views/figure.h"
#include "gwb/views/heatmap_panel.h"

#include <cstdint>

namespace gwb::views {

// The results a Paths figure draws are the engine's plain data (gwb/engine/causal_results.h).
using gwb::engine::PathsData;
using gwb::engine::pathsFromPatchingCell;
using gwb::engine::PathsGrid;
using gwb::engine::PathsInputs;
using gwb::engine::PathsPairsData;
using gwb::engine::PathsPairsInputs;
using gwb::engine::pathsScale;

class PathsFigure final : public Figure {
public:
    PathsFigure();
    QString id() const override { return view_id::kPaths; }
    QString title() const override { return QStringLiteral("Paths"); }
    /// The fields: "corrupt", "answer", "wrong", "senders", "receivers", "position".
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    /// Tall enough that every sender row has its label, at either width.
    double aspect(double widthInches) const override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The senders and receivers the view offers ("all", ...).
    static QStringList senderItems();
    static QStringList receiverItems();
    /// The fields (clean = the data's prompt).
    PathsInputs inputs() const;
    /// Senders or receivers not offered keep the ones there were; the position is clamped to
    /// -1 (every token) .. 2^20 (as the view's fields do).
    void setInputs(const PathsInputs& inputs);
    /// Checks what can be checked without a model; "" when the request may go.
    static QString checkInputs(const PathsInputs& inputs);

    /// A computed result; one with an error (bad input) changes nothing. Leaves pairs mode.
    void setResult(const PathsData& result);
    const PathsData& result() const { return m_result; }
    /// A pairs file's run (paths_figure_pairs.cpp): the matrices show each cell's estimate over
    /// the pairs (the ratio of means where the pairs have something to explain, else the mean raw
    /// effect), Holm's survivors dotted; the caption and status lead with the verdict. One without
    /// a grid changes nothing.
    void setPairsResult(const PathsPairsData& result);
    const PathsPairsData& pairsResult() const { return m_pairs; }
    bool pairsMode() const { return m_pairsMode; }
    /// The sender row outlined in both matrices where it exists ("" = none).
    void setMarkedSender(const QString& label) { m_marked = label; }
    QString markedSender() const { return m_marked; }

    /// The matrix of model 0 (Grassmann) / 1 (Transformer) on the shared diverging scale (the same
    /// source while the result stays) with the marked sender's row, or why there is none.
    HeatmapPanel panel(int model) const;
    /// Sender rows of the taller matrix (0 without a result).
    int64_t rows() const;
    /// The quantity the cells show (the colour bar's label).
    QString valueName() const;
    /// Hover text of cell (r, c) of model 0/1: the raw metric and the effect, "—" where undefined;
    /// `why` gets the reason for an undefined value.
    QString cellText(int model, int64_t r, int64_t c, QString* why = nullptr) const;
    /// Why cell (r, c) of model 0/1 is undefined, for the heatmap's hover readout.
    QString undefinedReason(int model, int64_t r, int64_t c) const;
    /// The status line: each model's metric on the clean and the corrupted prompt.
    QString statusText() const;

private:
    const PathsGrid& grid(int model) const { return model == 0 ? m_result.grassmann : m_result.transformer; }
    void buildPanels();
    QString pairsCaption() const;
    QString pairsStatusText() const;
    std::vector<DataTable> pairsTables() const;

    PathsInputs m_inputs;
    PathsData m_result;
    PathsPairsData m_pairs;
    bool m_pairsMode = false;
    QString m_marked;
    HeatmapPanel m_panels[2]; ///< built with each result: the widgets keep their zoom while it stays
};

} // namespace gwb::views
