#include "gwb/views/row_comparison.h"

#include <algorithm>
#include <cmath>

namespace gwb::views {

RowComparison compareDistributions(const std::vector<float>& a, const std::vector<float>& b) {
    // Screen rows may hold NaN (undefined) or differ in length; the engine's compareRows (the one
    // definition of JS and top-1) wants equal-length, finite, non-negative rows with a nonzero sum.
    const size_t n = std::min(a.size(), b.size());
    auto clean = [n](const std::vector<float>& v, double* sum) {
        std::vector<float> out(n);
        *sum = 0;
        for (size_t i = 0; i < n; ++i) {
            out[i] = std::isfinite(v[i]) && v[i] > 0 ? v[i] : 0.0f;
            *sum += out[i];
        }
        return out;
    };
    double sa = 0, sb = 0;
    const std::vector<float> ca = clean(a, &sa), cb = clean(b, &sb);
    RowComparison r;
    if (!(sa > 0) || !(sb > 0)) {
        r.jsDivergence = std::nan("");
        return r;
    }
    const gwb::engine::RowAgreement e = gwb::engine::compareRows(ca, cb);
    r.jsDivergence = e.jsDivergence;
    r.top1Agrees = e.top1Agrees;
    return r;
}

std::vector<float> influenceRow(const gwb::engine::GrassmannLayerAnalysis& layer, int64_t t) {
    std::vector<float> row(static_cast<size_t>(t + 1), 0.0f);
    if (layer.influence.empty() || t >= layer.influence.dim(0)) return row;
    for (size_t o = 0; o < layer.offsets.size(); ++o) {
        const int64_t j = t - layer.offsets[o];
        const float v = layer.influence.at2(t, static_cast<int64_t>(o));
        if (j >= 0 && std::isfinite(v)) row[static_cast<size_t>(j)] = v;
    }
    return row;
}

} // namespace gwb::views
