#pragma once
// When a causal number is a claim (Torch-free, gwb_trace): the one statement of when a normalised
// effect is defined, and the estimators over pairs that every front end reports (gwb patch,
// gwb paths, the window's Patching view, gwb figure, Python and the files they write).
//
// The normalised effect of a run that moved the metric from k (the changed run's own metric: the
// corrupted run when patching) to p is (p - k) / (c - k), c the clean metric. It divides by
// c - k. Where |c - k| is below a threshold (default kDefaultMinDifference logits) the quotient is
// rounding noise blown up, so it is not defined: every front end shows the raw effect p - k in
// logits instead, says why (effectCondition's reason), and its files carry the flag and the raw
// values. docs/causal-claims.md gives the reasons for the default.
//
// Over pairs (estimatePairs): first whether there is anything to explain (the mean of c - k with a
// paired-bootstrap interval and the share of pairs in the answer's direction); then per cell the
// ratio of means sum(p - k) / sum(c - k) with a paired bootstrap (the default estimator), the mean
// raw effect with its interval, the mean of per-pair ratios over the pairs above the threshold
// (how many it left out), and a Holm-corrected test of every cell of the sweep.

#include "gwb/engine/options.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gwb::engine {

/// The least |clean - corrupted| metric difference, in logits, for which a normalised effect is
/// defined (docs/causal-claims.md: why 0.05).
inline constexpr double kDefaultMinDifference = 0.05;

/// The options every causal command takes, declared once: min_difference (patch, paths and their
/// pairs runs, gwb figure's causal views, the window), and for a pairs run the bootstrap's resamples
/// and seed, and attribution's exact check (gwb patch --pairs --method attribution --check K).
struct CausalOptions {
    double minDifference = kDefaultMinDifference;
    int bootstrap = 1000; ///< resamples of the pairs for each 95% interval; 0: no interval
    uint64_t seed = 0;    ///< the bootstrap's seed
    int check = 0;        ///< attribution: the K cells of largest |estimate| and K random ones run exactly
};
/// min_difference (--min-difference), bootstrap, seed, check; the defaults are CausalOptions{}'s.
const OptionTable<CausalOptions>& causalOptions();

/// Throws std::invalid_argument with the table's sentence ("min_difference (--min-difference) must
/// be a number, at least 0; got -1") for a threshold that cannot be used.
void checkMinDifference(double threshold);
/// The same for a number of bootstrap resamples.
void checkBootstrap(int bootstrap);

/// Whether a normalised effect is defined for one clean/corrupted pair of metrics.
struct EffectCondition {
    bool defined = false;
    double difference = std::numeric_limits<double>::quiet_NaN(); ///< clean - corrupted (logits)
    double threshold = kDefaultMinDifference;
    /// "" when defined; else why, in a sentence that ends with what is shown instead:
    /// "clean - corrupted is 0.00068 logits, below 0.05: raw effects shown (changed - corrupted, logits)".
    std::string reason;
};

/// The rule. `hasCorrupt` false (an ablation of one prompt) has no normalised effect at all.
/// `rawName` names the raw effect shown instead ("patched - corrupted").
EffectCondition effectCondition(double clean, double corrupt, double threshold, bool hasCorrupt = true,
                                const std::string& rawName = "patched - corrupted");

/// A number for messages: up to 3 significant digits, small numbers as 0.00068 (not 6.8e-04).
std::string claimNumber(double v);

/// Two-sided p-value of Student's t statistic with `df` degrees of freedom (NaN for df <= 0).
double studentTwoSidedP(double t, double df);

/// The q-quantile of `values` by linear interpolation between order statistics (numpy's default);
/// NaN for none. The bootstrap intervals' percentiles.
double interpolatedQuantile(std::vector<double> values, double q);

/// Holm's step-down marks at family-wise level `alpha` over the finite p-values (NaN: not tested,
/// never marked): 1 where the hypothesis is rejected.
std::vector<uint8_t> holmMarks(const std::vector<double>& p, double alpha = 0.05);

/// The bootstrap's pair draws: resample b, draw k of P (splitmix64 of seed and the draw number,
/// top 53 bits as a uniform in [0, 1), times P, floored). Stated so a plain implementation in any
/// language (the tests' numpy one) draws the same pairs.
int64_t bootstrapDraw(uint64_t seed, int64_t resample, int64_t k, int64_t pairs);

/// Whether there is anything to explain: clean - corrupted over the pairs.
struct DifferenceSummary {
    int64_t n = 0;
    double mean = std::numeric_limits<double>::quiet_NaN(); ///< mean of c - k (logits)
    double low = std::numeric_limits<double>::quiet_NaN();  ///< paired-bootstrap interval
    double high = std::numeric_limits<double>::quiet_NaN();
    double shareInDirection = std::numeric_limits<double>::quiet_NaN(); ///< share of pairs with c - k > 0
    int64_t belowThreshold = 0;                                         ///< pairs with |c - k| below the threshold
    bool effect = false; ///< the interval excludes 0 and |mean| reaches the threshold
    std::string verdict; ///< one sentence: the numbers and, without an effect, that there is none to localise
};

/// Everything estimatePairs reports; cells are the sweep's rows x cols, flat.
struct PairsEstimates {
    static constexpr const char* kEstimator = "ratio of means";
    static constexpr const char* kEstimatorFormula = "sum over pairs of (p - k) / sum over pairs of (c - k)";
    static constexpr const char* kCorrection = "Holm";
    double threshold = kDefaultMinDifference;
    double level = 0.95;
    double alpha = 0.05;
    int bootstrap = 0;
    uint64_t seed = 0;
    DifferenceSummary difference;
    std::vector<int64_t> n;                         ///< pairs defining the cell
    std::vector<double> ratio, ratioLow, ratioHigh; ///< ratio of means and its paired-bootstrap interval
    std::vector<double> raw, rawLow, rawHigh;       ///< mean raw effect p - k (logits) and its interval
    /// Mean of the per-pair ratios over the pairs with |c - k| >= threshold, and its interval.
    std::vector<double> meanOfRatios, meanOfRatiosLow, meanOfRatiosHigh;
    std::vector<int64_t> meanOfRatiosN, leftOut; ///< pairs it used; pairs below the threshold it left out
    /// Two-sided one-sample t-test of the per-pair raw effects against 0 (the ratio is 0 exactly
    /// when the mean raw effect is), and Holm's marks over the sweep's tested cells at alpha.
    std::vector<double> pValue;
    std::vector<uint8_t> marked;
    int64_t tested = 0; ///< cells with a p-value (the family Holm corrects over)
    int64_t markedCount = 0;
    /// The ratio of means where defined: its denominator sum(c - k) over the cell's pairs, in mean,
    /// reaches the threshold; else the cell's ratio is NaN and `raw` is what is shown.
    bool ratioDefined(int64_t cell) const;
};

/// The estimators over P pairs of a sweep of C cells. metric: P x C, the changed run's metric (NaN
/// where the cell is undefined for that pair); clean, corrupt: P; patchMode: the changed run is
/// the corrupted one (else the clean one, ablated: raw = p - c). bootstrap resamples (0: no
/// intervals), seed as bootstrapDraw. Throws std::invalid_argument for mismatched sizes.
PairsEstimates estimatePairs(const std::vector<double>& metric, const std::vector<double>& clean,
                             const std::vector<double>& corrupt, bool patchMode, int64_t pairs, int64_t cells,
                             double threshold, int bootstrap, uint64_t seed, double level = 0.95, double alpha = 0.05);

} // namespace gwb::engine
