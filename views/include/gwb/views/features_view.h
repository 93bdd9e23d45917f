#pragma once
// Features view: a sparse dictionary (gwb features train) read at the selected token. It lists the
// features most active there; clicking one shows its dashboard (top-activating contexts from a
// corpus with the activation on each token, its activation histogram, the pieces its decoder
// direction promotes and suppresses, the share of that direction in the reading subspace of the
// Grassmann layer that reads it). A crosscoder of the two models adds the histogram of relative
// decoder norms, and the list can be narrowed to the features of one model or the shared ones.
// The view never runs a model: the application computes the activations and dashboards off the
// GUI thread (FeatureData, setDashboard) and colours the token strip by the chosen feature. The
// figure and what the widgets show are FeaturesFigure's (features_figure.h).

#include "gwb/views/features_figure.h"
#include "gwb/views/view.h"

#include <memory>

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace gwb::views {

class ChartWidget;

class FeaturesView : public View {
    Q_OBJECT
public:
    explicit FeaturesView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kFeatures; }
    QString title() const override { return QStringLiteral("Features"); }
    void setSettings(const QJsonObject& settings) override;

    /// The dictionary and its activations on the current trace (null = none loaded).
    void setFeatures(FeatureDataPtr features);
    const FeatureData* features() const { return fig().features(); }
    /// A computed dashboard; kept when it is for the chosen feature.
    void setDashboard(const FeatureDashboard& dashboard);
    const FeatureDashboard& dashboard() const { return fig().dashboard(); }
    /// The chosen feature (-1 = none); choosing asks for its dashboard (dashboardRequested).
    int64_t chosenFeature() const { return fig().chosenFeature(); }
    void chooseFeature(int64_t feature);
    /// Crosscoders: "all", "first", "shared", "second".
    QString kindFilter() const { return fig().kindFilter(); }
    void setKindFilter(const QString& kind);
    /// The rows the list shows at the selected token: (feature, activation), most active first.
    std::vector<std::pair<int64_t, float>> listedFeatures() const { return synced().listedFeatures(); }
    /// The relative-norm histogram of a crosscoder: 10 bins over [0, 1], stacked by kind (first
    /// model's, shared, second's), ticks on the bin edges, a tooltip per bar.
    /// The legend says "first only" / "second only", or the models' names (the figure's).
    ChartData relativeNormChart(bool modelNamesInLegend = false) const {
        return fig().relativeNormChart(modelNamesInLegend);
    }
    /// The relative-norm histogram (clicking a bar lists the features of its kind).
    ChartWidget* relativeNormWidget() const { return m_relative; }
    ChartData activationChart() const { return fig().activationChart(); }
    /// The figure's panels, lettered (a) active features, (b) the chosen feature's histogram, (c) a
    /// crosscoder's relative norms; the caption names them by letter.
    std::vector<ChartData> figurePanels() const { return synced().figurePanels(); }
    /// Asks for the chosen feature's dashboard again (after the corpus changed).
    void refreshDashboard();

Q_SIGNALS:
    void openDictionaryRequested();
    /// The "Dashboard corpus…" button: the application asks for text files to draw contexts from.
    void corpusRequested();
    void dashboardRequested(qint64 feature);
    /// The chosen feature changed (-1 = none): the application colours the token strip by it.
    void featureChosen(qint64 feature);

protected:
    void refresh() override;

private:
    /// The figure, for its setters and the answers that do not depend on the selection.
    FeaturesFigure& fig() const { return figureAs<FeaturesFigure>(); }
    /// The figure with the view's selection (what depends on the token).
    const FeaturesFigure& synced() const { return static_cast<const FeaturesFigure&>(figure()); }
    QLabel* m_header;
    QLabel* m_message = nullptr; ///< an error of the current data, wrapped on its own row (hidden when none)
    QComboBox* m_kind;
    QPushButton* m_open;
    QPushButton* m_corpus;
    QTableWidget* m_list;
    ChartWidget* m_relative;
    QTextBrowser* m_contexts;
    ChartWidget* m_histogram;
};

} // namespace gwb::views
