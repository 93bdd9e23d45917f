#pragma once
// Corpus figure: one quantity of a statistics file (gwb stats) as distributions per layer (box or
// violin per layer, with the mean and its 95% normal interval), the Grassmann model and the
// Transformer side by side, and the quantity's mean against position in the window.

#include "gwb/views/chart_data.h"
#include "gwb/views/distribution_paint.h"
#include "gwb/views/figure.h"

#include <utility>

namespace gwb::views {

class CorpusFigure final : public Figure {
public:
    QString id() const override { return view_id::kCorpus; }
    QString title() const override { return QStringLiteral("Corpus"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    double aspect(double widthInches) const override { return widthInches < 5 ? 1.5 : 0.5; }
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The quantities the figure offers for a file: "surprisal", "gate_mean", ... for quantities
    /// "model.X" / "baseline.X" (both models side by side), and whole names ("compare.X") for the rest.
    static QStringList quantityKeys(const gwb::engine::CorpusStats& stats);
    /// The key for a name given by a user: a key itself or a full quantity name ("model.surprisal");
    /// "" when the file has no such quantity.
    static QString keyFor(const gwb::engine::CorpusStats& stats, const QString& name);

    /// The key chosen ("" = the default: surprisal when present).
    QString quantity() const { return m_quantity; }
    /// A new key starts with all groups and all layers pooled.
    void setQuantity(const QString& key);
    /// The key drawn: the chosen one when the file has it, else the default ("" without quantities).
    QString resolvedQuantity() const;
    /// Index into the trailing group axes (head, offset, channel, ...) or -1 = all pooled.
    int group() const { return m_group; }
    void setGroup(int group) { m_group = group; }
    bool violin() const { return m_violin; }
    void setViolin(bool violin) { m_violin = violin; }
    /// Index along the first axis (layer) for the position curve, or -1 = all layers pooled.
    int curveIndex() const { return m_curve; }
    void setCurveIndex(int index) { m_curve = index; }

    /// What the distribution and position charts show for the current settings.
    DistributionChartData distributionChart() const;
    ChartData positionChart() const;
    /// The header line (file, windows, tokens, shard, files, skipped files).
    QString headerText() const;
    /// The quantity and its definitions with how the boxes are read (rich text); "" without content.
    QString definitionText() const;

    /// A choice of a control: its text and value.
    template <class T> using Choice = std::pair<QString, T>;
    /// The file's quantities: "key (Grassmann, Transformer)" and the key.
    std::vector<Choice<QString>> quantityChoices() const;
    /// The choices for the resolved quantity: its trailing axes (group) and its first axis (curve).
    struct Controls {
        QString groupLabel;              ///< the trailing axes ("head", "offset × angle"), else "Group"
        std::vector<Choice<int>> groups; ///< "all pooled" (-1), then each trailing group
        bool groupsSelectable = false;   ///< the quantity has trailing axes
        std::vector<Choice<int>> curves; ///< "all layers pooled" (-1), then each leading index
    };
    Controls controls() const;

private:
    struct Part {
        QString role;     ///< "model", "baseline" or "" (a comparison of both)
        std::string name; ///< full quantity name in the file
    };
    std::vector<Part> parts() const;
    QStringList definitions() const;
    DistributionChartData makeDistributionChart() const;
    ChartData makePositionChart() const;
    /// Makes both charts again when the data or the settings changed since they were made.
    void updateCharts() const;
    void dataChanged() override { m_chartsKey.clear(); }

    QString m_quantity; ///< key; "" = the default (surprisal when present)
    int m_group = -1;
    bool m_violin = false;
    int m_curve = -1;
    mutable QString m_chartsKey; ///< data + settings the charts below were made for
    mutable DistributionChartData m_distribution;
    mutable ChartData m_position;
};

} // namespace gwb::views
