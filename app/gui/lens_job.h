#pragma once
// The Lens view's work, off the GUI thread: the logit lens and the lens folders the person opened,
// read out on both models' traces (runs/lens_adapter.h: computeLensComparison), on a lane of the
// process pool (work_lane.h). Models from the process store.

#include "gui/work_lane.h"
#include "runs/lens_adapter.h"

#include "gwb/views/lens_view.h"

#include <QObject>

#include <atomic>
#include <functional>

namespace gwb::app {

/// What a readout run gave: the comparison, or the reason there is none.
struct LensRunOutcome {
    gwb::engine::LensComparisonPtr comparison;
    QString error;
};

class LensRunner : public QObject {
    Q_OBJECT
public:
    explicit LensRunner(QObject* parent = nullptr);
    ~LensRunner() override;
    /// Drops a queued older run (its traces are stale) and runs this one.
    void run(const LensRunRequest& request);
    bool busy() const { return m_lane.busy(); }
    /// Blocks until no run is left (tests).
    void waitForDone() { m_lane.waitForDone(); }

Q_SIGNALS:
    void finished(const gwb::app::LensRunOutcome& outcome);

private:
    ModelCache m_cache = ModelCache::process();
    std::atomic<bool> m_cancel{false};
    WorkLane m_lane; ///< last member: destroyed first, it waits for its running job
};

/// Connects the Lens view to a runner: Open lenses… asks `chooseFolder()` for a lens folder and adds
/// it; the view's requests (new folders, a new run) read the lenses out with `context()`'s models
/// and traces. Returns the runner (owned by the view).
LensRunner* wireLens(gwb::views::LensView* view, std::function<LensRunRequest()> context,
                     std::function<QString()> chooseFolder);

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::app::LensRunOutcome)
