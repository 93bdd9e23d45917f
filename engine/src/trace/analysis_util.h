#pragma once
// Helpers shared by the analysis sources (engine-internal).

#include "gwb/engine/analysis.h"
#include "gwb/geometry/batch.h"
#include "gwb/geometry/subspace.h"
#include "gwb/geometry/types.h"
#include "parallel_for.h"

#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine::analysis_detail {

inline constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

/// A 2-D float trace array as a double matrix; throws std::invalid_argument naming `what`.
geometry::RowMatrixXd matrixOf(const FloatArray& a, const char* what);

/// A double matrix as a float array of the same (2-D) shape.
FloatArray toFloatArray(const geometry::RowMatrixXd& m);

/// Counts work units and calls the user's callback; throws Cancelled when it returns false.
/// Thread-safe: layers analysed in parallel advance one Progress, and the callback is called by one
/// thread at a time.
class Progress {
public:
    Progress(const ProgressFn& fn, int64_t total) : m_fn(fn), m_total(total) {}
    void advance(int64_t units);

private:
    const ProgressFn& m_fn;
    int64_t m_total = 0;
    int64_t m_done = 0;
    std::mutex m_mutex;
};

using detail::parallelFor; // parallel_for.h

/// Fills the read-out fields of `out` (analysis_readout.cpp) from the layer's weights, z and the
/// mean bivectors B = z ^ y (aggregateBivectors) with their valid-offset counts. Advances progress by T. The
/// weight-only read-out planes come from `cache` when it holds this W_plu (cache may be null).
/// `contribution`, when given, is W_plu B_t already computed (T x d); else it is computed from b.
void analyzeReadout(const GrassmannLayerTrace& g, const geometry::RowMatrixXd& z,
                    const geometry::AggregatedBivectors& agg, const geometry::RowMatrixXd* contribution,
                    GrassmannLayerAnalysis& out, Progress& progress, std::vector<std::string>& warnings,
                    const std::string& at, AnalysisCache* cache);

/// g's share of the block's mix at token t, per channel (analysis_influence.cpp): 1 - a_t for the
/// paper gate, a_t for the others.
Eigen::ArrayXd gShare(GateVariant gate, const geometry::RowMatrixXd& a, int64_t t);

/// The influence of each offset for aggregation per_offset_mlp (analysis_influence.cpp); advances
/// progress by T and counts the tokens whose row is all zero.
void mlpInfluence(const GrassmannLayerTrace& g, const geometry::RowMatrixXd& z, const geometry::RowMatrixXd& gate,
                  const ModelConfig& cfg, double eps, GrassmannLayerAnalysis& out, int64_t& zeroRows,
                  Progress& progress);

/// The influence of each offset through the linear read-out W_plu (analysis_influence.cpp); with
/// unit planes (normalized) it also fills `contribution` with W_plu B_t (T x d).
void planeInfluence(const GrassmannLayerTrace& g, const geometry::RowMatrixXd& z, const geometry::RowMatrixXd& gate,
                    const geometry::AggregatedBivectors& agg, bool normalized, const ModelConfig& cfg, double eps,
                    GrassmannLayerAnalysis& out, int64_t& zeroRows, Progress& progress,
                    std::optional<geometry::RowMatrixXd>& contribution);

/// The influence of a layer with one offset (GrassLM: every layer) through the linear read-out: that
/// offset's share is 1 wherever it is defined, so planeInfluence's projections are not needed
/// (they cost as much as the layer's W_plu product): 1 where t - D >= 0 and the projection
/// share * W_plu p is non-zero (p != 0 and g has a share of the mix), else NaN (counted in zeroRows
/// when t - D >= 0), as planeInfluence gives it.
void singleOffsetInfluence(const geometry::AggregatedBivectors& agg, const geometry::RowMatrixXd& gate,
                           const ModelConfig& cfg, GrassmannLayerAnalysis& out, int64_t& zeroRows, Progress& progress);

/// The pseudo-inverse lifter of a layer's W_red (weight-only): from `cache` when it holds these
/// weights, else from the disk cache, else computed (and kept in both). cache may be null.
std::shared_ptr<const geometry::PlaneLifter> cachedLifter(AnalysisCache* cache, const FloatArray& wRed);

/// The read-out fields of `out` for a layer with no linear read-out (aggregation per_offset_mlp):
/// every value NaN in the shapes analyzeReadout gives (d channels, r, T tokens), and a warning.
/// Advances progress by T.
void markReadoutUndefined(GrassmannLayerAnalysis& out, int64_t T, int64_t d, int64_t r, Progress& progress,
                          std::vector<std::string>& warnings, const std::string& at);

} // namespace gwb::engine::analysis_detail
