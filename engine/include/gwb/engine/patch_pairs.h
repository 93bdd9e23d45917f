#pragma once
// Causal claims over datasets (Torch-free): the pairs file that `gwb patch --pairs` reads, and
// the summary of a cell over pairs (mean, percentile-bootstrap interval, count) that it writes.
//
// A pairs file is JSONL (one object a line) or CSV (a header row, then one pair a row) with the
// fields "clean", "corrupt", "answer", "wrong", an optional integer "position" (the metric
// position; default the last token) and any other fields, kept as tags. A line that cannot be
// used (malformed JSON or CSV, a missing or non-string field, a bad position) is skipped with its
// line number and reason; the caller skips pairs the model cannot run (different token lengths,
// a piece not in the vocabulary) the same way.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gwb::engine {

struct PatchPair {
    int64_t line = 0; ///< 1-based line of the file where the pair starts
    std::string clean, corrupt, answer, wrong;
    int64_t position = -1;                   ///< metric position; -1 = the last token
    std::map<std::string, std::string> tags; ///< every other field, as text (JSON values dumped)
};

struct SkippedLine {
    int64_t line = 0;
    std::string reason;
};

struct PairsFile {
    std::string format; ///< "jsonl" or "csv"
    std::vector<PatchPair> pairs;
    std::vector<SkippedLine> skipped;
    int64_t lines = 0; ///< data lines seen (blank lines and the CSV header not counted)
};

/// Parses a pairs file's bytes. `csv` picks the format (callers decide by the file's suffix).
/// Never throws for bad content: every unusable line goes to `skipped`.
PairsFile parsePairs(const std::string& bytes, bool csv);

/// Reads `path` (".csv" = CSV, anything else JSONL). Throws std::runtime_error when the file
/// cannot be read, is not UTF-8 text or has no usable line ("no usable pair: line 3: ...").
PairsFile readPairsFile(const std::string& path);

/// One cell's distribution over pairs: the mean of the pairs where the cell is defined (NaN
/// values are left out), its 95% percentile-bootstrap interval (pairs resampled with replacement
/// `bootstrap` times; a resample where the cell has no defined value is not counted) and n.
struct CellSummary {
    std::vector<double> mean, low, high; ///< cells; NaN where n = 0
    std::vector<int64_t> n;              ///< cells: pairs with a defined value
};

/// values: pairs x cells, row-major. Deterministic for a seed. bootstrap = 0: no interval (NaN).
CellSummary summarizeOverPairs(const std::vector<double>& values, int64_t pairs, int64_t cells, int bootstrap,
                               uint64_t seed, double level = 0.95);

/// Pearson correlation and Spearman rank correlation (ties share their mean rank) of paired
/// values, over the points where both are finite; NaN for fewer than two such points or a
/// constant side.
double pearsonCorrelation(const std::vector<double>& a, const std::vector<double>& b);
double spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b);

} // namespace gwb::engine
