#pragma once
// Causal tests for the window: the Patching view's sweeps of both models, a clicked cell's top-K
// next pieces, and the quick ablations of the Plücker and Attention views (delta log p of the next
// token over the token strip). Computed with the engine off the GUI thread (PatchingRunner) or
// synchronously (gwb figure --view patching).

#include "runs/causal_adapter.h"
#include "gui/work_lane.h"

#include "gwb/views/patching_view.h"

#include <QMetaObject>
#include <QObject>
#include <QPointer>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace gwb::views {
class TokenStrip;
}

namespace gwb::app {

/// Runs compute(progress) in `lane` for `owner` (a runner on the GUI thread): progress, in steps of
/// 1/1000, and the result are posted back to the owner's thread and dropped there unless
/// isLatest(owner, id) still holds; `cancel`, when set, stops the computation through the progress
/// callback (which returns false). Shared by the Patching and Paths runners.
template <class Owner, class Result>
void runLatest(WorkLane& lane, Owner* owner, quint64 id, std::shared_ptr<std::atomic<bool>> cancel,
               std::function<Result(const std::function<bool(double)>&)> compute,
               std::function<bool(Owner*, quint64)> isLatest, std::function<void(Owner*, double)> onProgress,
               std::function<void(Owner*, const Result&)> onDone) {
    QPointer<Owner> self(owner);
    lane.start([self, id, cancel, compute, isLatest, onProgress, onDone] {
        int lastPermille = -1;
        const Result result = compute([&](double f) {
            const int permille = static_cast<int>(f * 1000);
            if (onProgress && permille != lastPermille && self) {
                lastPermille = permille;
                QMetaObject::invokeMethod(
                    self.data(),
                    [self, f, id, isLatest, onProgress] {
                        if (self && isLatest(self.data(), id)) onProgress(self.data(), f);
                    },
                    Qt::QueuedConnection);
            }
            return !(cancel && cancel->load());
        });
        if (!self) return;
        QMetaObject::invokeMethod(
            self.data(),
            [self, result, id, isLatest, onDone] {
                if (self && isLatest(self.data(), id)) onDone(self.data(), result);
            },
            Qt::QueuedConnection);
    });
}

/// A causal runner's new latest run (Patching, Paths): the run still going is cancelled (it is
/// stale now), a fresh cancel flag is made and the request's import choices go to the cache;
/// returns the new run's id for runLatest.
template <class Request>
quint64 beginLatestRun(quint64& latest, std::shared_ptr<std::atomic<bool>>& cancel, ModelCache& cache,
                       const Request& request) {
    if (cancel) cancel->store(true);
    cancel = std::make_shared<std::atomic<bool>>(false);
    if (request.grassmannChoice) cache.setImportChoice(request.grassmannPath, *request.grassmannChoice);
    if (request.baselineChoice) cache.setImportChoice(request.baselinePath, *request.baselineChoice);
    return ++latest;
}

/// Runs the view's requests one at a time in its lane of the process pool (work_lane.h); a result
/// whose request is no longer the latest is dropped. Destruction cancels and waits.
class PatchingRunner : public QObject {
    Q_OBJECT
public:
    explicit PatchingRunner(QObject* parent = nullptr);
    ~PatchingRunner() override;
    void request(const PatchingJobRequest& request);
    void cancel();
    void requestTopK(int model, qint64 row, qint64 col);
    void requestAblation(const AblationRequest& request);
    /// Runs a pairs file on both models (computePatchingPairs); Cancel keeps the pairs done.
    void requestPairs(const PatchingJobRequest& models, const gwb::views::PairsInputs& inputs);
    bool busy() const { return m_busy; }

Q_SIGNALS:
    void started();
    void progress(double fraction);
    void finished(const gwb::views::PatchingData& data);
    void topKReady(const gwb::views::PatchingTopK& topK);
    void pairsFinished(const gwb::views::PairsData& data);
    /// Delta log p per token of a quick ablation (empty with an error).
    void ablationReady(const QString& label, const std::vector<double>& delta, const QString& error);

private:
    /// A new latest run: the one going is cancelled, the import choices set; returns its id.
    quint64 startRun(const PatchingJobRequest& request);
    ModelCache m_cache = ModelCache::process(); ///< the process's model store, shared with every runner
    quint64 m_latest = 0;
    quint64 m_latestTopK = 0;
    quint64 m_latestAblation = 0;
    bool m_busy = false;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<PatchingRuns> m_runs; ///< of the last finished sweep (GUI thread)
    WorkLane m_lane;                      ///< last member: destroyed first, it waits for the running job
};

/// Connects a Patching view to a runner: Run computes with the models and device `context` names
/// at that time; Cancel stops it; a clicked cell's top-K comes back into the view.
PatchingRunner* wirePatching(gwb::views::PatchingView* view, std::function<PatchingJobRequest()> context);

/// Shows a quick ablation's delta log p on the token strip (bars of |delta| with the sign in the
/// legend's words) and in the status text given to `status`.
void showAblationOnStrip(gwb::views::TokenStrip* strip, const QString& label, const std::vector<double>& delta);

} // namespace gwb::app

Q_DECLARE_METATYPE(std::vector<double>)
