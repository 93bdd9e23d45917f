#pragma once
// The read-out planes of a layer's W_plu on disk (analysis.h, AnalysisCache): computed once per
// weights and kept in the user's cache folder, so that a reopened model pays nothing for them.

#include "gwb/engine/array.h"
#include "gwb/geometry/readout.h"
#include "gwb/geometry/subspace.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

/// The layers' reading subspaces row(W_red), weight-only too: each layer's rank (and r, the rows of
/// its W_red) and the N x N geodesic distances between them (TraceAnalysis::readingSubspaceDistance).
struct ReadingSubspaces {
    std::vector<int64_t> ranks, widths;
    FloatArray distance;
};

/// The reading subspaces stored for these W_red (every layer's, in order), or nothing.
std::optional<ReadingSubspaces> loadReadingSubspaces(const std::vector<const FloatArray*>& wRed);

/// Stores them, atomically; failures are ignored as for the read-out planes.
void saveReadingSubspaces(const std::vector<const FloatArray*>& wRed, const ReadingSubspaces& r);

/// The pseudo-inverse lifter of one layer's W_red (weight-only: a d x r SVD), or nullptr.
std::shared_ptr<const gwb::geometry::PlaneLifter> loadLifter(const FloatArray& wRed);

/// Stores it, atomically; failures are ignored as for the read-out planes.
void saveLifter(const FloatArray& wRed, const gwb::geometry::PlaneLifter& lifter);

} // namespace gwb::engine::analysis_detail
