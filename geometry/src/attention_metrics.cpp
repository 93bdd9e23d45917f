#include "gwb/geometry/attention_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace gwb::geometry {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

template <typename T> std::vector<double> normalized(std::span<const T> a, const char* what) {
    if (a.empty()) throw std::invalid_argument(std::string(what) + ": empty row");
    double sum = 0;
    for (T v : a) {
        if (!std::isfinite(static_cast<double>(v)))
            throw std::invalid_argument(std::string(what) + ": row contains NaN or Inf");
        if (v < 0) throw std::invalid_argument(std::string(what) + ": row has a negative entry");
        sum += static_cast<double>(v);
    }
    if (sum <= 0) throw std::invalid_argument(std::string(what) + ": row sums to zero");
    std::vector<double> p(a.size());
    for (size_t j = 0; j < a.size(); ++j)
        p[j] = static_cast<double>(a[j]) / sum;
    return p;
}

double entropyOf(const std::vector<double>& p) {
    double h = 0;
    for (double v : p)
        if (v > 0) h -= v * std::log(v);
    return std::max(h, 0.0);
}

template <typename T> RowMetrics metricsImpl(std::span<const T> a, std::span<const double> cost) {
    const std::vector<double> p = normalized(a, "rowMetrics");
    if (!cost.empty() && cost.size() != p.size())
        throw std::invalid_argument("rowMetrics: cost has " + std::to_string(cost.size()) + " entries, row has " +
                                    std::to_string(p.size()));
    RowMetrics m;
    const auto n = static_cast<double>(p.size());
    m.entropy = entropyOf(p);
    m.normEntropy = p.size() > 1 ? m.entropy / std::log(n) : kNaN;
    double sumSq = 0;
    for (double v : p)
        sumSq += v * v;
    // E|a| / sqrt(E a^2) with sum |a| = 1 after normalization.
    m.sparsity = (1.0 / n) / std::sqrt(sumSq / n);
    m.top1 = *std::max_element(p.begin(), p.end());
    m.effSupport = std::exp(m.entropy);
    if (cost.empty()) {
        m.transportCost = kNaN;
    } else {
        double c = 0;
        for (size_t j = 0; j < p.size(); ++j) {
            if (!std::isfinite(cost[j])) throw std::invalid_argument("rowMetrics: cost contains NaN or Inf");
            c += p[j] * cost[j];
        }
        m.transportCost = c;
    }
    return m;
}
} // namespace

RowMetrics rowMetrics(std::span<const float> a, std::span<const double> cost) {
    return metricsImpl(a, cost);
}
RowMetrics rowMetrics(std::span<const double> a, std::span<const double> cost) {
    return metricsImpl(a, cost);
}

RowMetrics softmaxRowMetrics(std::span<const double> x) {
    if (x.empty()) throw std::invalid_argument("softmaxRowMetrics: empty row");
    double m = -std::numeric_limits<double>::infinity();
    for (double v : x) {
        if (!std::isfinite(v)) throw std::invalid_argument("softmaxRowMetrics: scores contain NaN or Inf");
        m = std::max(m, v);
    }
    double z = 0, ex = 0, sq = 0; // sum e, sum e (x - m), sum e^2
    for (double v : x) {
        const double d = v - m, e = std::exp(d);
        z += e;
        ex += e * d;
        sq += e * e;
    }
    RowMetrics r;
    const auto n = static_cast<double>(x.size());
    r.entropy = std::max(std::log(z) - ex / z, 0.0);
    r.normEntropy = x.size() > 1 ? r.entropy / std::log(n) : kNaN;
    r.sparsity = (1.0 / n) / std::sqrt(sq / (z * z) / n);
    r.top1 = 1.0 / z;
    r.effSupport = std::exp(r.entropy);
    r.transportCost = -(ex / z + m);
    return r;
}

std::vector<RowMetrics> causalRowMetrics(const float* probs, const float* cost, int64_t blocks, int64_t T) {
    if (probs == nullptr || blocks <= 0 || T <= 0)
        throw std::invalid_argument("causalRowMetrics: empty probability array");
    std::vector<RowMetrics> out;
    out.reserve(static_cast<size_t>(blocks * T));
    std::vector<double> c;
    for (int64_t b = 0; b < blocks; ++b)
        for (int64_t t = 0; t < T; ++t) {
            const int64_t base = (b * T + t) * T;
            const std::span<const float> row(probs + base, static_cast<size_t>(t + 1));
            if (cost) {
                c.assign(cost + base, cost + base + t + 1);
                out.push_back(rowMetrics(row, c));
            } else {
                out.push_back(rowMetrics(row));
            }
        }
    return out;
}

double entropy(std::span<const double> p) {
    return entropyOf(normalized(p, "entropy"));
}

double jensenShannon(std::span<const double> pIn, std::span<const double> qIn) {
    if (pIn.size() != qIn.size())
        throw std::invalid_argument("jensenShannon: rows have different lengths (" + std::to_string(pIn.size()) +
                                    " vs " + std::to_string(qIn.size()) + ")");
    const std::vector<double> p = normalized(pIn, "jensenShannon"), q = normalized(qIn, "jensenShannon");
    double js = 0;
    for (size_t j = 0; j < p.size(); ++j) {
        const double m = 0.5 * (p[j] + q[j]);
        if (p[j] > 0) js += 0.5 * p[j] * std::log(p[j] / m);
        if (q[j] > 0) js += 0.5 * q[j] * std::log(q[j] / m);
    }
    return std::clamp(js, 0.0, std::log(2.0));
}

} // namespace gwb::geometry
