#pragma once
// Saliency figure, both models: gradient x input saliency of log p(target | x_0..x_t) over the past
// tokens of the selected token, for a target that is the actual next token (default) or a typed
// vocabulary piece. Token chips coloured by the share |s_j| / sum |s|, bars of the shares next to
// the Grassmann influence row and the mean attention row of the selected layer, and the Compare
// view's JS / top-1 metrics. The figure draws a result it is given (setSaliency); the application
// computes it.

#include "gwb/views/chart_data.h"
#include "gwb/views/figure.h"

#include "gwb/engine/saliency.h"

namespace gwb::views {

/// The engine's result (gwb/engine/saliency.h), which the application computes.
using gwb::engine::SaliencyResult;
using gwb::engine::saliencyShares;

class SaliencyFigure final : public Figure {
public:
    QString id() const override { return view_id::kSaliency; }
    QString title() const override { return QStringLiteral("Saliency"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.45 : 0.7; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The target piece ("" = actual next token; text of only spaces reads as "").
    QString target() const;
    void setTarget(const QString& piece) { m_target = piece; }
    /// Takes a computed result for the current data; false (ignored) unless it is for the selected
    /// token and the target.
    bool setSaliency(const SaliencyResult& result);
    /// Forgets the result (a new one was asked for).
    void clearSaliency() { m_result = SaliencyResult{}; }
    const SaliencyResult& saliency() const { return m_result; }
    /// The result belongs to the selected token, the target and the data, and holds something.
    bool resultCurrent() const;

    /// Rows compared with the saliency: names and JS / top-1 (NaN JS = undefined).
    struct Comparison {
        QString name;
        double js = 0;
        bool top1 = false;
    };
    std::vector<Comparison> comparisons() const;
    /// The bars: saliency shares of both models, influence and mean attention per past token.
    ChartData barChart() const;
    /// The chip rows (one per model) of the most recent past tokens that fit into rect.
    void paintChips(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const;

private:
    std::vector<float> attentionMean(int64_t t) const;
    std::vector<float> grassmannInfluence(int64_t t) const;

    QString m_target;
    SaliencyResult m_result;
    const void* m_resultData = nullptr; ///< the primary trace the result was computed for
};

} // namespace gwb::views
