#pragma once
// The engine's row kernels on the CPU, each a few passes over one row while it is in cache, rows
// split over the engine's threads (gwb::engine::threads()):
// - scanRows, for the surprisal and the logit lens: a logits row's maximum and log-sum-exp, its K
//   largest entries, and the logit and rank of the next token (in place of amax, subtract, exp,
//   sum, topk, compare and count: seven passes over the block, most of them out of cache);
// - softmaxMinusOneHotRows, the rows of the training loss and their gradient;
// - causalSoftmaxRows and its backward, the causal Transformer's attention weights.

#include <cstdint>
#include <vector>

namespace gwb::engine::detail {

struct RowScan {
    std::vector<float> max;      ///< n: the row's largest logit (NaN when the row has a NaN)
    std::vector<float> lse;      ///< n: log sum_v exp(row[v]) (NaN when the row has a NaN)
    std::vector<float> topValue; ///< n x K logits, descending; the lower index first among equals
    std::vector<int32_t> topId;  ///< n x K vocabulary ids (-1 where V < K)
    std::vector<float> target;   ///< m: the logit of next[i]
    std::vector<int32_t> above;  ///< m: how many entries of row i exceed target[i] (its rank, 0 = top)
};

/// Which code runs: the widest the CPU has (Auto: scanRows uses AVX-512 where the CPU has it,
/// the other kernels AVX2), the AVX2 kernels (Avx2, where the CPU has them), or the portable one.
enum class RowKernel { Auto, Avx2, Portable };

/// Scans rows [0, n) of `logits` (row-major, n x V). K may be 0 (no top-K); rows i < m also get
/// the logit and rank of next[i] (next may be null when m = 0). The AVX-512 and AVX2 kernels'
/// exponential has a relative error of about 1e-7 per term (summed in double); the portable
/// kernel uses the C library's.
RowScan scanRows(const float* logits, int64_t n, int64_t V, int64_t K, const int64_t* next, int64_t m,
                 RowKernel kernel = RowKernel::Auto);

/// The cross-entropy rows of the training loss, in place: for each row i in [0, n) of `logits`
/// (row-major, n x V), lse[i] = log sum_v exp(row[v]) and picked[i] = row[target[i]], and the row
/// is replaced by softmax(row) - onehot(target[i]), the row's gradient of lse[i] - picked[i].
/// Three passes over a row (max, sum of exponentials in double, the softmax); same exponential as
/// scanRows. A row with a NaN or an
/// infinity gives lse = NaN or +-inf as log_softmax would, and a row of NaN.
void softmaxMinusOneHotRows(float* logits, int64_t n, int64_t V, const int64_t* target, float* lse, float* picked,
                            RowKernel kernel = RowKernel::Auto);

/// Causal attention weights, row by row: `rows` rows of `keys` scores (row-major), where row r is
/// query i = r % n of a chunk whose first query sits at position `offset`, so it sees keys
/// 0 .. offset + i. out = softmax(scale * row) over those keys and 0 after them (what masking the
/// future with -inf and a softmax give). in and out may be the same buffer.
void causalSoftmaxRows(const float* in, float* out, int64_t rows, int64_t n, int64_t keys, int64_t offset, float scale,
                       RowKernel kernel = RowKernel::Auto);

/// Its backward: from the weights p and their gradient g, out = scale * p * (g - sum_j g_j p_j)
/// over the visible keys and 0 after them. out may be g's buffer.
void causalSoftmaxBackwardRows(const float* p, const float* g, float* out, int64_t rows, int64_t n, int64_t keys,
                               int64_t offset, float scale, RowKernel kernel = RowKernel::Auto);

/// True when RowKernel::Auto runs the AVX2 kernels on this CPU.
bool rowScanUsesAvx2();

/// True when scanRows with RowKernel::Auto runs its AVX-512 kernel on this CPU. (OpenBLAS's
/// kernels may still be pinned to AVX2 by OPENBLAS_CORETYPE: that setting is OpenBLAS's alone.)
bool rowScanUsesAvx512();

} // namespace gwb::engine::detail
