#include "cli/pairs_summary.h"

#include "cli/cli_args.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace gwb::app {

using gwb::app::cli::shown;
using gwb::engine::PairsEstimates;

void printPairsEstimates(const PairsEstimates& e, const std::function<std::string(size_t)>& label, bool estimated) {
    std::printf("%s\n", e.difference.verdict.c_str());
    // The ratio where the pairs have something to explain (exact runs); else the raw effect.
    const bool ratio = !estimated && e.difference.effect;
    const std::vector<double>& v = ratio ? e.ratio : e.raw;
    const std::vector<double>& lo = ratio ? e.ratioLow : e.rawLow;
    const std::vector<double>& hi = ratio ? e.ratioHigh : e.rawHigh;
    std::vector<size_t> order;
    for (size_t i = 0; i < v.size(); ++i)
        if (std::isfinite(v[i])) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return std::abs(v[a]) > std::abs(v[b]); });
    if (order.empty()) {
        std::printf("no cell has a defined value in any pair\n");
        return;
    }
    const char* what = estimated ? "mean estimated metric change (attribution, logits)"
                       : ratio   ? "ratio of means, sum(p - k) / sum(c - k)"
                                 : "mean raw effect p - k (logits; no ratio: nothing to localise)";
    std::printf("estimator: %s; %d%% paired bootstrap over pairs (%d resamples); * = Holm over %lld cells at "
                "0.05 (%lld marked)\n",
                what, static_cast<int>(std::lround(e.level * 100)), e.bootstrap, static_cast<long long>(e.tested),
                static_cast<long long>(e.markedCount));
    std::printf("top %zu cells:\n", std::min<size_t>(5, order.size()));
    for (size_t k = 0; k < order.size() && k < 5; ++k) {
        const size_t i = order[k];
        std::printf("  %s: %s [%s, %s]%s, n = %lld", label(i).c_str(), shown(v[i]).c_str(), shown(lo[i]).c_str(),
                    shown(hi[i]).c_str(), e.marked[i] ? " *" : "", static_cast<long long>(e.n[i]));
        if (ratio) std::printf("; raw %s logits", shown(e.raw[i]).c_str());
        if (!estimated && std::isfinite(e.meanOfRatios[i]))
            std::printf("; mean of ratios %s over %lld pairs (%lld below the threshold left out)",
                        shown(e.meanOfRatios[i]).c_str(), static_cast<long long>(e.meanOfRatiosN[i]),
                        static_cast<long long>(e.leftOut[i]));
        std::printf("\n");
    }
}

} // namespace gwb::app
