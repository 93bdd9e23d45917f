#pragma once
// Gradient x input saliency of both models at one token (the Saliency figure's run), in the
// window's Qt words: the window's runner and `gwb figure --view saliency` call it. Each model
// explains its own token ids. Qt Core + engine.

#include "runs/trace_job.h"

#include "gwb/engine/saliency.h"
#include "gwb/engine/workbench_data.h"

#include <QString>

#include <optional>

namespace gwb::app {

struct SaliencyRequest {
    QString grassmannPath; ///< model files the traces came from ("" = leave out)
    QString baselinePath;
    QString device = QStringLiteral("auto");
    gwb::views::WorkbenchData data; ///< the traces (token ids) to explain
    int token = 0;                  ///< position t
    QString target;                 ///< "" = the actual next token x_{t+1}; else one vocabulary piece
    /// How the user chose to import each file when it is a PyTorch checkpoint (from the trace controller).
    std::optional<ImportChoice> grassmannChoice;
    std::optional<ImportChoice> baselineChoice;
};

/// Runs both models' saliency; problems (last token without a target, a target that is not one
/// piece, a missing model) come back as per-model error strings, never as exceptions.
gwb::engine::SaliencyResult computeSaliency(ModelCache& cache, const SaliencyRequest& request);

} // namespace gwb::app
