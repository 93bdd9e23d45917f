// Engine speed (issue 10): trace (one forward pass with every capture point, surprisal from the
// chunked head) of the paper-size models (V=30522, d=256, r=32, 6 layers) vs prompt length T, with
// and without the logit lens, Model::load of a paper-size checkpoint, incremental generation and
// training throughput; and this CPU's single-precision multiply-add peak over the same threads
// (peak/fma) and its memory read bandwidth (peak/read), the ceilings that the floors in
// docs/performance.md are computed from. After the runs, prints the least-squares exponent of the
// Grassmann trace time vs T. scripts/bench runs this next to a PyTorch reference and writes
// docs/performance.md.
//
//   engine_trace_bench                                  everything
//   engine_trace_bench --benchmark_filter='trace/grassmann/T:(128|512|2048)$'   quick run
// GWB_BENCH_GRASSMANN / GWB_BENCH_TRANSFORMER trace a given .gwb instead of the paper-size models.
// GWB_BENCH_THREADS sets the CPU threads (default: all cores). GWB_BENCH_CHECKPOINT names the
// checkpoint the load benchmark reads (default: a paper-size one written to a temporary folder).
// GWB_BENCH_FIT_TIME=cpu fits the exponent on CPU time instead of wall time. patch/resid/*: a full
// resid patching sweep ((N + 1) x T cells, issue 21) of the paper-size models at T = 128 and, with
// GWB_BENCH_BUNDLED naming resources/models, of the bundled pair at T = 64.

#include "gwb/engine/analysis.h"
#include "gwb/engine/config_io.h"
#include "gwb/engine/device.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/hooks.h"
#include "gwb/engine/model.h"
#include "gwb/engine/patching.h"
#include "gwb/engine/tracer.h"
#include "gwb/engine/train.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GWB_BENCH_X86 1
#endif

using namespace gwb::engine;

namespace {

/// Training runs the bundled architecture (V=8000, d=256, r=32, 6 layers, offsets
/// {1,2,4,8,12,16}); tracing, loading and generation the paper's 6-layer size (V=30522), with a
/// position table long enough for the largest T.
ModelConfig benchConfig(ModelKind kind, int64_t maxLen, int64_t vocab = 30522) {
    ModelConfig c =
        configFromJson(kind == ModelKind::Grassmann
                           ? R"({"kind":"grassmann","vocab_size":8000,"d_model":256,"reduced":32,"n_layers":6,
                                            "d_ff":1024,"offsets":{"schedule":"all","set":[1,2,4,8,12,16]}})"
                           : R"({"kind":"transformer","vocab_size":8000,"d_model":256,"n_heads":4,"n_layers":6,
                                            "d_ff":1024})");
    c.vocabSize = vocab;
    c.maxLen = maxLen;
    c.dropout = 0.0;
    return c;
}

/// The traced model: paper size, or GWB_BENCH_GRASSMANN / GWB_BENCH_TRANSFORMER (a .gwb, e.g. a
/// bundled model) to time that one instead.
const Model& model(ModelKind kind) {
    static std::map<ModelKind, std::unique_ptr<Model>> cache;
    auto& slot = cache[kind];
    if (!slot) {
        const char* path = std::getenv(kind == ModelKind::Grassmann ? "GWB_BENCH_GRASSMANN" : "GWB_BENCH_TRANSFORMER");
        slot = std::make_unique<Model>(path ? Model::load(path, "cpu")
                                            : Model::init(benchConfig(kind, 8192), 0, nullptr, "cpu"));
    }
    return *slot;
}

std::vector<int32_t> randomIds(int64_t n, int64_t V) {
    std::mt19937 rng(7);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids)
        id = static_cast<int32_t>(rng() % static_cast<uint32_t>(V));
    return ids;
}

void traceBench(benchmark::State& state, ModelKind kind, int lensTopK) {
    const int64_t T = state.range(0);
    const Model& m = model(kind);
    const auto ids = randomIds(T, m.config().vocabSize);
    TraceOptions o;
    o.lensTopK = lensTopK;
    for (auto _ : state) {
        TracePtr t = traceIds(m, ids, o);
        benchmark::DoNotOptimize(t.get());
    }
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(T) * static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate);
}

void loadBench(benchmark::State& state) {
    std::string path;
    std::filesystem::path dir;
    if (const char* p = std::getenv("GWB_BENCH_CHECKPOINT")) {
        path = p;
    } else {
        dir = std::filesystem::temp_directory_path() / "gwb-load-bench";
        std::filesystem::create_directories(dir);
        path = (dir / "paper.gwb").string();
        Model::init(benchConfig(ModelKind::Grassmann, 128), 0, nullptr, "cpu").save(path);
    }
    for (auto _ : state) {
        Model m = Model::load(path, "cpu");
        benchmark::DoNotOptimize(&m);
    }
    if (!dir.empty()) std::filesystem::remove_all(dir);
}

void generateBench(benchmark::State& state, ModelKind kind) {
    const Model& m = model(kind);
    const auto prompt = randomIds(16, m.config().vocabSize);
    GenerateOptions o;
    o.maxNew = state.range(0);
    o.greedy = true;
    double tokensPerSecond = 0;
    for (auto _ : state) {
        const GenerateResult r = generate(m, prompt, o);
        tokensPerSecond = r.tokensPerSecond;
        benchmark::DoNotOptimize(r.ids.data());
    }
    state.counters["gen tokens/s"] = tokensPerSecond;
}

void trainBench(benchmark::State& state, ModelKind kind) {
    const ModelConfig c = benchConfig(kind, 256, 8000);
    const auto dir = std::filesystem::temp_directory_path() / "gwb-train-bench";
    std::filesystem::create_directories(dir);
    const auto train = randomIds(8 * 257 * 4, c.vocabSize), valid = randomIds(600, c.vocabSize);
    double tokensPerSecond = 0;
    for (auto _ : state) {
        Model m = Model::init(c, 0, nullptr, "cpu");
        TrainOptions o;
        o.outPath = (dir / "bench.gwb").string();
        o.steps = state.range(0);
        o.batch = 8;
        o.warmup = 1;
        o.evalEvery = 0;
        o.evalMaxBlocks = 1;
        o.logEvery = 0;
        const TrainResult r = trainOnTokens(m, train, valid, o);
        tokensPerSecond = r.tokensPerSecond;
    }
    std::filesystem::remove_all(dir);
    state.counters["train tokens/s"] = tokensPerSecond;
}

/// Collects Grassmann trace times (no lens) to fit time ~ T^k.
class FitReporter : public benchmark::ConsoleReporter {
public:
    explicit FitReporter(bool cpu) : m_cpu(cpu) {}
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& r : runs) {
            const std::string name = r.benchmark_name(); // "trace/grassmann/T:2048/min_time:0.500"
            const auto at = name.find("/T:");
            if (name.rfind("trace/grassmann/", 0) == 0 && at != std::string::npos && r.iterations > 0 &&
                r.run_type == Run::RT_Iteration)
                m_points.emplace_back(std::stod(name.substr(at + 3)),
                                      m_cpu ? r.GetAdjustedCPUTime() : r.GetAdjustedRealTime());
        }
    }
    void fit() const {
        if (m_points.size() < 2) return;
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        const double n = static_cast<double>(m_points.size());
        for (const auto& [t, time] : m_points) {
            const double x = std::log(t), y = std::log(time);
            sx += x;
            sy += y;
            sxx += x * x;
            sxy += x * y;
        }
        std::printf("Grassmann trace %s time ~ T^%.3f over %zu runs (1 = linear)\n", m_cpu ? "CPU" : "wall",
                    (n * sxy - sx * sy) / (n * sxx - sx * sx), m_points.size());
    }

private:
    bool m_cpu;
    std::vector<std::pair<double, double>> m_points;
};

/// fn(0) ... fn(n-1), each on a thread of its own, started together and joined.
template <class Fn> void onThreads(int n, const Fn& fn) {
    std::vector<std::thread> pool;
    for (int t = 0; t < n; ++t)
        pool.emplace_back([&fn, t] { fn(static_cast<size_t>(t)); });
    for (auto& th : pool)
        th.join();
}

#ifdef GWB_BENCH_X86
// Independent multiply-adds in registers, no memory traffic: 24 (AVX-512) or 12 (AVX2) chains,
// enough to fill both FMA pipes at a latency of 4 cycles. Returns the flops done.
__attribute__((target("avx512f"))) double fmaLoopAvx512(int64_t n, float* sink) {
    __m512 acc[24];
    for (int i = 0; i < 24; ++i)
        acc[i] = _mm512_set1_ps(1e-9f * static_cast<float>(i));
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int64_t k = 0; k < n; ++k)
#pragma GCC unroll 24
        for (int i = 0; i < 24; ++i)
            acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __m512 s = acc[0];
    for (int i = 1; i < 24; ++i)
        s = _mm512_add_ps(s, acc[i]);
    alignas(64) float out[16];
    _mm512_store_ps(out, s);
    *sink = out[0];
    return 2.0 * 16 * 24 * static_cast<double>(n);
}

__attribute__((target("avx2,fma"))) double fmaLoopAvx2(int64_t n, float* sink) {
    __m256 acc[12];
    for (int i = 0; i < 12; ++i)
        acc[i] = _mm256_set1_ps(1e-9f * static_cast<float>(i));
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int64_t k = 0; k < n; ++k)
#pragma GCC unroll 12
        for (int i = 0; i < 12; ++i)
            acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    alignas(32) float out[8];
    __m256 s = acc[0];
    for (int i = 1; i < 12; ++i)
        s = _mm256_add_ps(s, acc[i]);
    _mm256_store_ps(out, s);
    *sink = out[0];
    return 2.0 * 8 * 12 * static_cast<double>(n);
}
#endif

/// Single-precision multiply-add peak of threads() threads with the widest vectors the CPU has.
void peakBench(benchmark::State& state) {
#ifdef GWB_BENCH_X86
    const bool wide = __builtin_cpu_supports("avx512f");
    if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
        state.SkipWithError("no AVX2/FMA");
        return;
    }
    const int n = threads();
    constexpr int64_t kIterations = 20'000'000;
    double flops = 0;
    for (auto _ : state) {
        std::vector<float> sink(static_cast<size_t>(n));
        std::vector<double> done(static_cast<size_t>(n));
        onThreads(n, [&](size_t i) {
            done[i] = wide ? fmaLoopAvx512(kIterations / 2, &sink[i]) : fmaLoopAvx2(kIterations, &sink[i]);
        });
        for (double d : done)
            flops += d;
        benchmark::DoNotOptimize(sink.data());
    }
    state.counters["GFLOP/s"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsRate);
    state.counters["threads"] = n;
    state.SetLabel(wide ? "AVX-512" : "AVX2");
#else
    state.SkipWithError("x86-64 only");
#endif
}

/// Memory read bandwidth of threads() threads streaming over 256 MiB (far beyond the caches): the
/// ceiling of generation, which reads every weight once per new token.
void readBench(benchmark::State& state) {
    const int n = threads();
    constexpr size_t kFloats = size_t{64} << 20;
    std::vector<float> data(kFloats, 1.0f);
    double bytes = 0;
    for (auto _ : state) {
        std::vector<double> sums(static_cast<size_t>(n));
        const size_t share = kFloats / static_cast<size_t>(n);
        onThreads(n, [&](size_t t) {
            const size_t begin = share * t, end = t + 1 == sums.size() ? kFloats : begin + share;
            float acc[16] = {};
            for (size_t i = begin; i + 16 <= end; i += 16)
                for (int j = 0; j < 16; ++j) // 16 independent sums: the compiler vectorizes them
                    acc[j] += data[i + static_cast<size_t>(j)];
            double total = 0;
            for (float a : acc)
                total += a;
            sums[t] = total;
        });
        bytes += static_cast<double>(kFloats) * sizeof(float);
        benchmark::DoNotOptimize(sums.data());
    }
    state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsRate);
}

} // namespace

BENCHMARK(readBench)->Name("peak/read")->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
BENCHMARK(peakBench)->Name("peak/fma")->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
/// A full resid sweep of two random prompts that differ at every position (so no cell is
/// skipped as unchanged): what scripts/bench_reference.py's plain hook-per-cell loop computes.
void patchBench(benchmark::State& state, ModelKind kind, bool bundled) {
    const int64_t T = state.range(0);
    static std::map<ModelKind, std::unique_ptr<Model>> bundledModels;
    const Model* m = &model(kind);
    if (bundled) {
        const char* dir = std::getenv("GWB_BENCH_BUNDLED");
        if (!dir) {
            state.SkipWithError("set GWB_BENCH_BUNDLED to resources/models");
            return;
        }
        auto& slot = bundledModels[kind];
        if (!slot)
            slot = std::make_unique<Model>(Model::load(
                std::string(dir) + (kind == ModelKind::Grassmann ? "/grassmann-austen.gwb" : "/transformer-austen.gwb"),
                "cpu"));
        m = slot.get();
    }
    std::mt19937 rng(11);
    PatchRequest r;
    for (int64_t t = 0; t < T; ++t) {
        r.clean.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(m->config().vocabSize)));
        r.corrupt.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(m->config().vocabSize)));
    }
    r.site = PatchSite::Resid;
    r.mode = PatchMode::Patch;
    r.answer = 3;
    r.wrong = 4;
    for (auto _ : state) {
        const PatchSweep sweep = runPatchSweep(*m, r);
        benchmark::DoNotOptimize(sweep.metric.data());
    }
    state.counters["cells"] = static_cast<double>((m->config().nLayers + 1) * T);
}

/// One pair's attribution sweep of a site (16 tokens, the bundled model) against one plain forward
/// pass of the same prompt (site "forward"): issue 28's budget is 5 forward passes a site.
void attributionBench(benchmark::State& state, ModelKind kind, PatchSite site) {
    const char* dir = std::getenv("GWB_BENCH_BUNDLED");
    if (!dir) {
        state.SkipWithError("set GWB_BENCH_BUNDLED to resources/models");
        return;
    }
    static std::map<ModelKind, std::unique_ptr<Model>> models;
    auto& slot = models[kind];
    if (!slot)
        slot = std::make_unique<Model>(Model::load(
            std::string(dir) + (kind == ModelKind::Grassmann ? "/grassmann-austen.gwb" : "/transformer-austen.gwb"),
            "cpu"));
    const Model& m = *slot;
    std::mt19937 rng(5);
    PatchRequest r;
    for (int t = 0; t < 16; ++t) {
        r.clean.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(m.config().vocabSize)));
        r.corrupt.push_back(t == 0 ? r.clean.back() + 1 : r.clean.back());
    }
    r.site = site;
    r.mode = PatchMode::Patch;
    r.answer = 3;
    r.wrong = 4;
    const bool forward = state.range(0) == 0;
    for (auto _ : state) {
        if (forward) {
            const FloatArray logits = runWithHooks(m, r.clean, {});
            benchmark::DoNotOptimize(logits.data.data());
        } else {
            const PatchSweep s = attributionSweep(m, r);
            benchmark::DoNotOptimize(s.attribution.data());
        }
    }
}
// attribution/<kind>/forward (a plain forward pass) and attribution/<kind>/<site> (one pair's sweep).
const bool kAttributionBenchmarks = [] {
    struct Entry {
        ModelKind kind;
        const char* site; ///< "forward" or a site name
        PatchSite patchSite;
    };
    const Entry entries[] = {
        {ModelKind::Grassmann, "forward", PatchSite::Resid},   {ModelKind::Grassmann, "resid", PatchSite::Resid},
        {ModelKind::Grassmann, "gate", PatchSite::Gate},       {ModelKind::Grassmann, "mixer", PatchSite::Mixer},
        {ModelKind::Grassmann, "ffn", PatchSite::Ffn},         {ModelKind::Grassmann, "offset", PatchSite::Offset},
        {ModelKind::Transformer, "forward", PatchSite::Resid}, {ModelKind::Transformer, "resid", PatchSite::Resid}};
    for (const Entry& e : entries) {
        const std::string name =
            std::string("attribution/") + (e.kind == ModelKind::Grassmann ? "grassmann/" : "transformer/") + e.site;
        const bool forward = std::string(e.site) == "forward";
        benchmark::RegisterBenchmark(name.c_str(), attributionBench, e.kind, e.patchSite)
            ->Arg(forward ? 0 : 1)
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.5);
    }
    return true;
}();

/// The trace of T random tokens (parts = 0) or that trace's analysis of `parts` with the
/// in-memory cache filled (the weight-only results of a model already open), on the engine's
/// threads.
void traceOrAnalysis(benchmark::State& state, const Model& m, int64_t T, unsigned parts, const TraceOptions& options) {
    static const std::shared_ptr<AnalysisCache> cache = makeAnalysisCache();
    const TracePtr t = traceIds(m, randomIds(T, m.config().vocabSize), options);
    AnalysisOptions o;
    o.cache = cache;
    o.threads = threads();
    o.parts = parts;
    if (parts) benchmark::DoNotOptimize(analyzeTrace(*t, o).grassmann.data()); // fills the cache
    for (auto _ : state) {
        if (parts) {
            const TraceAnalysis a = analyzeTrace(*t, o);
            benchmark::DoNotOptimize(a.grassmann.data());
        } else {
            const TracePtr again = traceIds(m, randomIds(T, m.config().vocabSize), options);
            benchmark::DoNotOptimize(again.get());
        }
    }
}

/// Issue 39's bundled-size goal: the analyses add at most 50% to the trace. With GWB_BENCH_BUNDLED
/// naming resources/models: the bundled Grassmann model's trace of T random tokens as the window
/// runs it (range(1) = 0), and that trace's analysis of the parts in range(1) with the window's
/// in-memory cache filled (the weight-only results of a model already open), on the engine's
/// threads (GWB_BENCH_THREADS; 1 gives the work without the noise of a shared machine).
void bundledAnalysisBench(benchmark::State& state) {
    const char* dir = std::getenv("GWB_BENCH_BUNDLED");
    if (!dir) {
        state.SkipWithError("set GWB_BENCH_BUNDLED to resources/models");
        return;
    }
    static const Model m = Model::load(std::string(dir) + "/grassmann-austen.gwb", "cpu");
    traceOrAnalysis(state, m, state.range(0), static_cast<unsigned>(state.range(1)), {});
}
BENCHMARK(bundledAnalysisBench)
    ->Name("analysis/grassmann/bundled")
    ->ArgNames({"T", "parts"})
    ->Args({256, 0})
    ->Args({256, kAnalysisCore})
    ->Args({256, kAnalysisReadout})
    ->Args({256, kAnalysisLayerAngles})
    ->Args({256, kAnalysisReadingSubspaces})
    ->Args({256, kAnalysisAll})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(0.5);

/// Issue 51: a window Run of a long prompt at the published model's scale. With GWB_BENCH_SCALE
/// naming a checkpoint (scripts/bench --scale makes one of GrassLM-100M's shape): the trace of T
/// random tokens as the window makes it (no lens, no g or mixer input) and that trace's analysis
/// of the parts in range(1), the in-memory cache filled. range(1) = 0: the trace alone.
/// With the checkpoint in GWB_BENCH_SCALE_TRANSFORMER (GPT-2 small's shape with 4,096 positions),
/// window/scale-transformer: the same for the baseline, whose analysis is whole (parts 31).
void scaleWindowBench(benchmark::State& state, const char* variable) {
    const char* path = std::getenv(variable);
    if (!path) {
        state.SkipWithError((std::string("set ") + variable + " to a checkpoint").c_str());
        return;
    }
    static std::map<std::string, Model> models;
    if (!models.count(path)) models.emplace(path, Model::load(path, "cpu"));
    const Model& m = models.at(path);
    TraceOptions window;
    window.lensTopK = 0;
    window.keepMixerStates = false;
    window.denseAttentionLimit = 512; // as the window: rows recomputed from q and k beyond
    traceOrAnalysis(state, m, std::min<int64_t>(state.range(0), m.config().maxLen),
                    static_cast<unsigned>(state.range(1)), window);
}
BENCHMARK_CAPTURE(scaleWindowBench, transformer, "GWB_BENCH_SCALE_TRANSFORMER")
    ->Name("window/scale-transformer")
    ->ArgNames({"T", "parts"})
    ->Args({4096, 0})
    ->Args({4096, kAnalysisAll})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK_CAPTURE(scaleWindowBench, grassmann, "GWB_BENCH_SCALE")
    ->Name("window/scale")
    ->ArgNames({"T", "parts"})
    ->Args({4096, 0})
    ->Args({4096, kAnalysisCore})
    ->Args({4096, kAnalysisAll})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);

BENCHMARK_CAPTURE(patchBench, bundled_grassmann, ModelKind::Grassmann, true)
    ->Name("patch/resid/grassmann/bundled")
    ->ArgName("T")
    ->Arg(64)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(patchBench, bundled_transformer, ModelKind::Transformer, true)
    ->Name("patch/resid/transformer/bundled")
    ->ArgName("T")
    ->Arg(64)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(patchBench, paper_grassmann, ModelKind::Grassmann, false)
    ->Name("patch/resid/grassmann/paper")
    ->ArgName("T")
    ->Arg(128)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(patchBench, paper_transformer, ModelKind::Transformer, false)
    ->Name("patch/resid/transformer/paper")
    ->ArgName("T")
    ->Arg(128)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

BENCHMARK_CAPTURE(traceBench, grassmann, ModelKind::Grassmann, 0)
    ->Name("trace/grassmann")
    ->ArgName("T")
    ->Arg(128)
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(traceBench, grassmann_lens, ModelKind::Grassmann, 5)
    ->Name("trace_lens5/grassmann")
    ->ArgName("T")
    ->Arg(128)
    ->Arg(256)
    ->Arg(1024)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(traceBench, transformer, ModelKind::Transformer, 0)
    ->Name("trace/transformer")
    ->ArgName("T")
    ->Arg(128)
    ->Arg(256)
    ->Arg(512)
    ->Arg(2048)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK(loadBench)->Name("load/grassmann")->Unit(benchmark::kMillisecond)->MinTime(0.5);
BENCHMARK_CAPTURE(generateBench, grassmann, ModelKind::Grassmann)
    ->Name("generate/grassmann")
    ->ArgName("new")
    ->Arg(64)
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(generateBench, transformer, ModelKind::Transformer)
    ->Name("generate/transformer")
    ->ArgName("new")
    ->Arg(64)
    ->Iterations(2)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(trainBench, grassmann, ModelKind::Grassmann)
    ->Name("train/grassmann")
    ->ArgName("steps")
    ->Arg(4)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(trainBench, transformer, ModelKind::Transformer)
    ->Name("train/transformer")
    ->ArgName("steps")
    ->Arg(4)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

int main(int argc, char** argv) {
    const char* threads = std::getenv("GWB_BENCH_THREADS");
    setThreads(threads ? std::atoi(threads) : 0);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    std::printf("device: %s\n", deviceSummary("cpu").c_str());
    const char* fitTime = std::getenv("GWB_BENCH_FIT_TIME");
    FitReporter reporter(fitTime && std::string(fitTime) == "cpu");
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.fit();
    benchmark::Shutdown();
    return 0;
}
