#pragma once
// The numbers the Corpus view draws from a statistics file (gwb stats): per group, quantiles read
// from the fixed-edge histogram, the mean, the standard deviation and the 95% normal interval of
// the mean from n, sum and sum of squares; the mean against position in the window. Std types only.

#include "gwb/engine/corpus_stats.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gwb::views {

/// The distribution of one quantity in one group (or several groups pooled).
struct DistributionSummary {
    static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    int64_t n = 0;               ///< finite values (sum of Q.n over the groups)
    double mean = kNaN;          ///< sum / n (units of the quantity)
    double sd = kNaN;            ///< sample standard deviation sqrt((sum_sq - sum^2/n) / (n-1)); NaN for n < 2
    double ciLow = kNaN;         ///< mean - 1.96 sd / sqrt(n): 95% normal interval of the mean
    double ciHigh = kNaN;        ///< mean + 1.96 sd / sqrt(n)
    double p025 = kNaN;          ///< 2.5th percentile from the histogram (whisker)
    double q1 = kNaN;            ///< 25th percentile (box)
    double median = kNaN;        ///< 50th percentile
    double q3 = kNaN;            ///< 75th percentile (box)
    double p975 = kNaN;          ///< 97.5th percentile (whisker)
    int64_t below = 0;           ///< values below edges[0] (quantiles there read as edges[0])
    int64_t above = 0;           ///< values at or above edges[B] (quantiles there read as edges[B])
    std::vector<int64_t> counts; ///< B+2 pooled histogram counts (under, B bins, over)
};

/// True when the edges are log-spaced (constant ratio, all > 0): quantiles interpolate
/// geometrically inside a bin and the view draws a log axis.
bool isLogEdges(const std::vector<double>& edges);

/// Quantile q in [0, 1] of a histogram with B+1 edges and B+2 counts (under, B bins, over): the
/// value where the cumulative count reaches q * total, interpolated linearly inside its bin
/// (geometrically for log edges); the under/over bins read as edges[0] / edges[B]. NaN when empty.
double histogramQuantile(const std::vector<double>& edges, const std::vector<int64_t>& counts, double q);

/// Summary of quantity `q` over the listed group indices (flat, C order over groupShape), pooled:
/// counts, n, sum and sum_sq add. Indices out of range are ignored.
DistributionSummary summarize(const gwb::engine::StatQuantity& q, const std::vector<int64_t>& groups);

/// Mean against position in the window over the listed groups, pooled: sum(pos_sum) / sum(pos_n)
/// per position (NaN where no value was seen); empty when the quantity has no position curve.
std::vector<double> positionMean(const gwb::engine::StatQuantity& q, const std::vector<int64_t>& groups);

/// Tokens traced per model: scored tokens (T-1 per window) plus one per window, from the totals.
int64_t corpusTokens(const gwb::engine::CorpusStats& stats);

} // namespace gwb::views
