#pragma once
// The Graph view's work, off the GUI thread: both models' attribution graphs on the current
// prompt (gwb/engine/graph_run.h: runGraphModels) from the transcoder sets the person opened, with
// progress and cancel, and the dashboards of the features the person hovers or pins (the engine's
// runFeatureDashboard over the set's training corpus). Two lanes of the process pool
// (work_lane.h): a dashboard never waits for a graph. Models from the process store.

#include "gui/features_job.h" // the metatype of a dashboard
#include "runs/graph_adapter.h"
#include "gui/work_lane.h"

#include "gwb/views/graph_view.h"
#include "gwb/views/view_data.h"

#include <QObject>

#include <atomic>
#include <functional>
#include <optional>

namespace gwb::app {

class GraphRunner : public QObject {
    Q_OBJECT
public:
    explicit GraphRunner(QObject* parent = nullptr);
    ~GraphRunner() override;
    void run(const GraphContext& context);
    void cancel() { m_cancel = true; }
    bool busy() const { return m_lane.busy() || m_dashboards.busy(); }
    /// computeGraphDashboard on the dashboards' lane; dashboardReady when done.
    void dashboard(int model, int layer, int64_t feature, const QString& folder, const GraphContext& context);

Q_SIGNALS:
    void progress(double fraction);
    /// Null when cancelled.
    void finished(const gwb::views::GraphPairPtr& graphs);
    void dashboardReady(int model, int layer, const gwb::engine::FeatureDashboardRun& dashboard);

private:
    ModelCache m_cache = ModelCache::process();
    std::atomic<bool> m_cancel{false};
    WorkLane m_dashboards;
    WorkLane m_lane; ///< last members: destroyed first, they wait for their running jobs
};

/// Connects the Graph view to a runner: its Transcoders… buttons ask `chooseFolder(model)` for a
/// folder, Run computes both graphs on the current prompt, Cancel stops, a hovered or pinned
/// feature gets its dashboard. Returns the runner (owned by the view).
/// Save JSON asks `chooseJsonPath()` for a file and writes the graphs there (the status line says
/// where, or why not).
GraphRunner* wireGraph(gwb::views::GraphView* view, std::function<GraphContext()> context,
                       std::function<QString(int)> chooseFolder, std::function<QString()> chooseJsonPath = {});

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::views::GraphPairPtr)
