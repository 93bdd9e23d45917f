#pragma once
// Metrics of one attention row / probability vector (workbench-spec.md section 1, "Attention").
// Rows are renormalized to sum 1 (in double) before use, so float rounding in the input does not
// leak into the entropies; negative, NaN/Inf or all-zero rows throw std::invalid_argument.

#include <cstdint>
#include <span>
#include <vector>

namespace gwb::geometry {

struct RowMetrics {
    double entropy = 0;       ///< H = -sum a log a (nats), 0 log 0 = 0
    double normEntropy = 0;   ///< H / log(n); NaN for n = 1 (no spread possible)
    double sparsity = 0;      ///< S(a) = E|a| / sqrt(E a^2): 1 for uniform, 1/sqrt(n) for one-hot
    double top1 = 0;          ///< largest probability
    double effSupport = 0;    ///< exp(H)
    double transportCost = 0; ///< sum_j a_j C_j; NaN when no cost vector was given
};

/// Metrics of a row a (length n >= 1) with optional transport cost C (length n or empty).
RowMetrics rowMetrics(std::span<const float> a, std::span<const double> cost = {});
RowMetrics rowMetrics(std::span<const double> a, std::span<const double> cost = {});

/// Metrics of the row a = softmax(x) (x: n >= 1 finite scores), in one pass from the scores with
/// one exp per entry and no log: with m = max x, e_j = exp(x_j - m) and Z = sum e_j,
/// H = log Z - sum e_j (x_j - m) / Z, top-1 = 1 / Z, sum a^2 = sum e_j^2 / Z^2. The cost is the
/// scores' own negative, C_j = -x_j (transportCost = -E_a[x]); scale it for another one. Equal to
/// rowMetrics of the exact softmax up to double rounding (not of a float-rounded one). The exps
/// run on AVX-512 or AVX2 lanes when the CPU has them (within 2 ulp of std::exp; entries below
/// exp(-708) of the largest count as 0); `kernel` ("avx512", "avx2" or "scalar": std::exp) picks
/// one for tests, nullptr the fastest this CPU runs.
RowMetrics softmaxRowMetrics(std::span<const double> x, const char* kernel = nullptr);
/// Whether this CPU runs softmaxRowMetrics's kernel of that name.
bool softmaxKernelAvailable(const char* kernel);

/// Metrics of every causal row of a dense probability array of `blocks` x T x T (e.g. heads):
/// row (b, t) uses entries 0..t. cost (same shape) may be null. Result has blocks*T entries.
std::vector<RowMetrics> causalRowMetrics(const float* probs, const float* cost, int64_t blocks, int64_t T);

/// Entropy (nats) of p after renormalization.
double entropy(std::span<const double> p);

/// Jensen-Shannon divergence (nats, in [0, log 2]) between p and q after renormalizing each.
/// Throws on length mismatch, empty, negative, non-finite or all-zero input.
double jensenShannon(std::span<const double> p, std::span<const double> q);

} // namespace gwb::geometry
