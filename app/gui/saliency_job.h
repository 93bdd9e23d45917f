#pragma once
// Gradient x input saliency for the Saliency view, computed with the engine off the GUI thread
// (SaliencyRunner) or synchronously (gwb figure). Each model explains its own token ids.

#include "runs/saliency_adapter.h"
#include "gui/work_lane.h"

#include "gwb/views/saliency_view.h"

#include <QObject>

#include <functional>
#include <optional>

namespace gwb::views {
class TokenStrip;
}

namespace gwb::app {

/// Computes saliency requests one at a time in its lane of the process pool; a result whose request is no
/// longer the latest is dropped. Its models come from the process's store (shared with the other
/// runners; a model's copies share its weights); destruction waits for a running request.
class SaliencyRunner : public QObject {
    Q_OBJECT
public:
    explicit SaliencyRunner(QObject* parent = nullptr);
    ~SaliencyRunner() override;
    void request(const SaliencyRequest& request);
    /// A result computed elsewhere (with the run that produced the data): it supersedes any
    /// request in flight and is emitted as `ready` now.
    void deliver(const gwb::engine::SaliencyResult& result);

Q_SIGNALS:
    void ready(const gwb::engine::SaliencyResult& result);

private:
    ModelCache m_cache = ModelCache::process(); ///< the process's model store, shared with every runner
    quint64 m_latest = 0;
    WorkLane m_lane; ///< last member: destroyed first, it waits for the running request
};

/// Connects a Saliency view to a runner: the view's requests are computed with the models and
/// device `context` names at the time of the request.
/// With a strip, the Grassmann saliency shares (the baseline's without a Grassmann model) are also
/// drawn over the token strip.
void wireSaliency(gwb::views::SaliencyView* view, std::function<SaliencyRequest()> context,
                  gwb::views::TokenStrip* strip = nullptr);

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::engine::SaliencyResult)
