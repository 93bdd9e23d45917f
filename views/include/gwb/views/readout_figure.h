#pragma once
// Read-out figure (workbench-spec.md "Read-out planes"): for the selected Grassmann layer, every
// channel's read-out matrix A_c (row c of W_plu as an antisymmetric r x r matrix) ranked by its
// planarity or Plücker residual, the selected channel's singular-value pairs, and for the selected
// token the channels with the largest |z_t^T A_c y_t| with the principal angles between the token
// plane span(z_t, y_t) and each channel's top plane; the top planes on the subspace sphere next to
// the token's pair planes.

#include "gwb/views/chart_data.h"
#include "gwb/views/figure.h"
#include "gwb/views/sphere_paint.h"

namespace gwb::views {

class ReadoutFigure final : public Figure {
public:
    enum class Rank { Planarity, Residual };
    static constexpr int kTopChannels = 8;
    /// One of the selected token's top channels (NaN = undefined there).
    struct ChannelRow {
        int channel = 0;
        float contribution = 0; ///< z_t^T A_c y_t
        float planarity = 0;
        float residual = 0;
        float theta1 = 0; ///< principal angles (rad) between span(z_t, y_t) and the channel's top plane
        float theta2 = 0;
    };

    QString id() const override { return view_id::kReadout; }
    QString title() const override { return QStringLiteral("Read-out planes"); }
    /// The colormap, "rank" and, once a channel was chosen (pinned), "channel".
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    /// One column stacks four panels, the charts as tall as they need to read, the sphere square-ish.
    double aspect(double widthInches) const override { return widthInches < 5 ? 2.7 : 0.85; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    unsigned analysisParts() const override { return gwb::engine::kAnalysisCore | gwb::engine::kAnalysisReadout; }
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// Channel whose spectrum is shown: it follows the token's top channel in the selected layer
    /// (whenever token or layer change) until a channel is pinned; kept within the layer's channels.
    int channel() const;
    /// Shows channel c (until the token or layer change, unless pinned).
    void setChannel(int c);
    /// A pinned channel stays when the token or layer change (the user chose it).
    bool channelPinned() const { return m_pinned; }
    void setChannelPinned(bool pinned) { m_pinned = pinned; }
    /// Channels of the selected layer (0 without its read-out).
    int channelCount() const;
    /// The model has no read-out planes (aggregation per_offset_mlp: no linear W_plu).
    bool readoutUndefined() const;
    Rank rank() const { return m_rank; }
    void setRank(Rank r) { m_rank = r; }
    /// Channels in ranked order (ascending planarity or descending residual: least planar first).
    std::vector<int> rankedChannels() const;
    /// The selected token's top channels by |contribution| (empty without a valid offset).
    std::vector<int> topChannels() const;
    /// The top channels' numbers, in topChannels() order.
    std::vector<ChannelRow> topChannelRows() const;
    ChartData rankedChart() const;
    ChartData spectrumChart() const;
    /// The token's pair planes and the top planes of its three top channels on the sphere.
    SphereData spherePicture() const;
    /// What the charts say instead without content: one line (the whole reason is the sphere's).
    QString chartPlaceholder() const;
    SphereRotation rotation() const { return m_rotation; }
    /// The view's rotation of the sphere (pitch kept within [-pi/2, pi/2]).
    void setRotation(const SphereRotation& r) { m_rotation = clampedRotation(r); }

private:
    const gwb::engine::GrassmannLayerAnalysis* layerAnalysis() const;
    /// A new token or layer: their top channel unless pinned; then the channel kept in range.
    void followSelection() const;
    QStringList topChannelLines() const;

    Rank m_rank = Rank::Planarity;
    mutable int m_channel = 0;
    bool m_pinned = false;
    mutable int m_lastToken = -1; ///< the selection the channel last followed
    mutable int m_lastLayer = -1;
    SphereRotation m_rotation;
};

} // namespace gwb::views
