#pragma once
// Corpus view: one quantity of a statistics file (gwb stats) as distributions per layer (box or
// violin per layer, with the mean and its 95% normal interval), the Grassmann model and the
// Transformer side by side, and the quantity's mean against position in the window. A header
// says what the file covers (windows covered/planned, tokens, shard, files, skipped files).

#include "gwb/views/chart_widget.h"
#include "gwb/views/distribution_chart.h"
#include "gwb/views/view.h"

class QComboBox;
class QLabel;

class QSplitter;

namespace gwb::views {

class CorpusView : public View {
    Q_OBJECT
public:
    explicit CorpusView(QWidget* parent = nullptr);
    QString viewId() const override { return QStringLiteral("corpus"); }
    QString title() const override { return QStringLiteral("Corpus"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    double figureAspect(double widthInches) const override { return widthInches < 5 ? 1.5 : 0.5; }

    /// The quantities the view offers for a file: "surprisal", "gate_mean", ... for quantities
    /// "model.X" / "baseline.X" (both models side by side), and whole names ("compare.X") for the rest.
    static QStringList quantityKeys(const gwb::engine::CorpusStats& stats);
    /// The key for a name given by a user: a key itself or a full quantity name ("model.surprisal");
    /// "" when the file has no such quantity.
    static QString keyFor(const gwb::engine::CorpusStats& stats, const QString& name);

    QString quantity() const { return m_quantity; }
    void setQuantity(const QString& key);
    /// Index into the trailing group axes (head, offset, channel, ...) or -1 = all pooled.
    int group() const { return m_group; }
    void setGroup(int group);
    bool violin() const { return m_violin; }
    void setViolin(bool violin);
    /// Index along the first axis (layer) for the position curve, or -1 = all layers pooled.
    int curveIndex() const { return m_curve; }
    void setCurveIndex(int index);

    /// What the distribution and position charts show for the current settings.
    DistributionChartData distributionChart() const;
    ChartData positionChart() const;
    /// The header line (file, windows, tokens, shard, files, skipped files).
    QString headerText() const;

protected:
    void resizeEvent(QResizeEvent* event) override;
    void refresh() override;
    void drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;
    QString missingDataMessage() const override;

private:
    struct Part {
        QString role;     ///< "model", "baseline" or "" (a comparison of both)
        std::string name; ///< full quantity name in the file
    };
    std::vector<Part> parts() const;
    QString resolvedQuantity() const;
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
    QSplitter* m_split; ///< distributions and the position curve: side by side when the view is wide
    QString m_quantity; ///< key; "" = the default (surprisal when present)
    int m_group = -1;
    bool m_violin = false;
    int m_curve = -1;
    QString m_combosFor; ///< file + quantity the group/curve combos were built for
    const gwb::engine::CorpusStats* m_quantitiesFor = nullptr;
};

} // namespace gwb::views
