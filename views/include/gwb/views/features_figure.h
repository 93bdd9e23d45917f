#pragma once
// Features figure: a sparse dictionary (gwb features train) read at the selected token: (a) the
// features most active there, (b) the chosen feature's activation histogram from its dashboard and
// (c) a crosscoder's relative decoder norms. It also gives what the Features view's widgets show
// (header, list, dashboard text, charts), so that screen and figure are one computation.

#include "gwb/views/chart_data.h"
#include "gwb/views/figure.h"

#include "gwb/engine/feature_results.h"

#include <QStringList>

#include <cstdint>
#include <utility>
#include <vector>

namespace gwb::views {

// What the figure draws is the engine's plain data (gwb/engine/feature_runs.h): a dictionary's
// activations on the run's traces, and one feature's dashboard with the corpus it was drawn from.
using FeatureDashboard = gwb::engine::FeatureDashboardRun;
using FeatureData = gwb::engine::FeatureData;
using FeatureDataPtr = gwb::engine::FeatureDataPtr;

class FeaturesFigure final : public Figure {
public:
    QString id() const override { return view_id::kFeatures; }
    QString title() const override { return QStringLiteral("Features"); }
    QJsonObject settings() const override;
    void setSettings(const QJsonObject& settings) override;
    /// One column stacks the panels (figurePanels()), each tall enough for its ticks to read.
    double aspect(double widthInches) const override;
    QString caption() const override;
    std::vector<DataTable> dataTables() const override;
    bool hasContent() const override;
    QString missingDataMessage() const override;
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override;

    /// The dictionary and its activations on the current trace (null = none loaded). Another
    /// dictionary (another folder) drops the chosen feature and its dashboard: returns true then.
    bool setFeatures(FeatureDataPtr features);
    const FeatureData* features() const { return m_features.get(); }
    /// A computed dashboard; kept (true) when it is for the chosen feature.
    bool setDashboard(const FeatureDashboard& dashboard);
    const FeatureDashboard& dashboard() const { return m_dashboard; }
    /// The chosen feature (-1 = none; one outside the dictionary reads as -1). Returns whether it
    /// changed (its dashboard is dropped then).
    int64_t chosenFeature() const { return m_chosen; }
    bool chooseFeature(int64_t feature);
    /// The kind filters in the order the view's "Show" box lists them: "all", "first", "shared",
    /// "second" (a crosscoder's features by relative decoder norm).
    static QStringList kindFilters();
    QString kindFilter() const { return m_kind; }
    /// One of kindFilters(); other names are ignored.
    void setKindFilter(const QString& kind);

    /// The rows the list shows at the selected token: (feature, activation), most active first.
    std::vector<std::pair<int64_t, float>> listedFeatures() const;
    /// The relative-norm histogram of a crosscoder: 10 bins over [0, 1], stacked by kind (first
    /// model's, shared, second's), ticks on the bin edges, a tooltip per bar.
    /// The legend says "first only" / "second only", or the models' names (the figure's).
    ChartData relativeNormChart(bool modelNamesInLegend = false) const;
    /// The chosen feature's activation histogram (empty until its dashboard arrived).
    ChartData activationChart() const;
    /// The figure's panels, lettered (a) active features, (b) the chosen feature's histogram, (c) a
    /// crosscoder's relative norms; the caption names them by letter.
    std::vector<ChartData> figurePanels() const;

    /// The view's header: the dictionary (or crosscoder), its site(s), size and architecture; the
    /// missing-data message when none is loaded.
    QString headerText() const;
    /// The list's column titles: feature, activation at the token and, for a crosscoder, the
    /// relative norm.
    QStringList listHeader() const;
    /// The list's cells, one row per listedFeatures() entry, as many cells as listHeader().
    std::vector<QStringList> listCells() const;
    /// The dashboard pane's rich text: the chosen feature's dashboard, that it is computed, or why
    /// there is nothing to show ("" when no dictionary is loaded).
    QString dashboardPaneHtml() const;
    /// What the histogram pane says while activationChart() is empty.
    QString histogramPlaceholder() const;

private:
    /// The chosen feature's dashboard as rich text, or that it is computed or none is chosen.
    QString dashboardHtml() const;
    FeatureDataPtr m_features;
    FeatureDashboard m_dashboard;
    int64_t m_chosen = -1;
    QString m_kind = QStringLiteral("all");
};

} // namespace gwb::views
