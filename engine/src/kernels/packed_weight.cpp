#include "kernels/packed_weight.h"

#include "gwb/engine/device.h"

#include <unistd.h>

#include <atomic>

namespace gwb::engine::detail {

namespace {

std::atomic<int64_t> g_bytes{0};

std::atomic<int64_t>& budget() {
    static std::atomic<int64_t> b{[] {
        const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size / 4 : int64_t{1} << 30;
    }()};
    return b;
}

bool usable(const torch::Tensor& t) {
    return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat;
}

/// Rows of x when the packed product applies to x, w and bias; -1 otherwise.
int64_t packedRows(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
    if (!packedGemmAvailable() || !cpuInference(x) || !cpuInference(w) || w.dim() != 2 || x.dim() < 1 ||
        x.size(-1) != w.size(1) || w.size(1) == 0 ||
        (bias.defined() && (!cpuInference(bias) || bias.numel() != w.size(0))))
        return -1;
    return x.numel() / w.size(1);
}

/// out (rows x n, contiguous) = x w^T (+ bias) over the packed w.
void multiply(torch::Tensor& out, const torch::Tensor& x, const torch::Tensor& bias, const PackedMatrix& w,
              int64_t rows) {
    const torch::Tensor xc = x.contiguous();
    const torch::Tensor bc = bias.defined() ? bias.contiguous() : bias;
    packedGemm(xc.data_ptr<float>(), rows, w.cols(), w, bc.defined() ? bc.data_ptr<float>() : nullptr,
               out.data_ptr<float>(), w.rows(), threads());
}

} // namespace

bool cpuInference(const torch::Tensor& t) {
    return usable(t) && (!torch::GradMode::is_enabled() || !t.requires_grad());
}

int64_t packedWeightBudget() {
    return budget().load();
}

int64_t setPackedWeightBudget(int64_t bytes) {
    return budget().exchange(bytes);
}

int64_t packedWeightBytes() {
    return g_bytes.load();
}

PackedWeight::~PackedWeight() {
    g_bytes -= m_bytes;
}

void PackedWeight::release() {
    g_bytes -= m_bytes;
    m_bytes = 0;
    m_packed.reset();
    m_data = nullptr;
}

std::shared_ptr<const PackedMatrix> PackedWeight::get(const torch::Tensor& w) {
    if (!packedGemmAvailable() || !usable(w) || w.dim() != 2) return nullptr;
    // Inference tensors keep no version counter; a parameter is never one, but a tensor made
    // under InferenceMode could be: its storage alone keys it then.
    const int64_t version = w.is_inference() ? 0 : static_cast<int64_t>(w._version());
    const std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_packed || m_data != w.data_ptr() || m_version != version || m_packed->rows() != w.size(0) ||
        m_packed->cols() != w.size(1)) {
        release();
        const int64_t bytes =
            (w.size(0) + PackedMatrix::kPanel - 1) / PackedMatrix::kPanel * PackedMatrix::kPanel * w.size(1) * 4;
        if (g_bytes.load() + bytes > budget().load()) return nullptr;
        const torch::Tensor c = w.contiguous();
        m_packed = std::make_shared<const PackedMatrix>(c.data_ptr<float>(), c.size(0), c.size(1), c.size(1));
        m_data = w.data_ptr();
        m_version = version;
        m_bytes = bytes;
        g_bytes += bytes;
    }
    return m_packed;
}

bool packedLinearOut(torch::Tensor& out, const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                     PackedWeight& packed) {
    const int64_t rows = packedRows(x, w, bias);
    if (rows < 0 || !usable(out) || !out.is_contiguous() || out.numel() != rows * w.size(0)) return false;
    const auto p = packed.get(w);
    if (!p) return false;
    multiply(out, x, bias, *p, rows);
    return true;
}

torch::Tensor packedLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias,
                           PackedWeight& packed) {
    const int64_t rows = packedRows(x, w, bias);
    const auto p = rows < 0 ? nullptr : packed.get(w);
    if (!p) return {};
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = w.size(0);
    torch::Tensor out = torch::empty(sizes, x.options());
    multiply(out, x, bias, *p, rows);
    return out;
}

} // namespace gwb::engine::detail
