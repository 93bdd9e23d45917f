#pragma once
// The read-out planes of a layer's W_plu on disk (analysis.h, AnalysisCache): computed once per
// weights and kept in the user's cache folder, so that a reopened model pays nothing for them.

#include "gwb/engine/array.h"
#include "gwb/geometry/readout.h"

#include <memory>
#include <string>

namespace gwb::engine::analysis_detail {

/// The folder of the cache files: $GWB_CACHE_DIR, else $XDG_CACHE_HOME/gwb, else ~/.cache/gwb; ""
/// (no disk cache) when GWB_CACHE_DIR is "none" or no folder can be named.
std::string readoutCacheDir();

/// The file that holds the read-out planes of these weights: a 128-bit hash of their shape and
/// values, with the algorithm's version, names it.
std::string readoutCachePath(const FloatArray& wPlu);

/// The planes stored for these weights, or nullptr (no folder, no file, or a file that does not
/// hold these weights' planes: wrong magic, version, hash or size).
std::shared_ptr<const gwb::geometry::ReadoutPlanes> loadReadoutPlanes(const FloatArray& wPlu);

/// Stores them (atomically: a temporary file, then rename). Failures are ignored: the cache is
/// an optimisation, never a reason for an analysis to fail.
void saveReadoutPlanes(const FloatArray& wPlu, const gwb::geometry::ReadoutPlanes& planes);

} // namespace gwb::engine::analysis_detail
