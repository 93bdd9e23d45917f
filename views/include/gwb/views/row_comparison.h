#pragma once
// How a Grassmann influence row and an attention row compare (the Compare and Saliency figures).

#include "gwb/engine/analysis.h"

#include <cstdint>
#include <vector>

namespace gwb::views {

/// JS divergence (nats, natural log) between two rows after renormalizing each to sum 1 (NaN and
/// negative entries count as 0) and whether their argmax agree. NaN divergence when a row sums to 0.
struct RowComparison {
    double jsDivergence = 0;
    bool top1Agrees = false;
};
RowComparison compareDistributions(const std::vector<float>& a, const std::vector<float>& b);

/// Grassmann influence row of token t over past tokens 0..t (length t+1) from the analysis'
/// T x O influence: entry t-D gets c(t, t-D), other entries 0.
std::vector<float> influenceRow(const gwb::engine::GrassmannLayerAnalysis& layer, int64_t t);

} // namespace gwb::views
