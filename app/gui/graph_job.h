#pragma once
// The Graph view's work, off the GUI thread: both models' attribution graphs on the current
// prompt (gwb/engine/graph_run.h: runGraphModels) from the transcoder sets the person opened, with
// progress and cancel. One lane of the process pool (work_lane.h), models from the process store.

#include "gui/trace_job.h"
#include "gui/work_lane.h"

#include "gwb/views/graph_view.h"
#include "gwb/views/workbench_data.h"

#include <QObject>

#include <atomic>
#include <functional>
#include <optional>

namespace gwb::app {

/// What the runner needs of the window: the model files, the device, the traces (their tokens are
/// the prompt) and each model's transcoder folder.
struct GraphContext {
    QString grassmannPath, baselinePath;
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> grassmannChoice, baselineChoice;
    gwb::views::WorkbenchData data;
    QString transcoders[2];
};

/// Both graphs for `context` (never throws: a model's problem goes into its errors entry; a cancel
/// gives null).
gwb::views::GraphPairPtr computeGraphs(ModelCache& cache, const GraphContext& context,
                                       const std::function<bool(double)>& progress = {});

class GraphRunner : public QObject {
    Q_OBJECT
public:
    explicit GraphRunner(QObject* parent = nullptr);
    ~GraphRunner() override;
    void run(const GraphContext& context);
    void cancel() { m_cancel = true; }
    bool busy() const { return m_lane.busy(); }

Q_SIGNALS:
    void progress(double fraction);
    /// Null when cancelled.
    void finished(const gwb::views::GraphPairPtr& graphs);

private:
    ModelCache m_cache = ModelCache::process();
    std::atomic<bool> m_cancel{false};
    WorkLane m_lane; ///< last member: destroyed first, it waits for the running job
};

/// Connects the Graph view to a runner: its Transcoders… buttons ask `chooseFolder(model)` for a
/// folder, Run computes both graphs on the current prompt, Cancel stops. Returns the runner (owned
/// by the view).
GraphRunner* wireGraph(gwb::views::GraphView* view, std::function<GraphContext()> context,
                       std::function<QString(int)> chooseFolder);

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::views::GraphPairPtr)
