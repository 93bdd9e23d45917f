#pragma once
// `gwb features train --transcoders`: the model's transcoder set (gwb::engine::trainTranscoderSet),
// one transcoder per block, with progress per layer and a stop that keeps the layer's state.

#include "gwb/engine/features.h"

#include <QString>

#include <atomic>

namespace gwb::app::cli {

/// Trains (or, with `resume`, goes on training) the set in `dir`; `stop` is the flag the command's
/// signal handlers set. Returns the exit code: 0 done, 130/143 stopped (the state kept). Throws
/// std::invalid_argument when `dir` already holds a set and `resume` is not given.
int trainTranscoders(const gwb::engine::Model& model, const gwb::engine::FeatureTrainOptions& options,
                     const QString& dir, bool resume, const std::atomic<bool>& stop);

} // namespace gwb::app::cli
