#include "gwb/engine/trace.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gwb::engine {

std::vector<float> attentionRow(const AttentionLayerTrace& layer, int64_t head, int64_t t) {
    const int64_t H = layer.q.dim(0), T = layer.q.dim(1), dh = layer.q.dim(2);
    if (head < 0 || head >= H || t < 0 || t >= T)
        throw std::out_of_range("attentionRow: head " + std::to_string(head) + " or token " + std::to_string(t) +
                                " out of range");
    std::vector<float> row(static_cast<size_t>(t + 1));
    if (!layer.attn.empty()) {
        const float* src = layer.attn.data.data() + (head * T + t) * T;
        std::copy(src, src + t + 1, row.begin());
        return row;
    }
    // Recompute softmax(q_t . k_j / sqrt(d_head)) for j <= t in double, then round once.
    const float* q = layer.q.data.data() + (head * T + t) * dh;
    const float* k = layer.k.data.data() + head * T * dh;
    const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
    std::vector<double> s(static_cast<size_t>(t + 1));
    double mx = -INFINITY;
    for (int64_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < dh; ++c)
            dot += static_cast<double>(q[c]) * k[j * dh + c];
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (auto& v : s) {
        v = std::exp(v - mx);
        sum += v;
    }
    for (int64_t j = 0; j <= t; ++j)
        row[j] = static_cast<float>(s[j] / sum);
    return row;
}

} // namespace gwb::engine
