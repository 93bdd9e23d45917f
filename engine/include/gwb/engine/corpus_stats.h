#pragma once
// Mergeable corpus statistics: fixed-edge histograms, counts and sums per layer/head/offset and
// against position in the window, accumulated from many windows' traces and analyses, merged
// exactly across shards and stored as NPZ. Torch-free, std types only.
//
// NPZ layout, for every quantity Q (e.g. "model.gate_mean", group shape S such as [layer, head]):
//   Q.edges   f8  B+1          ascending bin edges (fixed per quantity, documented in meta.json)
//   Q.counts  i8  S x (B+2)    histogram: [0] below edges[0], [1..B] bins [e_i, e_i+1), [B+1] >= e_B
//   Q.n       i8  S            finite values seen
//   Q.sum     f8  S            sum of the values (units of Q)
//   Q.sum_sq  f8  S            sum of squares
//   Q.mean    f8  S            sum / n (NaN where n = 0; derived, for convenience)
//   Q.pos_n   i8  S x P        values seen at each position in the window (only position quantities)
//   Q.pos_sum f8  S x P        their sum
// plus `windows` (i8, W: global indices of the windows covered, ascending) and meta.json
// (windows covered/planned, window, stride, shard, files, skipped files, models, totals,
// and every quantity's definition, axes and unit).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gwb::engine {

struct Trace;
struct TraceAnalysis;

/// One accumulated quantity. Histogram bins and moments per group; optional position curves.
struct StatQuantity {
    std::string definition;          ///< one line: what a value is, its unit
    std::vector<std::string> axes;   ///< names of the group axes, e.g. {"layer", "head"}
    std::vector<int64_t> groupShape; ///< extents of the group axes ({} = one group)
    std::vector<double> edges;       ///< B+1 ascending bin edges
    int64_t positions = 0;           ///< P: window positions tracked (0 = no position curve)
    std::vector<int64_t> counts;     ///< G x (B+2) histogram counts (under, B bins, over)
    std::vector<int64_t> n;          ///< G finite values
    std::vector<double> sum;         ///< G sum of values
    std::vector<double> sumSq;       ///< G sum of squared values
    std::vector<int64_t> posN;       ///< G x P values per position
    std::vector<double> posSum;      ///< G x P sum per position

    int64_t groups() const;
    int64_t bins() const { return static_cast<int64_t>(edges.size()) - 1; }
    /// Allocates zeroed storage for the current shape, edges and positions.
    void allocate();
    /// Adds one value to `group` (NaN/inf are ignored); position < 0 or >= P skips the curve.
    void add(int64_t group, double value, int64_t position = -1);
    double mean(int64_t group) const;
    /// Adds other's counts and sums; throws std::invalid_argument when shapes or edges differ.
    void merge(const StatQuantity& other, const std::string& name);
};

/// A skipped input file and why.
struct SkippedFile {
    std::string file;
    std::string reason;
};

struct CorpusStats {
    int64_t window = 0;                        ///< tokens per window
    int64_t stride = 0;                        ///< tokens between window starts
    int64_t maxWindows = 0;                    ///< cap on global windows (0 = none)
    int shardIndex = 0, shardCount = 1;        ///< this file covers windows g with g % shardCount == shardIndex
    int64_t windowsPlanned = 0;                ///< windows this shard was to cover (all shards: after merge)
    int64_t windowsTotal = 0;                  ///< global windows over all shards
    std::vector<int64_t> windows;              ///< global indices of the windows covered, ascending
    bool complete = false;                     ///< every planned window covered (false after a cancel)
    std::vector<std::string> files;            ///< the input files, in order
    std::vector<SkippedFile> skipped;          ///< files reported and skipped
    std::map<std::string, std::string> models; ///< role ("model", "baseline") -> "name (path)"
    std::map<std::string, double> totals;      ///< exact additive totals, e.g. "model.bits", "model.characters"
    std::map<std::string, StatQuantity> quantities;

    /// Returns the quantity `name`, creating it with this shape on first use; throws when a later
    /// call disagrees with the stored shape or edges.
    StatQuantity& quantity(const std::string& name, const std::string& definition, std::vector<std::string> axes,
                           std::vector<int64_t> groupShape, std::vector<double> edges, int64_t positions);
    /// Adds another shard. Throws std::invalid_argument when window, stride, files or models differ
    /// or a window is covered twice.
    void merge(const CorpusStats& other);
    void write(const std::string& path) const; ///< NPZ, atomically
    /// Reads a statistics NPZ; throws std::runtime_error naming the path and the problem.
    static CorpusStats read(const std::string& path);
    /// The same from the file's bytes; `what` (usually the path) names the file in messages.
    static CorpusStats parse(const std::vector<uint8_t>& bytes, const std::string& what);
};

/// n+1 evenly spaced edges from lo to hi.
std::vector<double> linearEdges(double lo, double hi, int n);
/// n+1 log-spaced edges from lo to hi (lo > 0).
std::vector<double> logEdges(double lo, double hi, int n);

/// Adds one window of one model ("model" or "baseline" in `role`): every quantity its trace and
/// analysis provide (see corpus_accumulate.cpp for the list and definitions). `characters` is the
/// number of Unicode code points of the predicted tokens' text (tokens 1..T-1), for bits/char.
void accumulateWindow(CorpusStats& stats, const std::string& role, const Trace& trace, const TraceAnalysis& analysis,
                      int64_t characters);
/// Adds the Grassmann-influence vs attention comparison (JS divergence and top-1 agreement per
/// layer and head) of one window traced by a Grassmann model and an attention model.
void accumulateComparison(CorpusStats& stats, const Trace& grassmann, const TraceAnalysis& grassmannAnalysis,
                          const Trace& attention);

} // namespace gwb::engine
