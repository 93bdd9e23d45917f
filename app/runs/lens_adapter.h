#pragma once
// The Lens view's comparison run (the window's runner and `gwb figure --view lens --lens DIR`):
// the logit lens and every lens folder given, read out on each model's traced prompt
// (gwb::engine::lensReadout). Which lens goes on which model: a lens fitted on one of the models
// (the weights' hash in its gwb_lens.json) is drawn on that model only; a lens fitted on neither is
// drawn on every model it fits (d_model, layers), marked as fitted elsewhere. Qt Core + engine.

#include "runs/trace_job.h"

#include "gwb/engine/lens_readout.h"
#include "gwb/views/view_data.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <optional>

namespace gwb::app {

struct LensRunRequest {
    QString grassmannPath; ///< the model files the traces came from ("" = leave out)
    QString baselinePath;
    QString device = QStringLiteral("auto");
    gwb::views::WorkbenchData data; ///< the traces (token ids) to read out
    QStringList lensFolders;        ///< folders gwb lens fit wrote
    /// How the user chose to import each file when it is a PyTorch checkpoint (the window's runner
    /// sets them on its cache).
    std::optional<ImportChoice> grassmannChoice;
    std::optional<ImportChoice> baselineChoice;
};

/// Reads every lens folder (a folder that is not a lens throws std::runtime_error naming it) and
/// each model's readouts, the logit lens first. A lens that fits neither model, or a model that
/// cannot load, becomes a note. Cancelling between readouts throws gwb::app::LensRunCancelled.
gwb::engine::LensComparison computeLensComparison(ModelCache& cache, const LensRunRequest& request,
                                                  const std::atomic<bool>* cancel = nullptr);

struct LensRunCancelled : std::exception {
    const char* what() const noexcept override { return "cancelled"; }
};

} // namespace gwb::app
