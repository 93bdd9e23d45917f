#pragma once
// Compute device and thread settings of the engine. Std types only.

#include <string>

namespace gwb::engine {

/// True when the engine was built with CUDA and a GPU is usable.
bool cudaAvailable();
/// "auto" (CUDA when available, else CPU), "cpu" or "cuda" / "cuda:N" -> a concrete device name
/// ("cpu", "cuda:0"). Throws std::invalid_argument for an unknown name or CUDA when unavailable.
std::string resolveDevice(const std::string& choice);
/// Intra-op threads; n <= 0 means all cores. Without a call, the engine configures itself as
/// setThreads(0) the first time it needs threads (a model is made or loaded, threads() is asked):
/// every core, and with OpenBLAS one thread pool. Ask for fewer with setThreads(n). While a
/// ScopedThreads is alive, the count in effect is at most its count.
void setThreads(int n);
int threads();
namespace detail {
/// Applies setThreads(0) unless a thread count is already configured (engine-internal).
void useDefaultThreads();
} // namespace detail

/// At most n threads for as long as it lives. Scopes may overlap and end in any order (the
/// window's lanes run a corpus pass and a pairs run at once): while any is alive the engine runs
/// on the smallest of their counts and the caller's setThreads count; when the last one ends, on
/// the caller's count again. Thread-safe.
class ScopedThreads {
public:
    explicit ScopedThreads(int n);
    ~ScopedThreads();
    ScopedThreads(const ScopedThreads&) = delete;
    ScopedThreads& operator=(const ScopedThreads&) = delete;

private:
    int m_n;
};
/// One line: "cpu, 2 threads" / "cuda:0 (NVIDIA ...), CPU threads 16".
std::string deviceSummary(const std::string& device);
/// One line on the BLAS behind LibTorch's CPU products: OpenBLAS's build and kernel set, whether
/// OPENBLAS_CORETYPE pins the kernels (or the engine did: when OpenBLAS does not know the CPU and
/// falls back to its generic Prescott kernels, the engine's first thread setting swaps in the
/// SkylakeX or Haswell kernels the CPU runs, unless OPENBLAS_CORETYPE is set), and how long idle
/// workers spin (OPENBLAS_THREAD_TIMEOUT); or that the BLAS is not OpenBLAS (MKL in a pip LibTorch).
std::string blasSummary();
/// One line on the engine's own CPU kernels: which form of the packed inference products runs
/// (AVX-512 or AVX2; every inference product of a Dense layer and the tied head) or that this CPU
/// has neither and LibTorch's BLAS runs them; training's products always go through the BLAS.
std::string kernelSummary();

} // namespace gwb::engine
