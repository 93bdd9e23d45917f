#pragma once
// Causal claims over datasets: the sweep of one site for every usable pair of a pairs file
// (`gwb patch --pairs`, the window's Patching view, gwb.Model.patch(pairs=...)), aligned at each
// pair's metric position, with the mean effect over pairs and its bootstrap interval; the file it
// writes and the merge of shards. One implementation for the command line, the window and Python.
// Std types only.

#include "gwb/engine/effect_claims.h"
#include "gwb/engine/model.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patching.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gwb::engine {

struct PairsRunOptions {
    std::string modelFile;  ///< the model's path, for meta.json
    std::string pairsPath;  ///< JSONL or .csv, for meta.json
    std::string site, mode; ///< as gwb patch takes them ("" mode: patch)
    int64_t position = -1;  ///< default metric position for pairs without one (-1: the last token)
    int layer = -1;         ///< a part of the sweep, as --layer / --offset / --head
    int offset = -1;
    int head = -1;
    int bootstrap = 1000; ///< resamples of the pairs for the 95% interval
    uint64_t seed = 0;    ///< the bootstrap's seed
    int shardIndex = 0;   ///< --shard i/n: this run takes the i-th of n blocks of usable pairs
    int shardCount = 1;
    bool attribution = false; ///< --method attribution: first-order estimates instead of exact runs
    int check = 0;            ///< --check K: K cells of largest |estimate| + K random ones run exactly
    /// Exact runs also estimate every cell (the window's scatter of estimate against exact value).
    bool alsoEstimate = false;
    /// The least |clean - corrupted| of a pair for its normalised effect, and of the pairs' mean
    /// difference for an effect to localise (effect_claims.h).
    double minDifference = kDefaultMinDifference;
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
    double minDifference = kDefaultMinDifference; ///< the run's threshold (meta.json's min_difference)
    bool complete = true;                         ///< every usable pair of this shard ran (not stopped)
    // What meta.json says, typed (computePairs, readPairsResult and mergePairsFiles fill them).
    std::string modelName;
    std::string site, mode; ///< as run on this model ("offset", "head", ...; "patch", "zero", "mean")
    std::vector<std::string> rowLabels, colLabels;
    std::vector<SkippedLine> skipped;     ///< lines of the pairs file this run could not use, by line
    int64_t usable = 0;                   ///< usable pairs in the file (all shards)
    int64_t shardFirst = 0, shardEnd = 0; ///< this run's usable pairs [first, end) (all of them unsharded)
    /// What stopped an incomplete run ("SIGINT", "KeyboardInterrupt"; "" = not stopped), written as
    /// meta.json's stopped_by.
    std::string stoppedBy;
    /// meta.json without the summary's numbers (the pairs' entries, definitions of the shard, ...),
    /// as text: the file's writer adds the rest.
    std::string metaJson;
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
PairsResult computePairs(const Model& model, const PairsFile& file, const PairsRunOptions& o,
                         const std::function<bool(double)>& progress);

/// The exact runs of --check K for one attribution sweep (AttributionCheck, patching.h).
AttributionCheck checkAttribution(const Model& model, const PatchRequest& request, const PatchSweep& estimated, int k,
                                  uint64_t seed);

/// What gwb patch would run for one pair of a pairs file (site, mode, and the metric position the
/// pair gives, else `defaultPosition`); throws std::invalid_argument with the reason to skip it.
PatchRequest pairRequest(const Model& model, const PatchPair& pair, const std::string& site, const std::string& mode,
                         int64_t defaultPosition);

/// Sorts the skipped lines and throws the refusal of a file without a usable pair, naming the
/// first three lines and reasons, when `usable` is 0.
void sortSkippedOrRefuse(std::vector<SkippedLine>& skipped, size_t usable);

/// Writes a pairs run as `gwb patch --pairs` does: the NPZ at `npzPath` (per-pair arrays, the
/// mean over pairs with its bootstrap interval, meta.json with the definitions) and, when
/// `csvPath` is not empty, the tidy CSV (one row per pair x cell, then one summary row per cell).
/// Both are written atomically.
void writePairsResult(const PairsResult& result, int bootstrap, uint64_t seed, const std::string& npzPath,
                      const std::string& csvPath = {});
/// The NPZ's members of writePairsResult (per-pair arrays, mean and interval) and its meta.json,
/// in memory (Python's model.patch(pairs=...) takes them without a file).
std::vector<NpzMember> pairsResultArrays(const PairsResult& result, int bootstrap, uint64_t seed);
std::string pairsResultMetaJson(const PairsResult& result, int bootstrap, uint64_t seed);

/// `gwb patch merge`: the shards of one pairs run as one result (a pair in two shards is an
/// error; pairs in the order of their lines, so the merge equals the unsharded run; complete when
/// every usable pair is in). `bootstrap` and `seed` are taken from the first file unless set.
/// Throws std::invalid_argument naming the file and the problem.
PairsResult mergePairsFiles(const std::vector<std::string>& inputs, int& bootstrap, uint64_t& seed, bool seedSet,
                            bool bootstrapSet);

/// Reads a file `gwb patch --pairs` (or `gwb patch merge`) wrote back as the result that made it;
/// throws std::invalid_argument when it is not one.
PairsResult readPairsResult(const std::string& path);

} // namespace gwb::engine
