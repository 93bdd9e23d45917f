#include "gwb/views/corpus_summary.h"

#include <algorithm>
#include <cmath>

namespace gwb::views {

bool isLogEdges(const std::vector<double>& e) {
    if (e.size() < 3 || !(e.front() > 0)) return false;
    const double r = e[1] / e[0];
    if (!(r > 1.0001)) return false;
    for (size_t i = 1; i + 1 < e.size(); ++i)
        if (std::abs(e[i + 1] / e[i] - r) > 1e-6 * r) return false;
    return true;
}

double histogramQuantile(const std::vector<double>& edges, const std::vector<int64_t>& counts, double q) {
    const size_t B = edges.size() < 2 ? 0 : edges.size() - 1;
    if (B == 0 || counts.size() != B + 2) return DistributionSummary::kNaN;
    int64_t total = 0;
    for (int64_t c : counts)
        total += c;
    if (total <= 0) return DistributionSummary::kNaN;
    const bool logScale = isLogEdges(edges);
    const double target = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
    double before = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
        const auto c = static_cast<double>(counts[k]);
        if (c <= 0 || before + c < target) {
            before += c;
            continue;
        }
        if (k == 0) return edges.front();
        if (k == B + 1) return edges.back();
        const double lo = edges[k - 1], hi = edges[k];
        const double f = std::clamp((target - before) / c, 0.0, 1.0);
        return logScale ? lo * std::pow(hi / lo, f) : lo + f * (hi - lo);
    }
    return edges.back();
}

DistributionSummary summarize(const gwb::engine::StatQuantity& q, const std::vector<int64_t>& groups) {
    DistributionSummary s;
    const int64_t G = q.groups(), width = q.bins() + 2;
    s.counts.assign(static_cast<size_t>(std::max<int64_t>(0, width)), 0);
    double sum = 0, sumSq = 0;
    for (int64_t g : groups) {
        if (g < 0 || g >= G) continue;
        const auto gi = static_cast<size_t>(g);
        if (gi < q.n.size()) s.n += q.n[gi];
        if (gi < q.sum.size()) sum += q.sum[gi];
        if (gi < q.sumSq.size()) sumSq += q.sumSq[gi];
        for (int64_t b = 0; b < width; ++b) {
            const auto i = static_cast<size_t>(g * width + b);
            if (i < q.counts.size()) s.counts[static_cast<size_t>(b)] += q.counts[i];
        }
    }
    if (s.n > 0) s.mean = sum / static_cast<double>(s.n);
    if (s.n > 1) {
        const double n = static_cast<double>(s.n);
        s.sd = std::sqrt(std::max(0.0, (sumSq - sum * sum / n) / (n - 1)));
        const double half = 1.959963984540054 * s.sd / std::sqrt(n);
        s.ciLow = s.mean - half;
        s.ciHigh = s.mean + half;
    }
    if (!s.counts.empty()) {
        s.below = s.counts.front();
        s.above = s.counts.back();
    }
    s.p025 = histogramQuantile(q.edges, s.counts, 0.025);
    s.q1 = histogramQuantile(q.edges, s.counts, 0.25);
    s.median = histogramQuantile(q.edges, s.counts, 0.5);
    s.q3 = histogramQuantile(q.edges, s.counts, 0.75);
    s.p975 = histogramQuantile(q.edges, s.counts, 0.975);
    return s;
}

std::vector<double> positionMean(const gwb::engine::StatQuantity& q, const std::vector<int64_t>& groups) {
    const int64_t P = q.positions, G = q.groups();
    if (P <= 0) return {};
    std::vector<double> sum(static_cast<size_t>(P), 0.0), n(static_cast<size_t>(P), 0.0);
    for (int64_t g : groups) {
        if (g < 0 || g >= G) continue;
        for (int64_t t = 0; t < P; ++t) {
            const auto i = static_cast<size_t>(g * P + t);
            if (i >= q.posN.size() || i >= q.posSum.size()) continue;
            n[static_cast<size_t>(t)] += static_cast<double>(q.posN[i]);
            sum[static_cast<size_t>(t)] += q.posSum[i];
        }
    }
    std::vector<double> out(static_cast<size_t>(P), DistributionSummary::kNaN);
    for (size_t t = 0; t < out.size(); ++t)
        if (n[t] > 0) out[t] = sum[t] / n[t];
    return out;
}

int64_t corpusTokens(const gwb::engine::CorpusStats& stats) {
    const auto windows = static_cast<int64_t>(stats.windows.size());
    for (const char* role : {"model", "baseline"}) {
        const auto it = stats.totals.find(std::string(role) + ".tokens_scored");
        if (it != stats.totals.end()) return static_cast<int64_t>(std::llround(it->second)) + windows;
    }
    return 0;
}

} // namespace gwb::views
