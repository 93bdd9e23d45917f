#pragma once
// A weight tensor's packed copy for detail::packedGemm, and the inference-time products over it
// (engine-internal; Torch types).

#include "kernels/packed_gemm.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <mutex>

namespace gwb::engine::detail {

/// The packed form of one weight tensor, rebuilt when the tensor's storage or version counter
/// moves (an optimizer step, a load, a copy_ into it). Thread-safe.
class PackedWeight {
public:
    PackedWeight() = default;
    PackedWeight(const PackedWeight&) = delete;
    PackedWeight& operator=(const PackedWeight&) = delete;
    ~PackedWeight();

    /// The packed form of w (n x k), or null where packedGemm does not run (no AVX2, a device
    /// tensor, not float) or where the copy would take the process's packed copies past their
    /// budget (packedWeightBudget()).
    std::shared_ptr<const PackedMatrix> get(const torch::Tensor& w);

private:
    void release(); // with m_mutex held
    std::mutex m_mutex;
    std::shared_ptr<const PackedMatrix> m_packed;
    const void* m_data = nullptr;
    int64_t m_version = -1;
    int64_t m_bytes = 0;
};

/// The most memory all packed copies in the process may take together: a quarter of the
/// machine's physical memory unless set. Past it, products keep LibTorch's path (each packed copy
/// doubles its weight's memory; a large model on a small machine must still run).
int64_t packedWeightBudget();
/// Sets the budget in bytes (tests); returns the previous one.
int64_t setPackedWeightBudget(int64_t bytes);
/// Bytes the packed copies take now.
int64_t packedWeightBytes();

/// True for a defined CPU float tensor that needs no gradient here (grad mode off, or it does not
/// require one): where the engine's inference kernels (the packed products, the one-pass wedge and
/// generation step) may replace LibTorch's operations.
bool cpuInference(const torch::Tensor& t);

/// out = x w^T (+ bias) through packedGemm, when it runs here and nothing needs a gradient: x is
/// ... x k (CPU float), w is n x k, out a contiguous CPU float tensor of x's rows x n. Returns
/// false, with out untouched, when the caller should use LibTorch's product instead.
bool packedLinearOut(torch::Tensor& out, const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                     PackedWeight& packed);

/// x w^T (+ bias) as a new tensor of shape x.shape[:-1] + [n] through packedGemm, or an
/// undefined tensor when the caller should use LibTorch's product instead.
torch::Tensor packedLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                           PackedWeight& packed);

} // namespace gwb::engine::detail
