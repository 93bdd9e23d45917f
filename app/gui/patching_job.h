#pragma once
// Causal tests for the window: the Patching view's sweeps of both models, a clicked cell's top-K
// next pieces, and the quick ablations of the Plücker and Attention views (delta log p of the next
// token over the token strip). Computed with the engine off the GUI thread (PatchingRunner) or
// synchronously (gwb figure --view patching).

#include "gui/trace_job.h"
#include "gui/work_lane.h"

#include "gwb/engine/patching.h"
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

/// A sweep for the view: the models (as the window has them) and what the person typed.
struct PatchingJobRequest {
    QString grassmannPath; ///< "" = leave out
    QString baselinePath;
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> grassmannChoice;
    std::optional<ImportChoice> baselineChoice;
    gwb::views::PatchingInputs inputs;
};

/// What a clicked cell's top-K needs again: per model (0 Grassmann, 1 Transformer) the checked
/// engine request and the sweep's cells.
struct PatchingRuns {
    QString device;
    QString paths[2];
    std::optional<gwb::engine::PatchRequest> requests[2];
    std::vector<gwb::engine::Intervention> cells[2]; ///< rows * cols, row-major
    int64_t cols[2] = {0, 0};
};

/// The site each model runs for the view's site ("offset/head": offset for Grassmann, head for
/// the Transformer); "" when the model's kind has no such site.
QString siteFor(const QString& viewSite, gwb::engine::ModelKind kind);

/// Checks and runs both models' sweeps. Never throws. Bad input (prompts of different token
/// lengths, a piece not in the vocabulary, ...) comes back as the result's error with no grids;
/// a site one model's kind lacks as that grid's error. `progress` gets the fraction done and
/// returns false to cancel (then the result's error says it was cancelled). `runs` (optional)
/// receives what computePatchingTopK needs.
gwb::views::PatchingData computePatching(ModelCache& cache, const PatchingJobRequest& request,
                                         const std::function<bool(double)>& progress = {},
                                         PatchingRuns* runs = nullptr);

/// The changed run of cell (row, col) of model 0/1: its k most probable next pieces at the metric
/// position. Never throws (the error goes into the result).
gwb::views::PatchingTopK computePatchingTopK(ModelCache& cache, const PatchingRuns& runs, int model, int64_t row,
                                             int64_t col, int k = 10);

/// "Grassmann" (0) or "Transformer" (1), for messages.
QString causalModelWord(int model);

/// "Grassmann: why; Transformer: why" of the grids (PatchingGrid or PathsGrid) that failed.
template <class Grid> QString gridErrors(Grid* const (&grids)[2]) {
    QStringList why;
    for (int m = 0; m < 2; ++m)
        if (!grids[m]->error.isEmpty()) why << QStringLiteral("%1: %2").arg(causalModelWord(m), grids[m]->error);
    return why.join(QStringLiteral("; "));
}

/// The two models of a causal run (Patching, Paths) from the cache: each grid gets its model's word,
/// and a missing path or a model that fails to load becomes that grid's error (the other model
/// still runs).
template <class Grid>
void loadCausalModels(ModelCache& cache, const QString (&paths)[2], const QString& device,
                      gwb::engine::Model (&models)[2], Grid* const (&grids)[2]) {
    for (int m = 0; m < 2; ++m) {
        grids[m]->model = causalModelWord(m);
        if (paths[m].isEmpty()) {
            grids[m]->error = QStringLiteral("no %1 model loaded").arg(causalModelWord(m));
            continue;
        }
        try {
            models[m] = cache.get(paths[m], device);
        } catch (const std::exception& e) {
            grids[m]->error = QString::fromUtf8(e.what());
        }
    }
}

/// The two-model scaffolding of a causal run (computePatching, computePaths): loads both models
/// (loadCausalModels); asks prepare(m, model, grid) for each loaded model's checked request (a
/// throw refuses the whole run with "<Model> model: why"; nullopt leaves the model out, its grid's
/// error set by prepare); then run(m, model, request, out, progress) for each with its share of the
/// progress. A cancel gives a result with the inputs only and "Cancelled: the previous result
/// stays." (and empty `runs`); a model that fails on its own gets its grid's error. Never throws.
template <class Data, class Request, class Runs, class Prepare, class Run>
Data runCausalModels(ModelCache& cache, const QString (&paths)[2], const QString& device,
                     const decltype(Data::inputs)& inputs, const std::function<bool(double)>& progress, Runs* runs,
                     Prepare prepare, Run run) {
    Data out;
    out.inputs = inputs;
    if (runs) {
        *runs = Runs{};
        runs->device = device;
    }
    if (paths[0].isEmpty() && paths[1].isEmpty()) {
        out.error = QStringLiteral("No model is loaded: open a model and run a prompt first.");
        return out;
    }
    // First check both models' requests (cheap), so that bad input refuses the whole run.
    gwb::engine::Model models[2];
    std::optional<Request> requests[2];
    decltype(&out.grassmann) const grids[2] = {&out.grassmann, &out.transformer};
    loadCausalModels(cache, paths, device, models, grids);
    for (int m = 0; m < 2; ++m) {
        if (!grids[m]->error.isEmpty()) continue;
        try {
            requests[m] = prepare(m, models[m], *grids[m]);
        } catch (const std::exception& e) {
            out.error = QStringLiteral("%1 model: %2").arg(causalModelWord(m), QString::fromUtf8(e.what()));
            return out;
        }
    }
    const int planned = int(requests[0].has_value()) + int(requests[1].has_value());
    if (planned == 0) {
        out.error = QStringLiteral("Nothing to run (%1).").arg(gridErrors(grids));
        return out;
    }
    int done = 0;
    for (int m = 0; m < 2; ++m) {
        if (!requests[m]) continue;
        const double base = static_cast<double>(done) / planned;
        try {
            run(m, models[m], *requests[m], out, [&](double f) { return !progress || progress(base + f / planned); });
            if (runs) {
                runs->paths[m] = paths[m];
                runs->requests[m] = requests[m];
            }
        } catch (const gwb::engine::PatchCancelled&) {
            out = Data{};
            out.inputs = inputs;
            out.error = QStringLiteral("Cancelled: the previous result stays.");
            if (runs) *runs = Runs{};
            return out;
        } catch (const std::exception& e) {
            grids[m]->error = QString::fromUtf8(e.what());
        }
        ++done;
    }
    if (!out.hasGrid()) out.error = gridErrors(grids);
    return out;
}

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

/// The k most probable pieces of `logits` (V) into out.pieces / probs / logits; throws for none.
void fillTopK(const gwb::engine::Model& model, const std::vector<float>& logits, int k, gwb::views::PatchingTopK& out);

/// A quick ablation from the Plücker view (offset D of layer l) or an Attention head.
struct AblationRequest {
    QString path; ///< the model's file
    QString device = QStringLiteral("auto");
    std::optional<ImportChoice> choice;
    std::vector<int64_t> ids; ///< the traced prompt's token ids
    gwb::engine::Intervention intervention;
    QString label; ///< e.g. "offset 2 of layer 3 (zero)"
};

/// log p(next token) with the ablation minus without, T values (NaN at T-1); on failure empty,
/// with the reason in `error`.
std::vector<double> computeAblation(ModelCache& cache, const AblationRequest& request, QString* error);

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
