#pragma once
// Path patching for the window's Paths view (engine pathPatching): both models' senders x
// receivers matrices off the GUI thread with progress and Cancel, and a clicked cell's top next
// pieces (pathCellLogits). Also synchronous for `gwb figure --view paths`.

#include "runs/causal_adapter.h"
#include "gui/work_lane.h"

#include "gwb/views/paths_view.h"

#include <QObject>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace gwb::app {

/// Runs the view's requests one at a time in its lane of the process pool (work_lane.h).
class PathsRunner : public QObject {
    Q_OBJECT
public:
    explicit PathsRunner(QObject* parent = nullptr);
    ~PathsRunner() override;
    void request(const PathsJobRequest& request);
    /// Runs a pairs file through path patching on both models (computePathsPairs).
    void requestPairs(const PathsJobRequest& request, const gwb::views::PathsPairsInputs& inputs);
    void cancel();
    void requestTopK(int model, const QString& sender, const QString& receiver);

Q_SIGNALS:
    void started();
    void progress(double fraction);
    void finished(const gwb::views::PathsData& data);
    void pairsFinished(const gwb::views::PathsPairsData& data);
    void topKReady(const gwb::views::PatchingTopK& topK);

private:
    ModelCache m_cache = ModelCache::process(); ///< the process's model store, shared with every runner
    quint64 m_latest = 0;
    quint64 m_latestTopK = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<PathsRuns> m_runs;
    WorkLane m_lane; ///< last member: destroyed first, it waits for the running job
};

/// Connects a Paths view to a runner with the models `context` names at the time of Run.
PathsRunner* wirePaths(gwb::views::PathsView* view, std::function<PathsJobRequest()> context);

} // namespace gwb::app
