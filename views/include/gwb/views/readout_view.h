#pragma once
// Read-out view (workbench-spec.md "Read-out planes"): for the selected Grassmann layer, every
// channel's read-out matrix A_c (row c of W_plu as an antisymmetric r x r matrix) ranked by its
// planarity or Plücker residual, the selected channel's singular-value pairs, and for the selected
// token the channels with the largest |z_t^T A_c y_t| with the principal angles between the token
// plane span(z_t, y_t) and each channel's top plane; the top planes on the subspace sphere next to
// the token's pair planes.

#include "gwb/views/sphere_widget.h"
#include "gwb/views/view.h"

class QComboBox;
class QSpinBox;
class QTableWidget;

namespace gwb::views {

class ChartWidget;
struct ChartData;

class ReadoutView : public View {
    Q_OBJECT
public:
    enum class Rank { Planarity, Residual };
    static constexpr int kTopChannels = 8;

    explicit ReadoutView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("readout"); }
    QString title() const override { return QStringLiteral("Read-out planes"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    unsigned analysisParts() const override { return gwb::engine::kAnalysisCore | gwb::engine::kAnalysisReadout; }
    /// One column stacks four panels, the charts as tall as they need to read, the sphere square-ish.
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 2.7 : 0.85; }

    /// Channel whose spectrum is shown (follows the token's top channel in the selected layer until
    /// the user picks one).
    int channel() const { return m_channel; }
    /// The model has no read-out planes (aggregation per_offset_mlp: no linear W_plu).
    bool readoutUndefined() const;
    void setChannel(int c);
    Rank rank() const { return m_rank; }
    void setRank(Rank r);
    /// Channels in ranked order (ascending planarity or descending residual: least planar first).
    std::vector<int> rankedChannels() const;
    /// The selected token's top channels by |contribution| (empty without a valid offset).
    std::vector<int> topChannels() const;
    QTableWidget* table() const { return m_table; }
    SphereWidget* sphere() const { return m_sphere; }

protected:
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    const gwb::engine::GrassmannLayerAnalysis* layerAnalysis() const;
    ChartData rankedChart() const;
    ChartData spectrumChart() const;
    SphereData spherePicture() const;
    QStringList topChannelLines() const;

    QComboBox* m_rankCombo;
    QSpinBox* m_channelSpin;
    ChartWidget* m_ranked;
    ChartWidget* m_spectrum;
    SphereWidget* m_sphere;
    QTableWidget* m_table;
    Rank m_rank = Rank::Planarity;
    int m_channel = 0;
    bool m_channelPinned = false; ///< the user chose a channel: keep it when the token changes
    int m_lastToken = -1;
    int m_lastLayer = -1;
};

} // namespace gwb::views
