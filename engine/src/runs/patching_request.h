#pragma once
// What the causal tests' runner (patching.cpp) takes from the request side
// (patching_request.cpp). Engine-internal.

#include "gwb/engine/patching.h"

#include <cstdint>
#include <vector>

namespace gwb::engine::detail {

/// Whether the request names an answer and a wrong piece (the logit-difference metric).
bool hasMetric(const PatchRequest& r);
/// The cells of a sweep in row-major order; fills s's labels, `defined`, rows and cols.
std::vector<Intervention> sweepCells(const Model& model, const PatchRequest& r, PatchSweep& s);
/// Throws std::invalid_argument naming what is wrong with the cell for this model and length T.
void checkIntervention(const Model& model, const Intervention& i, int64_t T);
/// The checks of validatePatchRequest on a path request's prompts, pieces and position, and that
/// it has a corrupted prompt and both pieces (`what` names the method in the messages).
void validatePathRequest(const Model& model, const PathRequest& q, const char* what);

} // namespace gwb::engine::detail
