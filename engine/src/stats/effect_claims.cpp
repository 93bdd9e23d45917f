// When a causal number is a claim (effect_claims.h): the normalised effect's condition, the
// estimators over pairs, Student's t and Holm's correction.

#include "gwb/engine/effect_claims.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace gwb::engine {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/// Continued fraction of the regularised incomplete beta function (modified Lentz).
double betaContinuedFraction(double a, double b, double x) {
    constexpr double tiny = 1e-300, eps = 1e-15;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    if (std::abs(d) < tiny) d = tiny;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= 500; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d;
        if (std::abs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (std::abs(c) < tiny) c = tiny;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d;
        if (std::abs(d) < tiny) d = tiny;
        c = 1.0 + aa / c;
        if (std::abs(c) < tiny) c = tiny;
        d = 1.0 / d;
        const double del = d * c;
        h *= del;
        if (std::abs(del - 1.0) < eps) break;
    }
    return h;
}

/// I_x(a, b), the regularised incomplete beta function.
double incompleteBeta(double a, double b, double x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    const double lnFront = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0)) return std::exp(lnFront) * betaContinuedFraction(a, b, x) / a;
    return 1.0 - std::exp(lnFront) * betaContinuedFraction(b, a, 1.0 - x) / b;
}

} // namespace

double interpolatedQuantile(std::vector<double> v, double q) {
    if (v.empty()) return kNaN;
    std::sort(v.begin(), v.end());
    const double at = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at));
    const size_t hi = std::min(v.size() - 1, lo + 1);
    return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

const OptionTable<CausalOptions>& causalOptions() {
    using O = CausalOptions;
    static const OptionTable<O> table = {
        numberOption<O>("min_difference", "min-difference", "LOGITS",
                        "The least |clean - corrupted| metric difference, in logits, for a normalised effect; below "
                        "it raw effects (changed - corrupted, logits) are shown, and the output says why",
                        0, false, kNoMax, false, &O::minDifference),
        integerOption<O>("bootstrap", "bootstrap", "B",
                         "With pairs: bootstrap resamples of the pairs for each 95% interval; 0 gives none", 0,
                         1'000'000, &O::bootstrap),
        integerOption<O>("seed", "seed", "S", "With pairs: the bootstrap's seed", 0, kMaxSeed, &O::seed),
        integerOption<O>("check", "check", "K",
                         "With method attribution: run the K cells of largest |estimate| and K random ones exactly, "
                         "and report Spearman and recall@K",
                         0, 100'000, &O::check),
    };
    return table;
}

void checkMinDifference(double threshold) {
    checkOptionValue(causalOptions()[0], threshold);
}

void checkBootstrap(int bootstrap) {
    checkOptionValue(causalOptions()[1], bootstrap);
}

std::string claimNumber(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    const double a = std::abs(v);
    if (a == 0)
        std::snprintf(buf, sizeof buf, "0");
    else if (a >= 1e-4 && a < 1e6) {
        // 3 significant digits in fixed notation, trailing zeros dropped.
        const int digits = std::max(0, 2 - static_cast<int>(std::floor(std::log10(a))));
        std::snprintf(buf, sizeof buf, "%.*f", digits, v);
        std::string s = buf;
        if (s.find('.') != std::string::npos) {
            while (s.back() == '0')
                s.pop_back();
            if (s.back() == '.') s.pop_back();
        }
        return s;
    } else
        std::snprintf(buf, sizeof buf, "%.2e", v);
    return buf;
}

EffectCondition effectCondition(double clean, double corrupt, double threshold, bool hasCorrupt,
                                const std::string& rawName) {
    EffectCondition e;
    e.threshold = threshold;
    if (!hasCorrupt) {
        e.reason = "no corrupted prompt: a normalised effect needs one";
        return e;
    }
    e.difference = clean - corrupt;
    if (!std::isfinite(e.difference)) {
        e.reason = "the clean or corrupted metric is not a number: raw effects shown (" + rawName + ", logits)";
        return e;
    }
    e.defined = std::abs(e.difference) >= threshold && e.difference != 0.0;
    if (!e.defined)
        e.reason = "clean - corrupted is " + claimNumber(e.difference) + " logits, below " + claimNumber(threshold) +
                   ": raw effects shown (" + rawName + ", logits)";
    return e;
}

double studentTwoSidedP(double t, double df) {
    if (!(df > 0) || std::isnan(t)) return kNaN;
    if (std::isinf(t)) return 0.0;
    return incompleteBeta(df / 2.0, 0.5, df / (df + t * t));
}

std::vector<uint8_t> holmMarks(const std::vector<double>& p, double alpha) {
    std::vector<uint8_t> marks(p.size(), 0);
    std::vector<size_t> order;
    for (size_t i = 0; i < p.size(); ++i)
        if (std::isfinite(p[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
    const size_t m = order.size();
    for (size_t k = 0; k < m; ++k) {
        if (p[order[k]] > alpha / static_cast<double>(m - k)) break; // step-down: stop at the first kept
        marks[order[k]] = 1;
    }
    return marks;
}

int64_t bootstrapDraw(uint64_t seed, int64_t resample, int64_t k, int64_t pairs) {
    const uint64_t counter = static_cast<uint64_t>(resample) * static_cast<uint64_t>(pairs) + static_cast<uint64_t>(k);
    const uint64_t x = splitmix64(seed ^ splitmix64(counter));
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
    return std::min<int64_t>(pairs - 1, static_cast<int64_t>(u * static_cast<double>(pairs)));
}

bool PairsEstimates::ratioDefined(int64_t cell) const {
    return cell >= 0 && static_cast<size_t>(cell) < ratio.size() && std::isfinite(ratio[static_cast<size_t>(cell)]);
}

PairsEstimates estimatePairs(const std::vector<double>& metric, const std::vector<double>& clean,
                             const std::vector<double>& corrupt, bool patchMode, int64_t pairs, int64_t cells,
                             double threshold, int bootstrap, uint64_t seed, double level, double alpha) {
    if (pairs < 0 || cells < 0 || metric.size() != static_cast<size_t>(pairs * cells) ||
        clean.size() != static_cast<size_t>(pairs) || corrupt.size() != static_cast<size_t>(pairs))
        throw std::invalid_argument("estimatePairs: the metrics are not pairs x cells with a clean and corrupted "
                                    "metric per pair");
    checkMinDifference(threshold);
    checkBootstrap(bootstrap);
    PairsEstimates e;
    e.threshold = threshold;
    e.level = level;
    e.alpha = alpha;
    e.bootstrap = std::max(bootstrap, 0);
    e.seed = seed;
    const size_t P = static_cast<size_t>(pairs), C = static_cast<size_t>(cells);
    std::vector<double> diff(P), base(P);
    for (size_t p = 0; p < P; ++p) {
        diff[p] = clean[p] - corrupt[p];
        base[p] = patchMode ? corrupt[p] : clean[p];
    }
    auto num = [&](size_t p, size_t c) { return metric[p * C + c] - corrupt[p]; }; // p - k
    auto raw = [&](size_t p, size_t c) { return metric[p * C + c] - base[p]; };    // the change made
    auto usable = [&](size_t p, size_t c) { return std::isfinite(metric[p * C + c]) && std::isfinite(diff[p]); };
    auto above = [&](size_t p) { return std::abs(diff[p]) >= threshold && diff[p] != 0.0; };

    // Per cell, one pass over a list of pair indices (the pairs themselves, or a resample).
    struct Sums {
        std::vector<double> num, den, raw, ratioSum;
        std::vector<int64_t> n, nAbove;
        explicit Sums(size_t C) : num(C, 0), den(C, 0), raw(C, 0), ratioSum(C, 0), n(C, 0), nAbove(C, 0) {}
    };
    auto sumsOver = [&](const std::vector<size_t>& draw, double& diffSum, int64_t& diffN) {
        Sums s(C);
        diffSum = 0;
        diffN = 0;
        for (size_t p : draw) {
            if (std::isfinite(diff[p])) diffSum += diff[p], ++diffN;
            for (size_t c = 0; c < C; ++c) {
                if (!usable(p, c)) continue;
                s.num[c] += num(p, c);
                s.den[c] += diff[p];
                s.raw[c] += raw(p, c);
                ++s.n[c];
                if (above(p)) s.ratioSum[c] += num(p, c) / diff[p], ++s.nAbove[c];
            }
        }
        return s;
    };
    auto ratioOf = [&](const Sums& s, size_t c) {
        return s.n[c] > 0 && std::abs(s.den[c] / static_cast<double>(s.n[c])) >= threshold && s.den[c] != 0.0
                   ? s.num[c] / s.den[c]
                   : kNaN;
    };
    std::vector<size_t> all(P);
    std::iota(all.begin(), all.end(), size_t{0});
    double diffSum = 0;
    int64_t diffN = 0;
    const Sums s = sumsOver(all, diffSum, diffN);
    e.n = s.n;
    e.ratio.assign(C, kNaN);
    e.raw.assign(C, kNaN);
    e.meanOfRatios.assign(C, kNaN);
    e.meanOfRatiosN = s.nAbove;
    e.leftOut.assign(C, 0);
    for (size_t c = 0; c < C; ++c) {
        e.leftOut[c] = s.n[c] - s.nAbove[c];
        if (s.n[c] == 0) continue;
        e.ratio[c] = ratioOf(s, c);
        e.raw[c] = s.raw[c] / static_cast<double>(s.n[c]);
        if (s.nAbove[c] > 0) e.meanOfRatios[c] = s.ratioSum[c] / static_cast<double>(s.nAbove[c]);
    }
    DifferenceSummary& d = e.difference;
    d.n = diffN;
    int64_t positive = 0;
    for (size_t p = 0; p < P; ++p)
        if (std::isfinite(diff[p])) {
            positive += diff[p] > 0;
            d.belowThreshold += !above(p);
        }
    if (diffN > 0) {
        d.mean = diffSum / static_cast<double>(diffN);
        d.shareInDirection = static_cast<double>(positive) / static_cast<double>(diffN);
    }

    // The t-test of each cell's raw effects and Holm over the sweep.
    e.pValue.assign(C, kNaN);
    for (size_t c = 0; c < C; ++c) {
        if (s.n[c] < 2) continue;
        const double mean = s.raw[c] / static_cast<double>(s.n[c]);
        double ss = 0;
        for (size_t p = 0; p < P; ++p)
            if (usable(p, c)) ss += (raw(p, c) - mean) * (raw(p, c) - mean);
        const double sd = std::sqrt(ss / static_cast<double>(s.n[c] - 1));
        const double scale = std::max(std::abs(mean), 1.0);
        if (sd <= 1e-12 * scale) // every pair changed the metric by the same amount
            e.pValue[c] = std::abs(mean) <= 1e-12 * scale ? 1.0 : 0.0;
        else
            e.pValue[c] =
                studentTwoSidedP(mean / (sd / std::sqrt(static_cast<double>(s.n[c]))), static_cast<double>(s.n[c] - 1));
    }
    for (size_t c = 0; c < C; ++c)
        e.tested += std::isfinite(e.pValue[c]);

    // The paired bootstrap: the same resampled pairs for every estimate and cell.
    e.ratioLow.assign(C, kNaN);
    e.ratioHigh.assign(C, kNaN);
    e.rawLow.assign(C, kNaN);
    e.rawHigh.assign(C, kNaN);
    e.meanOfRatiosLow.assign(C, kNaN);
    e.meanOfRatiosHigh.assign(C, kNaN);
    if (e.bootstrap > 0 && P > 0) {
        std::vector<std::vector<double>> ratios(C), raws(C), mors(C);
        std::vector<double> diffs;
        std::vector<size_t> draw(P);
        for (int b = 0; b < e.bootstrap; ++b) {
            for (size_t k = 0; k < P; ++k)
                draw[k] = static_cast<size_t>(bootstrapDraw(seed, b, static_cast<int64_t>(k), pairs));
            double bs = 0;
            int64_t bn = 0;
            const Sums r = sumsOver(draw, bs, bn);
            if (bn > 0) diffs.push_back(bs / static_cast<double>(bn));
            for (size_t c = 0; c < C; ++c) {
                if (r.n[c] == 0) continue;
                raws[c].push_back(r.raw[c] / static_cast<double>(r.n[c]));
                if (const double q = ratioOf(r, c); std::isfinite(q)) ratios[c].push_back(q);
                if (r.nAbove[c] > 0) mors[c].push_back(r.ratioSum[c] / static_cast<double>(r.nAbove[c]));
            }
        }
        const double tail = (1.0 - level) / 2.0;
        d.low = interpolatedQuantile(diffs, tail);
        d.high = interpolatedQuantile(diffs, 1.0 - tail);
        // An interval needs most resamples to define the estimate; else it is not reported.
        const size_t enough = static_cast<size_t>(std::ceil(0.5 * e.bootstrap));
        for (size_t c = 0; c < C; ++c) {
            if (std::isfinite(e.raw[c])) {
                e.rawLow[c] = interpolatedQuantile(raws[c], tail);
                e.rawHigh[c] = interpolatedQuantile(raws[c], 1.0 - tail);
            }
            if (std::isfinite(e.ratio[c]) && ratios[c].size() >= enough) {
                e.ratioLow[c] = interpolatedQuantile(ratios[c], tail);
                e.ratioHigh[c] = interpolatedQuantile(ratios[c], 1.0 - tail);
            }
            if (std::isfinite(e.meanOfRatios[c]) && mors[c].size() >= enough) {
                e.meanOfRatiosLow[c] = interpolatedQuantile(mors[c], tail);
                e.meanOfRatiosHigh[c] = interpolatedQuantile(mors[c], 1.0 - tail);
            }
        }
    }
    const bool interval = std::isfinite(d.low) && std::isfinite(d.high);
    const bool excludesZero = interval && (d.low > 0 || d.high < 0);
    // Without resamples only the threshold can be asked.
    d.effect = (excludesZero || !interval) && std::abs(d.mean) >= threshold;
    const int level100 = static_cast<int>(std::lround(level * 100));
    std::string text =
        "clean - corrupted over " + std::to_string(d.n) + " pairs: mean " + claimNumber(d.mean) + " logits";
    if (interval)
        text += " [" + claimNumber(d.low) + ", " + claimNumber(d.high) + "] (" + std::to_string(level100) +
                "% paired bootstrap)";
    text += "; " + claimNumber(100.0 * d.shareInDirection) + "% of pairs in the answer's direction";
    if (!d.effect) {
        const char* why = interval && !excludesZero ? "its interval includes 0" : nullptr;
        text += ". The pairs show no effect to localise: ";
        text += why ? std::string(why) : "its mean is below the threshold " + claimNumber(threshold) + " logits";
        text += ", so the cells' ratios explain nothing (raw effects are the numbers to read)";
    }
    d.verdict = text;
    // Holm's marks: a cell cannot localise an effect the pairs do not show, so none without one (a
    // consistent raw effect of 1e-4 logits is not a finding there).
    e.marked = d.effect ? holmMarks(e.pValue, alpha) : std::vector<uint8_t>(C, 0);
    for (size_t c = 0; c < C; ++c)
        e.markedCount += e.marked[c];
    return e;
}

} // namespace gwb::engine
