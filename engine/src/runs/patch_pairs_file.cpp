// The file of a pairs run (patch_pairs_run.h): the NPZ and tidy CSV that `gwb patch --pairs`
// writes, and the merge of its shards (`gwb patch merge`).

#include "gwb/engine/patch_pairs_run.h"

#include "pairs_meta.h"
#include "formats/json_integer.h"

#include "gwb/engine/csv.h"
#include "gwb/engine/npy.h"
#include "gwb/engine/patch_input.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

namespace gwb::engine {
namespace {

using nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const char* kAlignment = "Pairs may differ in length: columns of a position site count back from each pair's metric "
                         "position m (labels m, m-1, ...; the rightmost column is the metric position). A pair too "
                         "short for a column, or a cell that does not exist in the model, leaves that cell out; "
                         "effect_n counts the pairs in each cell.";

json definitions(int bootstrap, uint64_t seed, double threshold) {
    const std::string boot = std::to_string(bootstrap) +
                             " paired bootstrap resamples of the pairs (with replacement, "
                             "seed " +
                             std::to_string(seed) + ", draws as effect_claims.h's bootstrapDraw)";
    const std::string below = claimNumber(threshold);
    return {{"words", patchDefinitions()},
            {"alignment", kAlignment},
            {"metric", "pairs x rows x columns  logit[answer] - logit[wrong] at the pair's metric position in the "
                       "changed run; NaN where undefined"},
            {"effect", "pairs x rows x columns  (metric - corrupt_metric) / (clean_metric - corrupt_metric) of the "
                       "pair; NaN where undefined, and where |clean_metric - corrupt_metric| < min_difference (" +
                           below + " logits)"},
            {"raw_effect", "pairs x rows x columns  metric - the changed run's own metric (corrupt_metric when "
                           "patching, clean_metric when ablating), logits"},
            {"clean_metric", "pairs  the metric of each pair's clean run"},
            {"corrupt_metric", "pairs  the metric of each pair's corrupted run"},
            {"line", "pairs  the line of the pairs file each pair came from"},
            {"effect_mean", "rows x columns  the ratio of means over the pairs that define the cell: sum(metric - "
                            "corrupt_metric) / sum(clean_metric - corrupt_metric); NaN where the mean denominator is "
                            "below min_difference"},
            {"effect_ci_low", "rows x columns  2.5th percentile of the ratio of means over " + boot},
            {"effect_ci_high", "rows x columns  97.5th percentile of the same"},
            {"effect_n", "rows x columns  pairs that define the cell"},
            {"raw_mean", "rows x columns  mean of raw_effect over the pairs (logits)"},
            {"raw_ci_low", "rows x columns  2.5th percentile of raw_mean over the same resamples"},
            {"raw_ci_high", "rows x columns  97.5th percentile of the same"},
            {"mean_of_ratios", "rows x columns  mean of the per-pair effect over the pairs with |clean_metric - "
                               "corrupt_metric| >= min_difference only"},
            {"mean_of_ratios_ci_low", "rows x columns  2.5th percentile of mean_of_ratios over the same resamples"},
            {"mean_of_ratios_ci_high", "rows x columns  97.5th percentile of the same"},
            {"mean_of_ratios_n", "rows x columns  pairs mean_of_ratios used"},
            {"mean_of_ratios_left_out", "rows x columns  pairs that define the cell but are below min_difference"},
            {"difference", "4  clean_metric - corrupt_metric over the pairs: mean, 2.5th and 97.5th percentiles of "
                           "the mean over the same resamples, share of pairs > 0 (the answer's direction)"},
            {"p_value", "rows x columns  two-sided one-sample t-test of the cell's raw_effect against 0 over its "
                        "pairs (NaN with fewer than 2)"},
            {"holm_marked", "rows x columns  1 where Holm's step-down procedure over the sweep's tested cells "
                            "rejects raw effect 0 at family-wise level 0.05; all 0 where the pairs show no effect "
                            "to localise (effect_to_localise false)"}};
}

} // namespace

/// The estimators over the pairs of a run (effect_claims.h), with the run's threshold.
static PairsEstimates estimatesOf(const PairsResult& r, int bootstrap, uint64_t seed) {
    return estimatePairs(r.metric, r.clean, r.corrupt, r.patchMode, r.pairs(), r.rows * r.cols, r.minDifference,
                         bootstrap, seed);
}

std::vector<NpzMember> pairsResultArrays(const PairsResult& r, int bootstrap, uint64_t seed) {
    const int64_t P = r.pairs(), cells = r.rows * r.cols;
    const PairsEstimates e = estimatesOf(r, bootstrap, seed);
    // The primary summary: the ratio of means for exact runs, the mean estimate for attribution.
    const std::vector<double>& mean = r.estimated ? e.raw : e.ratio;
    const std::vector<double>& low = r.estimated ? e.rawLow : e.ratioLow;
    const std::vector<double>& high = r.estimated ? e.rawHigh : e.ratioHigh;
    std::vector<double> raw(r.metric.size(), kNaN);
    for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < cells; ++i) {
            const size_t k = static_cast<size_t>(p * cells + i);
            raw[k] = r.metric[k] - r.baseline(p);
        }
    const std::string pn = r.primaryName();
    std::vector<NpzMember> out;
    out.push_back({r.metricName(), Array<double>({P, r.rows, r.cols}, r.metric)});
    out.push_back({pn, Array<double>({P, r.rows, r.cols}, r.primary)});
    if (r.estimated) {
        out.push_back({"flagged", Array<uint8_t>({P, r.rows, r.cols}, r.flagged)});
        if (r.checkWidth > 0) {
            out.push_back({"check_cells", Array<int64_t>({P, r.checkWidth}, r.checkCells)});
            out.push_back({"check_estimate", Array<double>({P, r.checkWidth}, r.checkEstimate)});
            out.push_back({"check_exact", Array<double>({P, r.checkWidth}, r.checkExact)});
            out.push_back({"check_spearman", Array<double>({P}, r.checkSpearman)});
            out.push_back({"check_recall", Array<double>({P}, r.checkRecall)});
        }
    }
    out.push_back({"clean_metric", Array<double>({P}, r.clean)});
    out.push_back({"corrupt_metric", Array<double>({P}, r.corrupt)});
    out.push_back({"line", Array<int64_t>({P}, r.lines)});
    out.push_back({pn + "_mean", Array<double>({r.rows, r.cols}, mean)});
    out.push_back({pn + "_ci_low", Array<double>({r.rows, r.cols}, low)});
    out.push_back({pn + "_ci_high", Array<double>({r.rows, r.cols}, high)});
    out.push_back({pn + "_n", Array<int64_t>({r.rows, r.cols}, e.n)});
    if (!r.estimated) out.push_back({"raw_effect", Array<double>({P, r.rows, r.cols}, raw)});
    out.push_back({"raw_mean", Array<double>({r.rows, r.cols}, e.raw)});
    out.push_back({"raw_ci_low", Array<double>({r.rows, r.cols}, e.rawLow)});
    out.push_back({"raw_ci_high", Array<double>({r.rows, r.cols}, e.rawHigh)});
    if (!r.estimated) {
        out.push_back({"mean_of_ratios", Array<double>({r.rows, r.cols}, e.meanOfRatios)});
        out.push_back({"mean_of_ratios_ci_low", Array<double>({r.rows, r.cols}, e.meanOfRatiosLow)});
        out.push_back({"mean_of_ratios_ci_high", Array<double>({r.rows, r.cols}, e.meanOfRatiosHigh)});
        out.push_back({"mean_of_ratios_n", Array<int64_t>({r.rows, r.cols}, e.meanOfRatiosN)});
        out.push_back({"mean_of_ratios_left_out", Array<int64_t>({r.rows, r.cols}, e.leftOut)});
    }
    const DifferenceSummary& d = e.difference;
    out.push_back({"difference", Array<double>({4}, {d.mean, d.low, d.high, d.shareInDirection})});
    out.push_back({"p_value", Array<double>({r.rows, r.cols}, e.pValue)});
    out.push_back({"holm_marked", Array<uint8_t>({r.rows, r.cols}, e.marked)});
    return out;
}

std::string pairsResultMetaJson(const PairsResult& r, int bootstrap, uint64_t seed) {
    json meta = r.metaJson.empty() ? json::object() : json::parse(r.metaJson);
    if (!r.stoppedBy.empty()) meta["stopped_by"] = r.stoppedBy;
    meta["bootstrap"] = bootstrap;
    meta["seed"] = seed;
    meta["interval"] = "95% percentile paired bootstrap over pairs (the same resampled pairs for every estimate)";
    meta["definitions"] = definitions(bootstrap, seed, r.minDifference);
    meta["method"] = r.estimated ? "attribution" : "exact";
    const PairsEstimates e = estimatesOf(r, bootstrap, seed);
    meta["min_difference"] = r.minDifference;
    meta["estimator"] = r.estimated
                            ? "mean estimated metric change (attribution_mean)"
                            : std::string(PairsEstimates::kEstimator) + ": " + PairsEstimates::kEstimatorFormula +
                                  " (effect_mean); the mean of per-pair ratios is mean_of_ratios";
    meta["correction"] = "Holm over the sweep's " + std::to_string(e.tested) +
                         " tested cells at family-wise level 0.05 (holm_marked); " + std::to_string(e.markedCount) +
                         " marked";
    meta["verdict"] = e.difference.verdict;
    meta["effect_to_localise"] = e.difference.effect;
    if (r.estimated) {
        json& d = meta["definitions"];
        for (const char* k : {"metric", "effect", "effect_mean", "effect_ci_low", "effect_ci_high", "effect_n"})
            d.erase(k);
        d["attribution"] = "pairs x rows x columns  first-order estimate of the metric's change: (value in the source "
                           "run - value in the changed run) . d metric / d value, the gradient taken on the changed "
                           "run (the corrupted run when patching); NaN where undefined";
        d["estimated_metric"] = "pairs x rows x columns  the changed run's metric + attribution";
        d["attribution_mean"] = "rows x columns  mean of attribution over the pairs where it is defined";
        d["attribution_ci_low"] = "rows x columns  2.5th percentile of the mean over the bootstrap resamples";
        d["attribution_ci_high"] = "rows x columns  97.5th percentile of the same";
        d["attribution_n"] = "rows x columns  pairs with a defined estimate in the cell";
        d["flagged"] = "pairs x rows x columns  1 where the estimate passes a saturated Grassmann gate (half or more "
                       "of its channels below 0.02 or above 0.98 in the changed or the source run): a first-order "
                       "estimate is known to be poor there (AtP*)";
        if (r.checkWidth > 0) {
            d["check_cells"] = "pairs x 2K  flat cell index (row * columns + column) of the cells run exactly: the K "
                               "with the largest |attribution|, then K drawn at random; -1 where the pair has fewer";
            d["check_estimate"] = "pairs x 2K  attribution of those cells";
            d["check_exact"] = "pairs x 2K  exact metric change of those cells (patched run - changed run)";
            d["check_spearman"] = "pairs  Spearman rank correlation of check_estimate and check_exact";
            d["check_recall"] = "pairs  recall@K: of the K checked cells with the largest |exact|, the share that are "
                                "among the K largest |attribution|";
        }
    }
    return meta.dump(2);
}

void writePairsResult(const PairsResult& r, int bootstrap, uint64_t seed, const std::string& path,
                      const std::string& data) {
    NpzWriter npz;
    for (const NpzMember& m : pairsResultArrays(r, bootstrap, seed))
        npz.add(m);
    npz.addFile("meta.json", pairsResultMetaJson(r, bootstrap, seed));
    npz.write(path);
    if (data.empty()) return;
    const int64_t P = r.pairs(), cells = r.rows * r.cols;
    const PairsEstimates e = estimatesOf(r, bootstrap, seed); // the same draws as the NPZ's
    const std::vector<double>& mean = r.estimated ? e.raw : e.ratio;
    const std::vector<double>& low = r.estimated ? e.rawLow : e.ratioLow;
    const std::vector<double>& high = r.estimated ? e.rawHigh : e.ratioHigh;
    const std::string pn = r.primaryName();
    // Tidy: one row per pair x cell, then one summary row per cell (pair "all").
    const std::vector<std::string>& rowLabels = r.rowLabels;
    const std::vector<std::string>& colLabels = r.colLabels;
    if (rowLabels.size() != static_cast<size_t>(r.rows) || colLabels.size() != static_cast<size_t>(r.cols))
        throw std::invalid_argument("a pairs run whose labels do not match its grid");
    // The summary rows' mean is the run's estimator (meta.json's "estimator"): the ratio of means.
    std::string csv = std::string("pair,line,row,column,") + r.metricName() + "," + pn +
                      ",mean,ci_low,ci_high,n,raw_mean,p_value,holm_marked\n";
    for (int64_t p = 0; p < P; ++p)
        for (int64_t i = 0; i < cells; ++i) {
            const size_t k = static_cast<size_t>(p * cells + i);
            csv += std::to_string(p) + "," + std::to_string(r.lines[static_cast<size_t>(p)]) + "," +
                   csvField(rowLabels[static_cast<size_t>(i / r.cols)]) + "," +
                   csvField(colLabels[static_cast<size_t>(i % r.cols)]) + "," + csvNumber(r.metric[k]) + "," +
                   csvNumber(r.primary[k]) + ",,,,,,,\n";
        }
    for (int64_t i = 0; i < cells; ++i) {
        const size_t k = static_cast<size_t>(i);
        csv += "all,," + csvField(rowLabels[static_cast<size_t>(i / r.cols)]) + "," +
               csvField(colLabels[static_cast<size_t>(i % r.cols)]) + ",,," + csvNumber(mean[k]) + "," +
               csvNumber(low[k]) + "," + csvNumber(high[k]) + "," + std::to_string(e.n[k]) + "," + csvNumber(e.raw[k]) +
               "," + csvNumber(e.pValue[k]) + "," + std::to_string(e.marked[k]) + "\n";
    }
    writeBytesAtomic(data, csv.data(), csv.size());
}

PairsResult readPairsResult(const std::string& path) {
    std::map<std::string, std::vector<uint8_t>> members;
    try {
        members = readZipStored(readBinaryFile(path));
    } catch (const std::exception& e) {
        throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs: " + e.what());
    }
    if (!members.count("meta.json") || !members.count("line.npy"))
        throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs (no per-pair arrays)");
    PairsResult r;
    json meta;
    try {
        meta = json::parse(std::string(members["meta.json"].begin(), members["meta.json"].end()));
        if (!meta.is_object()) throw std::invalid_argument("meta.json is not a JSON object");
        setPairsMeta(r, meta);
        r.estimated = meta.value("method", std::string("exact")) == "attribution";
        r.patchMode = meta.value("mode", std::string("patch")) == "patch";
        r.complete = meta.value("complete", false);
    } catch (const json::exception& e) {
        throw std::invalid_argument("'" + path + "': meta.json is not JSON: " + e.what());
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("'" + path + "': " + e.what());
    }
    const std::string metricMember = r.estimated ? "estimated_metric.npy" : "metric.npy";
    const std::string primaryMember = r.estimated ? "attribution.npy" : "effect.npy";
    for (const std::string& member :
         {metricMember, primaryMember, std::string("clean_metric.npy"), std::string("corrupt_metric.npy")})
        if (!members.count(member))
            throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs (no " + member + ")");
    const NpyArray metric = parseNpy(members.at(metricMember));
    if (metric.shape.size() != 3) throw std::invalid_argument("'" + path + "': metric is not pairs x rows x cols");
    const int64_t P = metric.shape[0];
    r.rows = metric.shape[1];
    r.cols = metric.shape[2];
    r.metric = metric.values<double>();
    r.primary = parseNpy(members.at(primaryMember)).values<double>();
    if (r.estimated && members.count("flagged.npy")) r.flagged = parseNpy(members.at("flagged.npy")).values<uint8_t>();
    if (r.estimated && r.flagged.size() != r.metric.size()) r.flagged.assign(r.metric.size(), 0);
    r.lines = parseNpy(members.at("line.npy")).values<int64_t>();
    r.clean = parseNpy(members.at("clean_metric.npy")).values<double>();
    r.corrupt = parseNpy(members.at("corrupt_metric.npy")).values<double>();
    if (members.count("check_cells.npy")) {
        const NpyArray cells = parseNpy(members.at("check_cells.npy"));
        r.checkWidth = cells.shape.size() == 2 ? cells.shape[1] : 0;
        r.checkCells = cells.values<int64_t>();
        for (const char* name : {"check_estimate.npy", "check_exact.npy", "check_spearman.npy", "check_recall.npy"})
            if (!members.count(name))
                throw std::invalid_argument("'" + path + "' is not a file from gwb patch --pairs (no " + name + ")");
        r.checkEstimate = parseNpy(members.at("check_estimate.npy")).values<double>();
        r.checkExact = parseNpy(members.at("check_exact.npy")).values<double>();
        r.checkSpearman = parseNpy(members.at("check_spearman.npy")).values<double>();
        r.checkRecall = parseNpy(members.at("check_recall.npy")).values<double>();
    }
    const size_t cells = static_cast<size_t>(P * r.rows * r.cols);
    const bool sizesAgree =
        r.primary.size() == cells && r.lines.size() == static_cast<size_t>(P) && r.clean.size() == r.lines.size() &&
        r.corrupt.size() == r.lines.size() && meta.value("pairs", json::array()).size() == r.lines.size() &&
        r.rowLabels.size() == static_cast<size_t>(r.rows) && r.colLabels.size() == static_cast<size_t>(r.cols) &&
        r.checkCells.size() == static_cast<size_t>(P * r.checkWidth) && r.checkEstimate.size() == r.checkCells.size() &&
        r.checkExact.size() == r.checkCells.size() &&
        r.checkSpearman.size() == (r.checkWidth > 0 ? static_cast<size_t>(P) : 0) &&
        r.checkRecall.size() == r.checkSpearman.size();
    if (!sizesAgree) throw std::invalid_argument("'" + path + "': its arrays do not agree in size (a damaged file)");
    return r;
}

PairsResult mergePairsFiles(const std::vector<std::string>& inputs, int& bootstrap, uint64_t& seed, bool seedSet,
                            bool bootstrapSet) {
    if (inputs.size() < 2) throw std::invalid_argument("gwb patch merge needs two or more files");
    PairsResult merged;
    json mm; // the merged meta.json
    std::set<int64_t> seen;
    json skipped = json::array();
    std::set<int64_t> skippedLines;
    for (const std::string& path : inputs) {
        const PairsResult f = readPairsResult(path);
        const json meta = json::parse(f.metaJson);
        if (!mm.is_null() && f.estimated != merged.estimated)
            throw std::invalid_argument("'" + path +
                                        "' is another run: one file holds exact sweeps, the other "
                                        "attribution estimates");
        if (mm.is_null()) {
            mm = meta;
            merged.rows = f.rows;
            merged.cols = f.cols;
            merged.estimated = f.estimated;
            merged.patchMode = f.patchMode;
            merged.checkWidth = f.checkWidth;
            if (!bootstrapSet) bootstrap = meta.value("bootstrap", bootstrap);
            if (!seedSet) seed = meta.value("seed", seed);
            mm["pairs"] = json::array();
        } else {
            for (const char* key : {"model_name", "site", "mode", "pairs_file", "row_labels", "column_axis"})
                if (meta.value(key, json()) != mm.value(key, json()))
                    throw std::invalid_argument("'" + path + "' is another run: its " + key + " differs");
            if (f.rows != merged.rows)
                throw std::invalid_argument("'" + path + "' has " + std::to_string(f.rows) + " rows, not " +
                                            std::to_string(merged.rows));
            if (f.checkWidth != merged.checkWidth)
                throw std::invalid_argument("'" + path + "' is another run: its --check differs");
        }
        // Position columns of shards may differ in width (their longest pair): right-align them.
        const int64_t P = f.pairs(), C = f.cols;
        const bool aligned = meta.value("column_axis", std::string()).rfind("position", 0) == 0;
        if (!aligned && C != merged.cols)
            throw std::invalid_argument("'" + path + "' has other columns than the first file");
        if (aligned && C > merged.cols) {
            // Widen what is merged so far (new columns on the left, NaN).
            const int64_t extra = C - merged.cols, oldCells = merged.rows * merged.cols;
            std::vector<double> m2, e2;
            std::vector<uint8_t> f2;
            for (int64_t p = 0; p < merged.pairs(); ++p)
                for (int64_t row = 0; row < merged.rows; ++row) {
                    for (int64_t c = 0; c < extra; ++c) {
                        m2.push_back(kNaN);
                        e2.push_back(kNaN);
                        if (merged.estimated) f2.push_back(0);
                    }
                    for (int64_t c = 0; c < merged.cols; ++c) {
                        const size_t k = static_cast<size_t>(p * oldCells + row * merged.cols + c);
                        m2.push_back(merged.metric[k]);
                        e2.push_back(merged.primary[k]);
                        if (merged.estimated) f2.push_back(k < merged.flagged.size() ? merged.flagged[k] : 0);
                    }
                }
            // The checked cells' flat indices move with their columns.
            for (int64_t& cell : merged.checkCells)
                if (cell >= 0) cell = (cell / merged.cols) * C + cell % merged.cols + extra;
            merged.metric = std::move(m2);
            merged.primary = std::move(e2);
            merged.flagged = std::move(f2);
            merged.cols = C;
            mm["column_labels"] = meta["column_labels"];
        }
        for (int64_t p = 0; p < P; ++p) {
            const int64_t ln = f.lines[static_cast<size_t>(p)];
            if (!seen.insert(ln).second)
                throw std::invalid_argument("line " + std::to_string(ln) +
                                            " of the pairs file is in two of the files ('" + path +
                                            "' and an earlier one): each pair must be covered once");
            for (int64_t row = 0; row < merged.rows; ++row)
                for (int64_t c = 0; c < merged.cols; ++c) {
                    const int64_t src = c - (merged.cols - C);
                    const bool in = src >= 0 && src < C;
                    const size_t k = static_cast<size_t>(p * merged.rows * C + row * C + (in ? src : 0));
                    merged.metric.push_back(in ? f.metric[k] : kNaN);
                    merged.primary.push_back(in ? f.primary[k] : kNaN);
                    if (merged.estimated) merged.flagged.push_back(in ? f.flagged[k] : 0);
                }
            for (int64_t j = 0; j < f.checkWidth; ++j) {
                const size_t k = static_cast<size_t>(p * f.checkWidth + j);
                const int64_t cell = f.checkCells[k];
                merged.checkCells.push_back(cell < 0 ? -1 : (cell / C) * merged.cols + cell % C + (merged.cols - C));
                merged.checkEstimate.push_back(f.checkEstimate[k]);
                merged.checkExact.push_back(f.checkExact[k]);
            }
            if (f.checkWidth > 0) {
                merged.checkSpearman.push_back(f.checkSpearman[static_cast<size_t>(p)]);
                merged.checkRecall.push_back(f.checkRecall[static_cast<size_t>(p)]);
            }
            merged.lines.push_back(ln);
            merged.clean.push_back(f.clean[static_cast<size_t>(p)]);
            merged.corrupt.push_back(f.corrupt[static_cast<size_t>(p)]);
            mm["pairs"].push_back(meta["pairs"][static_cast<size_t>(p)]);
        }
        for (const auto& sk : meta.value("skipped", json::array()))
            if (skippedLines.insert(jsonInteger(sk["line"], "line")).second) skipped.push_back(sk);
    }
    // Pairs in the order of their lines, whatever the order of the files: the merged file (and its
    // bootstrap) is the one an unsharded run writes.
    {
        const int64_t P = merged.pairs(), cells = merged.rows * merged.cols, W = merged.checkWidth;
        std::vector<size_t> order(static_cast<size_t>(P));
        std::iota(order.begin(), order.end(), size_t{0});
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return merged.lines[a] < merged.lines[b]; });
        auto permute = [&](auto& v, int64_t width) {
            if (v.empty()) return;
            auto copy = v;
            for (size_t i = 0; i < order.size(); ++i)
                std::copy_n(copy.begin() + static_cast<int64_t>(order[i]) * width, width,
                            v.begin() + static_cast<int64_t>(i) * width);
        };
        permute(merged.metric, cells);
        permute(merged.primary, cells);
        permute(merged.flagged, cells);
        permute(merged.checkCells, W);
        permute(merged.checkEstimate, W);
        permute(merged.checkExact, W);
        permute(merged.checkSpearman, 1);
        permute(merged.checkRecall, 1);
        permute(merged.clean, 1);
        permute(merged.corrupt, 1);
        permute(merged.lines, 1);
        json pairs = json::array();
        for (size_t i : order)
            pairs.push_back(mm["pairs"][i]);
        mm["pairs"] = pairs;
    }
    const int64_t usable = jsonIntegerOr(mm, "pairs_usable", 0);
    mm["skipped"] = skipped;
    mm.erase("shard");
    mm.erase("stopped_by");
    mm["merged_from"] = inputs.size();
    mm["complete"] = merged.pairs() == usable;
    merged.complete = mm["complete"].get<bool>();
    setPairsMeta(merged, mm);
    return merged;
}

} // namespace gwb::engine
