// Device resolution and thread count.

#include "gwb/engine/device.h"

#include "kernels/packed_gemm.h"

#include <torch/torch.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace gwb::engine {

bool cudaAvailable() {
    return torch::cuda::is_available();
}

std::string resolveDevice(const std::string& choice) {
    if (choice.empty() || choice == "auto") return cudaAvailable() ? "cuda:0" : "cpu";
    if (choice == "cpu") return "cpu";
    if (choice == "cuda" || choice.rfind("cuda:", 0) == 0) {
        if (!cudaAvailable())
            throw std::invalid_argument("device '" + choice + "' requested but this build has no usable CUDA GPU");
        const std::string name = choice == "cuda" ? "cuda:0" : choice;
        try {
            const torch::Device dev(name);
            if (dev.index() >= static_cast<int>(torch::cuda::device_count()))
                throw std::invalid_argument("device '" + choice + "' does not exist (" +
                                            std::to_string(torch::cuda::device_count()) + " GPUs)");
        } catch (const c10::Error&) {
            throw std::invalid_argument("device '" + choice + "' is not a valid device name");
        }
        return name;
    }
    throw std::invalid_argument("device must be auto, cpu or cuda (got '" + choice + "')");
}

namespace {

std::atomic<int> g_threads{0}; // the count in effect; 0: no count configured yet
std::mutex g_defaultThreads;
// The caller's count (setThreads) and the counts of the ScopedThreads alive; the count in effect
// is the smallest of them. Guarded by g_scopes.
std::mutex g_scopes;
int g_base = 0;
std::multiset<int> g_scoped;

/// OpenBLAS's thread setter when OpenBLAS is the BLAS in this process (Debian's LibTorch), else null.
using SetBlasThreads = void (*)(int);
SetBlasThreads openBlasSetter() {
    static const SetBlasThreads f = reinterpret_cast<SetBlasThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    return f;
}

/// OpenBLAS's kernel set the engine put in place (empty: OpenBLAS chose its own, or no OpenBLAS).
std::string g_blasPinned;

/// OpenBLAS with DYNAMIC_ARCH picks its kernels by CPU model when it loads, and a model it does not
/// know gets its generic Prescott (SSE3) kernels. Debian 12's 0.3.21 does not know recent Xeons:
/// on one (AVX-512, AVX-VNNI, AMX) every LibTorch product ran at a third of the speed of the
/// SkylakeX kernels (a tuned-lens step 2.1x, a Jacobian-lens prompt 2.9x slower). When OpenBLAS
/// fell back that way, OPENBLAS_CORETYPE is unset and the CPU runs wider kernels, this swaps in
/// the widest set the CPU runs (SkylakeX: AVX-512 F, CD, BW, DQ, VL; Haswell: AVX2, FMA) through
/// OpenBLAS's own start-up path (gotoblas_dynamic_quit / gotoblas_dynamic_init, which read
/// OPENBLAS_CORETYPE), and sets OPENBLAS_CORETYPE so that child processes load the same. Runs
/// once, before the engine's first thread setting, so before its first product.
void pinBlasKernels() {
    using TextFn = char* (*)();
    using VoidFn = void (*)();
    const auto core = reinterpret_cast<TextFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    const auto quit = reinterpret_cast<VoidFn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
    const auto init = reinterpret_cast<VoidFn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
    if (!core || !quit || !init) return; // not OpenBLAS, or not a DYNAMIC_ARCH build
    if (const char* pin = std::getenv("OPENBLAS_CORETYPE"); pin && *pin) return; // the user's choice
    std::string name = core();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name != "prescott") return;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    const char* want = nullptr;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    if (!want) return;
    ::setenv("OPENBLAS_CORETYPE", want, 1);
    quit();
    init();
    g_blasPinned = core();
#endif
}

/// True when libgomp was started with OMP_WAIT_POLICY=PASSIVE (idle OpenMP threads sleep).
bool openMpWaitsPassively() {
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    if (!policy) return false;
    std::string p(policy);
    std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return p == "PASSIVE";
}

} // namespace

namespace {
int allCores() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

/// Puts n threads in effect (the caller holds g_scopes).
void applyThreads(int n) {
    // One thread pool, not two: with OpenBLAS as the BLAS (a pthread pool of its own), LibTorch's
    // OpenMP pool and OpenBLAS's threads spin against each other on the same cores, and a trace
    // takes 2-3x longer (docs/performance.md). The matrix products, where the time goes, then use
    // OpenBLAS's n threads, and LibTorch's own kernels run on the calling thread. When OpenMP's
    // idle threads sleep instead of spinning (OMP_WAIT_POLICY=PASSIVE, read by libgomp when the
    // process starts), the two pools do not fight and LibTorch's kernels get the n threads too:
    // training 1.2x faster, a lens trace 1.15x (README, "Threads"). Without OpenBLAS (MKL, a CUDA
    // build's CPU side), LibTorch's pool gets the n threads.
    if (const SetBlasThreads setBlas = openBlasSetter()) {
        setBlas(n);
        at::set_num_threads(openMpWaitsPassively() ? n : 1);
    } else {
        at::set_num_threads(n);
    }
    g_threads.store(n); // last: useDefaultThreads sees a count only once it is in effect
}

int effectiveThreads() {
    return g_scoped.empty() ? g_base : std::min(g_base, *g_scoped.begin());
}
} // namespace

void setThreads(int n) {
    static std::once_flag pinned;
    std::call_once(pinned, pinBlasKernels);
    const std::lock_guard<std::mutex> lock(g_scopes);
    g_base = n <= 0 ? allCores() : n;
    applyThreads(effectiveThreads());
}

ScopedThreads::ScopedThreads(int n) : m_n(n <= 0 ? allCores() : n) {
    detail::useDefaultThreads(); // the caller's count (or the default) exists before the scope
    const std::lock_guard<std::mutex> lock(g_scopes);
    g_scoped.insert(m_n);
    applyThreads(effectiveThreads());
}

ScopedThreads::~ScopedThreads() {
    const std::lock_guard<std::mutex> lock(g_scopes);
    g_scoped.erase(g_scoped.find(m_n));
    applyThreads(effectiveThreads());
}

void detail::useDefaultThreads() {
    // Fast by default: a program that never calls setThreads gets the configuration of
    // setThreads(0) (every core, one BLAS pool) the first time the engine needs threads, instead
    // of LibTorch's default of two pools spinning against each other (a paper-size trace took
    // 66 ms against 40 ms on 2 cores).
    if (g_threads.load() > 0) return; // a caller's count, or the default, is in place
    const std::lock_guard<std::mutex> lock(g_defaultThreads);
    if (g_threads.load() == 0) setThreads(0);
}

int threads() {
    detail::useDefaultThreads();
    return g_threads.load();
}

std::string kernelSummary() {
    if (!detail::packedGemmAvailable())
        return "inference products through the BLAS below (this CPU has no AVX2 and FMA for gwb's packed kernels)";
    return std::string("inference products in gwb's packed kernels (") +
           (detail::packedGemmUsesAvx512() ? "AVX-512" : "AVX2") + "); training's through the BLAS below";
}

std::string blasSummary() {
    detail::useDefaultThreads(); // the kernels the engine runs with (see pinBlasKernels)
    using TextFn = char* (*)();
    const auto config = reinterpret_cast<TextFn>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
    const auto core = reinterpret_cast<TextFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    if (!config) return "not OpenBLAS (LibTorch's own BLAS, e.g. MKL)";
    std::string s = config();
    if (core) s += "; kernels " + std::string(core());
    if (!g_blasPinned.empty())
        s += " (set by gwb: OpenBLAS fell back to its generic Prescott kernels on this CPU, which runs " +
             g_blasPinned + "'s; OPENBLAS_CORETYPE=" + g_blasPinned + ")";
    else if (const char* pin = std::getenv("OPENBLAS_CORETYPE"); pin && *pin)
        s += std::string(" (pinned by OPENBLAS_CORETYPE=") + pin + ")";
    const char* timeout = std::getenv("OPENBLAS_THREAD_TIMEOUT");
    s += "; idle workers spin 2^" + std::string(timeout && *timeout ? timeout : "28 (default)") +
         " cycles (OPENBLAS_THREAD_TIMEOUT)";
    return s;
}

std::string deviceSummary(const std::string& device) {
    return device + ", " + std::to_string(threads()) + " CPU thread" + (threads() == 1 ? "" : "s");
}

} // namespace gwb::engine
