// Engine speed: trace (one forward pass with every capture point) of both bundled-size models vs
// prompt length T, and training throughput. After the runs, prints the least-squares exponent of
// the Grassmann trace CPU time vs T (linear in T expected; attention is quadratic). CPU time, not
// wall time, because the machine is shared: wall time includes waiting for other processes.
//
//   engine_trace_bench                                  all sizes (Grassmann up to T = 65536)
//   engine_trace_bench --benchmark_filter='T:(128|512|2048)$'   quick run
// GWB_BENCH_THREADS sets the CPU threads (default: all cores).

#include "gwb/engine/config_io.h"
#include "gwb/engine/device.h"
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

using namespace gwb::engine;

namespace {

/// The bundled architecture (d=256, r=32, 6 layers, offsets {1,2,4,8,12,16}) with a position
/// table long enough for the largest T.
ModelConfig benchConfig(ModelKind kind, int64_t maxLen) {
    // Same fields as resources/configs/austen-6L-256-*.json.
    ModelConfig c =
        configFromJson(kind == ModelKind::Grassmann
                           ? R"({"kind":"grassmann","vocab_size":8000,"d_model":256,"reduced":32,"n_layers":6,
                                            "d_ff":1024,"offsets":{"schedule":"all","set":[1,2,4,8,12,16]}})"
                           : R"({"kind":"transformer","vocab_size":8000,"d_model":256,"n_heads":4,"n_layers":6,
                                            "d_ff":1024})");
    c.maxLen = maxLen;
    c.dropout = 0.0;
    return c;
}

const Model& model(ModelKind kind) {
    static std::map<ModelKind, std::unique_ptr<Model>> cache;
    auto& slot = cache[kind];
    if (!slot) slot = std::make_unique<Model>(Model::init(benchConfig(kind, 65536), 0, nullptr, "cpu"));
    return *slot;
}

std::vector<int32_t> randomIds(int64_t n, int64_t V) {
    std::mt19937 rng(7);
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids)
        id = static_cast<int32_t>(rng() % static_cast<uint32_t>(V));
    return ids;
}

void traceBench(benchmark::State& state, ModelKind kind) {
    const int64_t T = state.range(0);
    const Model& m = model(kind);
    const auto ids = randomIds(T, m.config().vocabSize);
    TraceOptions o;
    o.lensTopK = 0; // the lens is a separate (linear) cost; keep the forward pass itself
    for (auto _ : state) {
        TracePtr t = traceIds(m, ids, o);
        benchmark::DoNotOptimize(t.get());
    }
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(T) * static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate);
}

void trainBench(benchmark::State& state, ModelKind kind) {
    const ModelConfig c = benchConfig(kind, 256);
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

/// Collects Grassmann trace times to fit time ~ T^k.
class FitReporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run>& runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const Run& r : runs) {
            const std::string name = r.benchmark_name(); // "trace/grassmann/T:2048/min_time:0.500"
            const auto at = name.find("/T:");
            if (name.rfind("trace/grassmann/", 0) == 0 && at != std::string::npos && r.iterations > 0)
                m_points.emplace_back(std::stod(name.substr(at + 3)), r.GetAdjustedCPUTime());
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
        std::printf("Grassmann trace CPU time ~ T^%.3f over %zu sizes (1 = linear)\n",
                    (n * sxy - sx * sy) / (n * sxx - sx * sx), m_points.size());
    }

private:
    std::vector<std::pair<double, double>> m_points;
};

} // namespace

BENCHMARK_CAPTURE(traceBench, grassmann, ModelKind::Grassmann)
    ->Name("trace/grassmann")
    ->ArgName("T")
    ->Arg(128)
    ->Arg(512)
    ->Arg(2048)
    ->Arg(8192)
    ->Arg(32768)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_CAPTURE(traceBench, transformer, ModelKind::Transformer)
    ->Name("trace/transformer")
    ->ArgName("T")
    ->Arg(128)
    ->Arg(512)
    ->Arg(2048)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
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
    FitReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    reporter.fit();
    benchmark::Shutdown();
    return 0;
}
