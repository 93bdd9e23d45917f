#include "gwb/geometry/attention_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GWB_METRICS_X86 1
// GCC 12's AVX-512 headers pass _mm256_undefined_pd() into the reductions' extracts
// (_mm512_reduce_add_pd), which -Wuninitialized flags inside the header itself.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

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

namespace {
/// sum e, sum e d and sum e^2 over e = exp(d), d = x_j - m <= 0 (the softmax row's unnormalised
/// entries): what softmaxRowMetrics needs of a row.
struct ExpSums {
    double z = 0, ex = 0, sq = 0;
};

/// max x and whether every x is finite (x - x is 0 for a finite x, NaN for NaN or Inf).
struct RowMax {
    double max = 0;
    bool finite = true;
};

RowMax rowMaxScalar(const double* x, size_t n) {
    RowMax out{-std::numeric_limits<double>::infinity(), true};
    for (size_t j = 0; j < n; ++j) {
        out.finite = out.finite && std::isfinite(x[j]);
        out.max = std::max(out.max, x[j]);
    }
    return out;
}

ExpSums expSumsScalar(const double* x, size_t n, double m) {
    ExpSums s;
    for (size_t j = 0; j < n; ++j) {
        const double d = x[j] - m, e = std::exp(d);
        s.z += e;
        s.ex += e * d;
        s.sq += e * e;
    }
    return s;
}

#if GWB_METRICS_X86
// exp(d) for d <= 0 on vector lanes: d = k ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts, so r
// is exact to ~1e-20), exp(r) by its Taylor series to r^13 (the next term is below 2e-16 of it),
// then times 2^k. Within 2 ulp of std::exp; d below -708 (exp(d) < 3e-308, nothing next to the
// row's largest entry, which is 1) gives 0. A long prompt's attention rows are ~10^9 entries, each
// an exp: scalar std::exp took most of a 4,096-token Transformer analysis.
constexpr double kLog2e = 1.4426950408889634, kLn2Hi = 0.693147180369123816490, kLn2Lo = 1.90821492927058770002e-10;
constexpr double kUnderflow = -708.0;
constexpr double kTaylor[14] = {
    1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,       1.0 / 720,
    1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};

__attribute__((target("avx512f"), always_inline)) inline __m512d exp8(__m512d d) {
    const __m512d k =
        _mm512_roundscale_pd(_mm512_mul_pd(d, _mm512_set1_pd(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Hi), d);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(kLn2Lo), r);
    __m512d p = _mm512_set1_pd(kTaylor[13]);
    for (int i = 12; i >= 0; --i)
        p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(kTaylor[i]));
    const __m512d e = _mm512_scalef_pd(p, k);
    return _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(d, _mm512_set1_pd(kUnderflow), _CMP_GE_OQ), e);
}

__attribute__((target("avx512f"))) RowMax rowMax512(const double* x, size_t n) {
    const __m512d low = _mm512_set1_pd(-std::numeric_limits<double>::infinity()), zero = _mm512_setzero_pd();
    __m512d m = low;
    __mmask8 bad = 0;
    for (size_t j = 0; j < n; j += 8) { // lanes past the row read -inf and are not checked
        const auto mask = static_cast<__mmask8>(n - j >= 8 ? 0xFFu : (1u << (n - j)) - 1u);
        const __m512d v = _mm512_mask_loadu_pd(low, mask, x + j);
        bad |= _mm512_mask_cmp_pd_mask(mask, _mm512_sub_pd(v, v), zero, _CMP_NEQ_UQ);
        m = _mm512_max_pd(m, v);
    }
    return {_mm512_reduce_max_pd(m), bad == 0};
}

__attribute__((target("avx2,fma"))) RowMax rowMax256(const double* x, size_t n) {
    const __m256d zero = _mm256_setzero_pd();
    __m256d m = _mm256_set1_pd(-std::numeric_limits<double>::infinity()), bad = zero;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const __m256d v = _mm256_loadu_pd(x + j);
        bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_sub_pd(v, v), zero, _CMP_NEQ_UQ));
        m = _mm256_max_pd(m, v);
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, m);
    RowMax out = rowMaxScalar(x + j, n - j);
    out.finite = out.finite && _mm256_movemask_pd(bad) == 0;
    for (double v : lanes)
        out.max = std::max(out.max, v);
    return out;
}

__attribute__((target("avx512f"))) ExpSums expSums512(const double* x, size_t n, double m) {
    const __m512d vm = _mm512_set1_pd(m);
    __m512d z = _mm512_setzero_pd(), ex = z, sq = z;
    for (size_t j = 0; j < n; j += 8) {
        // Lanes past the row (the tail) read m, so d = 0, and their e is zeroed.
        const auto mask = static_cast<__mmask8>(n - j >= 8 ? 0xFFu : (1u << (n - j)) - 1u);
        const __m512d d = _mm512_sub_pd(_mm512_mask_loadu_pd(vm, mask, x + j), vm);
        const __m512d e = _mm512_maskz_mov_pd(mask, exp8(d));
        z = _mm512_add_pd(z, e);
        ex = _mm512_fmadd_pd(e, d, ex);
        sq = _mm512_fmadd_pd(e, e, sq);
    }
    return {_mm512_reduce_add_pd(z), _mm512_reduce_add_pd(ex), _mm512_reduce_add_pd(sq)};
}

__attribute__((target("avx2,fma"), always_inline)) inline __m256d exp4(__m256d d) {
    const __m256d ok = _mm256_cmp_pd(d, _mm256_set1_pd(kUnderflow), _CMP_GE_OQ);
    d = _mm256_max_pd(d, _mm256_set1_pd(kUnderflow)); // k >= -1022: 2^k is a normal number
    const __m256d k =
        _mm256_round_pd(_mm256_mul_pd(d, _mm256_set1_pd(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Hi), d);
    r = _mm256_fnmadd_pd(k, _mm256_set1_pd(kLn2Lo), r);
    __m256d p = _mm256_set1_pd(kTaylor[13]);
    for (int i = 12; i >= 0; --i)
        p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(kTaylor[i]));
    // 2^k from its bits: k + 1023 in the exponent field (k + 2^52 + 2^51 holds k in its low bits).
    const __m256d shifter = _mm256_set1_pd(6755399441055744.0); // 2^52 + 2^51
    const __m256i kBits = _mm256_castpd_si256(_mm256_add_pd(k, shifter));
    const __m256i biased =
        _mm256_add_epi64(_mm256_sub_epi64(kBits, _mm256_castpd_si256(shifter)), _mm256_set1_epi64x(1023));
    const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52));
    return _mm256_and_pd(_mm256_mul_pd(p, scale), ok);
}

__attribute__((target("avx2,fma"))) ExpSums expSums256(const double* x, size_t n, double m) {
    const __m256d vm = _mm256_set1_pd(m);
    __m256d z = _mm256_setzero_pd(), ex = z, sq = z;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const __m256d d = _mm256_sub_pd(_mm256_loadu_pd(x + j), vm), e = exp4(d);
        z = _mm256_add_pd(z, e);
        ex = _mm256_fmadd_pd(e, d, ex);
        sq = _mm256_fmadd_pd(e, e, sq);
    }
    alignas(32) double lanes[3][4];
    _mm256_store_pd(lanes[0], z);
    _mm256_store_pd(lanes[1], ex);
    _mm256_store_pd(lanes[2], sq);
    ExpSums s = expSumsScalar(x + j, n - j, m); // the tail
    for (int l = 0; l < 4; ++l) {
        s.z += lanes[0][l];
        s.ex += lanes[1][l];
        s.sq += lanes[2][l];
    }
    return s;
}
#endif

struct SoftmaxKernel {
    RowMax (*max)(const double*, size_t) = nullptr;
    ExpSums (*sums)(const double*, size_t, double) = nullptr;
};

/// The kernel of that name (nullptr: the fastest this CPU runs); empty when the CPU lacks it.
SoftmaxKernel softmaxKernel(const char* name) {
    const std::string want = name ? name : "";
#if GWB_METRICS_X86
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (want == "avx512" || (want.empty() && avx512))
        return avx512 ? SoftmaxKernel{rowMax512, expSums512} : SoftmaxKernel{};
    if (want == "avx2" || (want.empty() && avx2)) return avx2 ? SoftmaxKernel{rowMax256, expSums256} : SoftmaxKernel{};
#endif
    if (want.empty() || want == "scalar") return {rowMaxScalar, expSumsScalar};
    return {};
}
} // namespace

bool softmaxKernelAvailable(const char* kernel) {
    return kernel != nullptr && softmaxKernel(kernel).sums != nullptr;
}

RowMetrics softmaxRowMetrics(std::span<const double> x, const char* kernel) {
    if (x.empty()) throw std::invalid_argument("softmaxRowMetrics: empty row");
    static const SoftmaxKernel fastest = softmaxKernel(nullptr);
    const SoftmaxKernel k = kernel ? softmaxKernel(kernel) : fastest;
    if (!k.sums) throw std::invalid_argument(std::string("softmaxRowMetrics: this CPU has no kernel '") + kernel + "'");
    const RowMax top = k.max(x.data(), x.size());
    if (!top.finite) throw std::invalid_argument("softmaxRowMetrics: scores contain NaN or Inf");
    const double m = top.max;
    const ExpSums s = k.sums(x.data(), x.size(), m);
    const double z = s.z, ex = s.ex, sq = s.sq; // sum e, sum e (x - m), sum e^2
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
