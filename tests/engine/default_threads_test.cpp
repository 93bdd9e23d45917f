// Fast by default: an engine nobody configured runs on every core with one BLAS thread pool, the
// configuration of setThreads(0). Checked in a fresh process (a death-test child re-runs this
// binary for this test alone), since other tests of the same binary set their own counts.

#include "engine_test_util.h"

#include "gwb/engine/device.h"
#include "gwb/engine/model.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace gwb::engine {
namespace {

/// Exits 0 when the engine's configuration after making a model is every core with one pool;
/// otherwise prints what it found and exits 1.
[[noreturn]] void makeModelAndCheckThreads() {
    const Model model = Model::init(test::tinyConfig(ModelKind::Grassmann), 1, nullptr, "cpu");
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    using GetThreads = int (*)();
    const auto openBlasThreads = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const bool passive = policy && (std::strcmp(policy, "PASSIVE") == 0 || std::strcmp(policy, "passive") == 0);
    // With OpenBLAS, its pool gets every core and LibTorch's OpenMP pool one thread (unless idle
    // OpenMP threads sleep); otherwise LibTorch's pool gets every core.
    const int expectedTorch = openBlasThreads && !passive ? 1 : cores;
    const int blas = openBlasThreads ? openBlasThreads() : cores;
    const bool ok = threads() == cores && at::get_num_threads() == expectedTorch && blas == cores;
    std::fprintf(stderr, "cores %d: engine threads %d, LibTorch threads %d (expected %d), BLAS threads %d\n", cores,
                 threads(), at::get_num_threads(), expectedTorch, blas);
    std::exit(ok ? 0 : 1);
}

TEST(DefaultThreads, AnEngineNobodyConfiguredUsesEveryCoreWithOneBlasPool) {
    GTEST_FLAG_SET(death_test_style, "threadsafe"); // a fresh process, not a fork of this one
    EXPECT_EXIT(makeModelAndCheckThreads(), ::testing::ExitedWithCode(0), "engine threads");
}

TEST(DefaultThreads, ACallersCountStands) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            setThreads(1);
            const Model model = Model::init(test::tinyConfig(ModelKind::Grassmann), 1, nullptr, "cpu");
            std::fprintf(stderr, "engine threads %d\n", threads());
            std::exit(threads() == 1 ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "engine threads 1");
}

// The window's lanes run a corpus pass and a pairs run at once, each with its own ScopedThreads:
// scopes that overlap and end in any order leave the caller's count, and while any is alive the
// smallest count is in effect. (A scope that put back the count from before it would leave the
// other scope's count behind, or the caller's while the other scope still runs.)
TEST(DefaultThreads, OverlappingScopesEndInAnyOrderAndLeaveTheCallersCount) {
    const int before = threads();
    setThreads(3);
    {
        auto a = std::make_unique<ScopedThreads>(2);
        EXPECT_EQ(threads(), 2);
        auto b = std::make_unique<ScopedThreads>(1);
        EXPECT_EQ(threads(), 1);
        a.reset(); // the first scope ends while the second still runs
        EXPECT_EQ(threads(), 1);
        b.reset();
        EXPECT_EQ(threads(), 3);
    }
    // Scopes on many threads at once, as lanes make them.
    std::vector<std::thread> lanes;
    for (int i = 0; i < 8; ++i)
        lanes.emplace_back([i] {
            for (int k = 0; k < 200; ++k) {
                const ScopedThreads scope(1 + (i + k) % 2);
                if (threads() > 2) std::abort();
            }
        });
    for (std::thread& t : lanes)
        t.join();
    EXPECT_EQ(threads(), 3);
    setThreads(before);
}

// OpenBLAS (Debian's 0.3.21) falls back to its generic Prescott (SSE3) kernels on a CPU model it
// does not know; the engine swaps in the kernels the CPU runs (pinBlasKernels in device.cpp), and
// the products stay right.
TEST(BlasKernels, NotTheGenericFallbackOnACpuWithAvx2AndProductsStayRight) {
    using TextFn = char* (*)();
    const auto core = reinterpret_cast<TextFn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
    if (!core) GTEST_SKIP() << "the BLAS is not OpenBLAS: " << blasSummary();
    threads();
    std::string name = core();
    for (char& c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const char* pin = std::getenv("OPENBLAS_CORETYPE");
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        !(pin && std::string(pin) == std::string("Prescott"))) {
        EXPECT_NE(name, "prescott") << blasSummary();
    }
    torch::manual_seed(7);
    const torch::Tensor a = torch::randn({300, 130}), b = torch::randn({130, 257});
    const torch::Tensor ref = torch::mm(a.to(torch::kDouble), b.to(torch::kDouble));
    EXPECT_LE((torch::mm(a, b).to(torch::kDouble) - ref).abs().max().item<double>(), 1e-4) << blasSummary();
}

} // namespace
} // namespace gwb::engine
