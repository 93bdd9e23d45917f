#pragma once
// Read-out view (workbench-spec.md "Read-out planes"): for the selected Grassmann layer, every
// channel's read-out matrix A_c ranked by its planarity or Plücker residual, the selected channel's
// singular-value pairs, the selected token's top channels as a table (a click shows one's
// spectrum) and their top planes on the subspace sphere. The picture is ReadoutFigure's
// (readout_figure.h).

#include "gwb/views/readout_figure.h"
#include "gwb/views/sphere_widget.h"
#include "gwb/views/view.h"

class QComboBox;
class QSpinBox;
class QTableWidget;

namespace gwb::views {

class ChartWidget;

class ReadoutView : public View {
    Q_OBJECT
public:
    using Rank = ReadoutFigure::Rank;
    static constexpr int kTopChannels = ReadoutFigure::kTopChannels;

    explicit ReadoutView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kReadout; }
    QString title() const override { return QStringLiteral("Read-out planes"); }
    void setSettings(const QJsonObject& settings) override;

    /// Channel whose spectrum is shown (follows the token's top channel in the selected layer until
    /// the user picks one).
    int channel() const { return synced().channel(); }
    /// The model has no read-out planes (aggregation per_offset_mlp: no linear W_plu).
    bool readoutUndefined() const { return synced().readoutUndefined(); }
    void setChannel(int c);
    Rank rank() const { return fig().rank(); }
    void setRank(Rank r);
    /// Channels in ranked order (ascending planarity or descending residual: least planar first).
    std::vector<int> rankedChannels() const { return synced().rankedChannels(); }
    /// The selected token's top channels by |contribution| (empty without a valid offset).
    std::vector<int> topChannels() const { return synced().topChannels(); }
    QTableWidget* table() const { return m_table; }
    SphereWidget* sphere() const { return m_sphere; }

protected:
    void refresh() override;

private:
    ReadoutFigure& fig() const { return figureAs<ReadoutFigure>(); }
    /// The figure with the view's selection (the channel follows it).
    const ReadoutFigure& synced() const { return static_cast<const ReadoutFigure&>(figure()); }
    /// The user chose channel c (spin box, table): it stays when the token changes.
    void pinChannel(int c);

    QComboBox* m_rankCombo;
    QSpinBox* m_channelSpin;
    ChartWidget* m_ranked;
    ChartWidget* m_spectrum;
    SphereWidget* m_sphere;
    QTableWidget* m_table;
};

} // namespace gwb::views
