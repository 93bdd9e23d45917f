// Geometry kernels at the workbench's working sizes: T = 4096 tokens x 6 offsets, r = 32, d = 256,
// and a whole analyzeTrace of a 6-layer Grassmann trace at T = 8192.
#include "gwb/engine/analysis.h"
#include "gwb/geometry/batch.h"
#include "gwb/geometry/readout.h"
#include "gwb/geometry/subspace.h"

#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

namespace geo = gwb::geometry;

namespace {
constexpr int64_t kTokens = 4096, kReduced = 32, kModel = 256;
const std::vector<int> kOffsets = {1, 2, 4, 8, 12, 16};

geo::RowMatrixXd randomRows(int64_t rows, int64_t cols, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> nd;
    geo::RowMatrixXd m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i)
        m.data()[i] = nd(rng);
    return m;
}

void BM_PairPlanes(benchmark::State& state) {
    const geo::RowMatrixXd z = randomRows(kTokens, kReduced, 1);
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::pairPlanes(z, kOffsets).planes.data());
    state.SetItemsProcessed(state.iterations() * kTokens * 6);
}
BENCHMARK(BM_PairPlanes)->Unit(benchmark::kMillisecond);

void BM_AggregateBivectors(benchmark::State& state) {
    const geo::RowMatrixXd z = randomRows(kTokens, kReduced, 2);
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::aggregateBivectors(z, kOffsets).b.data());
    state.SetItemsProcessed(state.iterations() * kTokens);
}
BENCHMARK(BM_AggregateBivectors)->Unit(benchmark::kMillisecond);

// Residual of all T x 6 per-offset planes (35,960 quadruples each at r = 32).
void BM_ResidualBatch(benchmark::State& state) {
    const geo::RowMatrixXd planes = geo::pairPlanes(randomRows(kTokens, kReduced, 3), kOffsets).planes;
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::residualBatch(planes).data());
    state.SetItemsProcessed(state.iterations() * planes.rows());
}
BENCHMARK(BM_ResidualBatch)->Unit(benchmark::kMillisecond);

void BM_PlanarityBatch(benchmark::State& state) {
    const geo::RowMatrixXd planes = geo::pairPlanes(randomRows(kTokens, kReduced, 4), kOffsets).planes;
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::planarityBatch(planes).data());
    state.SetItemsProcessed(state.iterations() * planes.rows());
}
BENCHMARK(BM_PlanarityBatch)->Unit(benchmark::kMillisecond);

// Principal angles between pair planes of two layers in the reduced space (r = 32).
void BM_PlaneAnglesReduced(benchmark::State& state) {
    const geo::RowMatrixXd a = randomRows(kTokens, kReduced, 5), b = randomRows(kTokens, kReduced, 6);
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::pairPlaneAnglesBatch(a, b, kOffsets).angles.data());
    state.SetItemsProcessed(state.iterations() * kTokens * 6);
}
BENCHMARK(BM_PlaneAnglesReduced)->Unit(benchmark::kMillisecond);

// Lifting through pinv(W_red) to d = 256 (pseudo-inverse + T x r x d product).
void BM_LiftRows(benchmark::State& state) {
    const geo::RowMatrixXd w = randomRows(kReduced, kModel, 7), z = randomRows(kTokens, kReduced, 8);
    for (auto _ : state) {
        const geo::PlaneLifter lifter(w);
        benchmark::DoNotOptimize(lifter.liftRows(z).data());
    }
    state.SetItemsProcessed(state.iterations() * kTokens);
}
BENCHMARK(BM_LiftRows)->Unit(benchmark::kMillisecond);

// Principal angles between lifted planes of layer l and l+1 in d = 256, all (t, D).
void BM_PlaneAnglesLifted(benchmark::State& state) {
    const geo::PlaneLifter l1(randomRows(kReduced, kModel, 9)), l2(randomRows(kReduced, kModel, 10));
    const geo::RowMatrixXd a = l1.liftRows(randomRows(kTokens, kReduced, 11));
    const geo::RowMatrixXd b = l2.liftRows(randomRows(kTokens, kReduced, 12));
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::pairPlaneAnglesBatch(a, b, kOffsets).angles.data());
    state.SetItemsProcessed(state.iterations() * kTokens * 6);
}
BENCHMARK(BM_PlaneAnglesLifted)->Unit(benchmark::kMillisecond);

// Read-out planes of one layer's W_plu (d = 256 channels, each an r x r antisymmetric matrix):
// weight-only, so a corpus run computes it once per model, not once per window.
void BM_ReadoutPlanes(benchmark::State& state) {
    const geo::RowMatrixXd w = randomRows(kModel, kReduced * (kReduced - 1) / 2, 15);
    for (auto _ : state)
        benchmark::DoNotOptimize(geo::readoutPlanes(w).residual.data());
    state.SetItemsProcessed(state.iterations() * kModel);
}
BENCHMARK(BM_ReadoutPlanes)->Unit(benchmark::kMillisecond);

// A whole analysis of a synthetic 6-layer Grassmann trace (d = 256, r = 32, 6 offsets).
void BM_AnalyzeGrassmannTrace(benchmark::State& state) {
    using namespace gwb::engine;
    const int64_t T = state.range(0);
    std::mt19937_64 rng(13);
    std::normal_distribution<float> nd;
    auto random = [&](std::vector<int64_t> shape, float scale) {
        FloatArray a = FloatArray::zeros(std::move(shape));
        for (float& v : a.data)
            v = scale * nd(rng);
        return a;
    };
    Trace tr;
    tr.tokens.resize(static_cast<size_t>(T));
    for (int l = 0; l < 6; ++l) {
        LayerTrace L;
        L.h = random({T, kModel}, 1.0f);
        GrassmannLayerTrace g;
        g.offsets = kOffsets;
        g.z = random({T, kReduced}, 1.0f);
        g.gate = random({T, kModel}, 1.0f);
        for (float& v : g.gate.data)
            v = 1.0f / (1.0f + std::exp(-v));
        g.wRed = random({kReduced, kModel}, 0.1f);
        g.wPlu = random({kModel, kReduced * (kReduced - 1) / 2}, 0.1f);
        L.grassmann = std::move(g);
        tr.layers.push_back(std::move(L));
    }
    for (auto _ : state)
        benchmark::DoNotOptimize(analyzeTrace(tr).grassmann.data());
    state.SetItemsProcessed(state.iterations() * T);
}
BENCHMARK(BM_AnalyzeGrassmannTrace)->Arg(1024)->Arg(8192)->Unit(benchmark::kMillisecond)->Iterations(1);
// One corpus-statistics window (gwb stats --window 256).
BENCHMARK(BM_AnalyzeGrassmannTrace)->Arg(256)->Unit(benchmark::kMillisecond)->Iterations(5);

// Attention-row metrics of a 6-layer, 4-head Transformer trace without dense attention (rows are
// recomputed from q and k through attentionRow): inherently O(T^2 d_head) per head.
void BM_AnalyzeTransformerTrace(benchmark::State& state) {
    using namespace gwb::engine;
    const int64_t T = state.range(0), H = 4, dh = kModel / H;
    std::mt19937_64 rng(14);
    std::normal_distribution<float> nd;
    auto random = [&](std::vector<int64_t> shape) {
        FloatArray a = FloatArray::zeros(std::move(shape));
        for (float& v : a.data)
            v = nd(rng);
        return a;
    };
    Trace tr;
    tr.config.kind = ModelKind::Transformer;
    tr.tokens.resize(static_cast<size_t>(T));
    for (int l = 0; l < 6; ++l) {
        LayerTrace L;
        L.h = random({T, kModel});
        AttentionLayerTrace a;
        a.nHeads = H;
        a.q = random({H, T, dh});
        a.k = random({H, T, dh});
        L.attention = std::move(a);
        tr.layers.push_back(std::move(L));
    }
    for (auto _ : state)
        benchmark::DoNotOptimize(analyzeTrace(tr).attention.data());
    state.SetItemsProcessed(state.iterations() * T);
}
BENCHMARK(BM_AnalyzeTransformerTrace)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond)->Iterations(1);
} // namespace

BENCHMARK_MAIN();
