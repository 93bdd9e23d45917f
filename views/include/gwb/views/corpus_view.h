#pragma once
// Corpus view: one quantity of a statistics file (gwb stats) as distributions per layer (box or
// violin per layer, with the mean and its 95% normal interval), the Grassmann model and the
// Transformer side by side, and the quantity's mean against position in the window. A header
// says what the file covers (windows covered/planned, tokens, shard, files, skipped files). The
// picture is CorpusFigure's (corpus_figure.h).

#include "gwb/views/corpus_figure.h"
#include "gwb/views/view.h"

class QComboBox;
class QLabel;
class QSplitter;

namespace gwb::views {

class ChartWidget;
class DistributionWidget;

class CorpusView : public View {
    Q_OBJECT
public:
    explicit CorpusView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kCorpus; }
    QString title() const override { return QStringLiteral("Corpus"); }
    void setSettings(const QJsonObject& settings) override;

    /// The quantities the view offers for a file (CorpusFigure::quantityKeys).
    static QStringList quantityKeys(const gwb::engine::CorpusStats& stats) { return CorpusFigure::quantityKeys(stats); }
    /// The key for a name given by a user (CorpusFigure::keyFor); "" when the file has no such quantity.
    static QString keyFor(const gwb::engine::CorpusStats& stats, const QString& name) {
        return CorpusFigure::keyFor(stats, name);
    }

    QString quantity() const { return fig().quantity(); }
    void setQuantity(const QString& key);
    /// Index into the trailing group axes (head, offset, channel, ...) or -1 = all pooled.
    int group() const { return fig().group(); }
    void setGroup(int group);
    bool violin() const { return fig().violin(); }
    void setViolin(bool violin);
    /// Index along the first axis (layer) for the position curve, or -1 = all layers pooled.
    int curveIndex() const { return fig().curveIndex(); }
    void setCurveIndex(int index);

    /// What the distribution and position charts show for the current settings.
    DistributionChartData distributionChart() const { return fig().distributionChart(); }
    ChartData positionChart() const { return fig().positionChart(); }
    /// The header line (file, windows, tokens, shard, files, skipped files).
    QString headerText() const { return fig().headerText(); }

protected:
    void resizeEvent(QResizeEvent* event) override;
    void refresh() override;

private:
    CorpusFigure& fig() const { return figureAs<CorpusFigure>(); }
    void rebuildCombos();

    QLabel* m_header;
    QLabel* m_definition;
    QComboBox* m_quantityCombo;
    QLabel* m_groupLabel;
    QComboBox* m_groupCombo;
    QComboBox* m_shapeCombo;
    QComboBox* m_curveCombo;
    DistributionWidget* m_dist;
    ChartWidget* m_curveChart;
    QSplitter* m_split;  ///< distributions and the position curve: side by side when the view is wide
    QString m_combosFor; ///< file + quantity the group/curve combos were built for
    const gwb::engine::CorpusStats* m_quantitiesFor = nullptr;
};

} // namespace gwb::views
