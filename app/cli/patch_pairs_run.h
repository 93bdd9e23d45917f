#pragma once
// `gwb patch --pairs FILE`: the sweep of one site for every usable pair of a pairs file, aligned
// at each pair's metric position, with the mean effect over pairs and its bootstrap interval.

#include "gwb/engine/model.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patching.h"

#include <nlohmann/json.hpp>

#include <QString>

#include <cstdint>
#include <functional>
#include <vector>

namespace gwb::app {

struct PairsRunOptions {
    QString modelFile;     ///< resolved model path
    QString pairsPath;     ///< JSONL or .csv
    QString site, mode;    ///< as gwb patch takes them ("" mode: patch)
    int64_t position = -1; ///< default metric position for pairs without one (-1: the last token)
    int layer = -1;        ///< a part of the sweep, as --layer / --offset / --head
    int offset = -1;
    int head = -1;
    int bootstrap = 1000; ///< resamples of the pairs for the 95% interval
    uint64_t seed = 0;    ///< the bootstrap's seed
    int shardIndex = 0;   ///< --shard i/n: this run takes the i-th of n blocks of usable pairs
    int shardCount = 1;
    QString out;  ///< NPZ
    QString data; ///< tidy CSV, or ""
    QString device;
    bool attribution = false; ///< --method attribution: first-order estimates instead of exact runs
    int check = 0;            ///< --check K: K cells of largest |estimate| + K random ones run exactly
    /// Exact runs also estimate every cell (the window's scatter of estimate against exact value).
    bool alsoEstimate = false;
};

/// Everything a pairs run holds, in memory: per-pair arrays (P x rows x cols, aligned at each pair's
/// metric position for position sites) and meta (without the summary's numbers).
struct PairsResult {
    int64_t rows = 0, cols = 0;
    std::vector<double> metric;      ///< P x rows x cols: the metric (estimated, for attribution)
    std::vector<double> primary;     ///< P x rows x cols: effect (exact) or attribution (estimated)
    bool estimated = false;          ///< --method attribution
    std::vector<uint8_t> flagged;    ///< P x rows x cols (attribution): a saturated gate on the path
    std::vector<int64_t> checkCells; ///< P x 2K (attribution --check): cells checked, -1 = none
    std::vector<double> checkEstimate, checkExact, checkSpearman, checkRecall;
    int64_t checkWidth = 0;
    /// P x rows x cols (exact runs with alsoEstimate): the first-order estimate of the metric's
    /// change, beside `metric` - `baseline` (the exact change); empty otherwise.
    std::vector<double> estimate;
    const char* primaryName() const { return estimated ? "attribution" : "effect"; }
    const char* metricName() const { return estimated ? "estimated_metric" : "metric"; }
    std::vector<double> clean, corrupt; ///< P
    std::vector<int64_t> lines;         ///< P
    bool patchMode = true;              ///< the changed run is the corrupted one (else the clean one, ablated)
    bool complete = true;               ///< every usable pair of this shard ran (not stopped)
    nlohmann::json meta;                ///< without the summary's numbers
    int64_t pairs() const { return static_cast<int64_t>(lines.size()); }
    /// The unchanged run's metric of pair p: what a cell's metric change is measured from.
    double baseline(int64_t p) const {
        return patchMode ? corrupt[static_cast<size_t>(p)] : clean[static_cast<size_t>(p)];
    }
};

/// Runs the sweeps of every usable pair of `file` (the shard of `o`) on `model` and aligns them.
/// `progress(fraction done)` is called from a watcher thread about ten times a second and returns
/// false to stop: the pairs done by then are kept (complete = false). Throws
/// std::invalid_argument for a file without a usable pair and std::runtime_error when stopped
/// before the first pair.
PairsResult computePairs(const gwb::engine::Model& model, const gwb::engine::PairsFile& file, const PairsRunOptions& o,
                         const std::function<bool(double)>& progress);

/// The exact runs of --check K for one attribution sweep: the K cells with the largest |estimate|
/// and K others drawn at random (seeded), their exact metric change, and how well the estimate
/// ranks them.
struct AttributionCheck {
    std::vector<size_t> cells;    ///< sweep cell indices checked (top K first, then the random ones)
    std::vector<double> estimate; ///< estimated metric change of each
    std::vector<double> exact;    ///< exact metric change (patched run - changed run)
    double spearman = 0;          ///< rank correlation of estimate and exact over the checked cells
    double recallAtK = 0; ///< of the K checked cells with the largest |exact|, the share among the top-K estimates
};
AttributionCheck checkAttribution(const gwb::engine::Model& model, const gwb::engine::PatchRequest& request,
                                  const gwb::engine::PatchSweep& estimated, int k, uint64_t seed);

/// What gwb patch would run for one pair of a pairs file (site, mode, and the metric position the
/// pair gives, else `defaultPosition`); throws std::invalid_argument with the reason to skip it.
gwb::engine::PatchRequest pairRequest(const gwb::engine::Model& model, const gwb::engine::PatchPair& pair,
                                      const QString& site, const QString& mode, int64_t defaultPosition);

/// A pair as meta.json lists it: line, texts, answer and wrong (typed, piece, id), tokens, tags.
nlohmann::json pairJson(const gwb::engine::Model& model, const gwb::engine::PatchPair& pair,
                        const gwb::engine::PatchRequest& request);

/// Sorts the skipped lines and throws the refusal of a file without a usable pair, naming the
/// first three lines and reasons, when `usable` is 0.
void sortSkippedOrRefuse(std::vector<gwb::engine::SkippedLine>& skipped, size_t usable);

/// Runs it, prints the summary, writes the files; returns the exit status (0, or 130 / 143 when
/// Ctrl-C / SIGTERM stopped it after some pairs: those are written, marked incomplete). Throws
/// std::exception with a message for a person (nothing is written then).
int runPatchPairs(const PairsRunOptions& options);

/// `gwb patch merge A.npz B.npz ... --out D.npz`: the shards of one pairs run as one file (a pair
/// in two shards is an error; the result is complete when every usable pair is in).
int runPatchMerge(const QStringList& inputs, const QString& out, int bootstrap, uint64_t seed, bool seedSet,
                  bool bootstrapSet);

} // namespace gwb::app
