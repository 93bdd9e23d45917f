#pragma once
// One sweep's file: the NPZ `gwb patch` writes (the arrays of patchSweepArrays, the
// attribution check's cells, meta.json) has one writer and one reader, here; `gwb patch`, its
// --resume and the Python package's model.patch() (its meta and Result.save) use them, so a
// sweep reads back the same wherever it was made. Std types only.

#include "gwb/engine/patching.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

class Model;

/// What meta.json says beside the sweep that the sweep itself does not hold: where it came from
/// and how it was asked for.
struct PatchFileContext {
    std::string modelFile;                  ///< the model's path as given
    std::string cleanPrompt, corruptPrompt; ///< the prompts as typed
    std::string answer, wrong;              ///< the answer and wrong pieces as typed (with a metric)
    int64_t answerId = -1, wrongId = -1;    ///< their vocabulary ids
    /// The part of the sweep asked for: {"layer", L}, {"offset", D}, {"head", H} (empty = whole).
    std::vector<std::pair<std::string, int64_t>> selection;
    std::string stoppedBy;  ///< what stopped a partial sweep ("SIGTERM", "Ctrl-C", "cancel")
    AttributionCheck check; ///< attribution's check of K cells run exactly (empty = none)
};

/// meta.json of a sweep: model, site, mode, axes and their labels, prompts with their tokens (id
/// and piece), the metric's pieces and values, selection, completeness, method, the check's
/// figures and the definitions of every array. The layout `gwb patch` has always written.
std::string patchMetaJson(const Model& model, const PatchSweep& sweep, const PatchFileContext& context);

/// Writes the sweep's NPZ (arrays, check cells, meta.json) to `path` atomically (a temp file, then
/// rename). Throws std::runtime_error naming the path when it cannot be written.
void writePatchFile(const std::string& path, const Model& model, const PatchSweep& sweep,
                    const PatchFileContext& context);

/// What a sweep's file holds for carrying it on: the cells computed and their values.
struct PatchFileCells {
    std::string metaJson;
    std::vector<uint8_t> computed; ///< rows * cols (all 1 for a file from before partial sweeps)
    std::vector<double> metric, deltaLogprob, meanDeltaLogprob;
};

/// Reads a sweep's file. Throws std::invalid_argument "PATH is not a file from gwb patch: ..."
/// for another file (no zip, no meta.json, meta.json not a JSON object, an array that is not one).
/// Torch-free (gwb_trace), as is checkPatchResume.
PatchFileCells readPatchFile(const std::string& path);
/// The same from the file's bytes; `path` names it in messages.
PatchFileCells parsePatchFile(const std::vector<uint8_t>& bytes, const std::string& path);

/// Checks that an earlier file holds exactly the sweep `shape` (its labels and sizes: a sweep run
/// with every cell skipped) whose meta is `shapeMetaJson`: the same model, site, mode, prompts,
/// metric and part, arrays of its size. Throws std::invalid_argument naming `path` and the first
/// meta key that differs.
void checkPatchResume(const PatchSweep& shape, const std::string& shapeMetaJson, const PatchFileCells& earlier,
                      const std::string& path);

/// Carries `sweep` (run with PatchRequest::skip = earlier.computed, after checkPatchResume) on
/// from the earlier file: takes the earlier cells' values, recomputes the effects (patchEffects)
/// and completeness.
void resumePatchSweep(PatchSweep& sweep, const PatchFileCells& earlier);

} // namespace gwb::engine
