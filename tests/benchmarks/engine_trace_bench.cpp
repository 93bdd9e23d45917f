// Engine speed (issue 10): trace (one forward pass with every capture point, surprisal from the
// chunked head) of the paper-size models (V=30522, d=256, r=32, 6 layers) vs prompt length T, with
// and without the logit lens, Model::load of a paper-size checkpoint, incremental generation and
// training throughput. After the runs, prints the least-squares exponent of the Grassmann trace
// time vs T. scripts/bench runs this next to a PyTorch reference and writes docs/performance.md.
//
//   engine_trace_bench                                  everything
//   engine_trace_bench --benchmark_filter='trace/grassmann/T:(128|512|2048)$'   quick run
// GWB_BENCH_GRASSMANN / GWB_BENCH_TRANSFORMER trace a given .gwb instead of the paper-size models.
// GWB_BENCH_THREADS sets the CPU threads (default: all cores). GWB_BENCH_CHECKPOINT names the
// checkpoint the load benchmark reads (default: a paper-size one written to a temporary folder).
// GWB_BENCH_FIT_TIME=cpu fits the exponent on CPU time instead of wall time.

#include "gwb/engine/config_io.h"
#include "gwb/engine/device.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/model.h"
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

} // namespace

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
