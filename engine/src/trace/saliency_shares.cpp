#include "gwb/engine/saliency.h"

#include <algorithm>
#include <cmath>

namespace gwb::engine {

std::vector<float> saliencyShares(const std::vector<float>& s, int64_t t) {
    const int64_t n = std::min<int64_t>(t + 1, static_cast<int64_t>(s.size()));
    std::vector<float> out(static_cast<size_t>(std::max<int64_t>(n, 0)), 0.0f);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j)
        if (std::isfinite(s[static_cast<size_t>(j)])) sum += std::abs(s[static_cast<size_t>(j)]);
    if (!(sum > 0)) return out;
    for (int64_t j = 0; j < n; ++j)
        out[static_cast<size_t>(j)] = std::isfinite(s[static_cast<size_t>(j)])
                                          ? static_cast<float>(std::abs(s[static_cast<size_t>(j)]) / sum)
                                          : 0;
    return out;
}

} // namespace gwb::engine
