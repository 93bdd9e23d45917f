#pragma once
// Hand-built synthetic traces (random weights and states) for the analysis tests.

#include "gwb/engine/trace.h"

#include <cmath>
#include <random>

namespace gwb::engine::test {

inline FloatArray randomArray(std::vector<int64_t> shape, std::mt19937_64& rng, float scale = 1.0f) {
    FloatArray a = FloatArray::zeros(std::move(shape));
    std::normal_distribution<float> nd(0.0f, scale);
    for (float& v : a.data)
        v = nd(rng);
    return a;
}

/// N Grassmann layers, T tokens, width d, reduced width r; z = h W_red^T + b_red exactly as the model.
inline Trace grassmannTrace(int64_t T, int64_t d, int64_t r, size_t N, std::vector<int> offsets, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Trace tr;
    tr.config.kind = ModelKind::Grassmann;
    tr.config.dModel = d;
    tr.config.reduced = r;
    tr.config.nLayers = static_cast<int64_t>(N);
    for (int64_t t = 0; t < T; ++t)
        tr.tokens.push_back({static_cast<int32_t>(t), "tok" + std::to_string(t), -1, -1});
    for (size_t l = 0; l < N; ++l) {
        LayerTrace L;
        L.h = randomArray({T, d}, rng);
        L.mixerInput = L.h;
        GrassmannLayerTrace g;
        g.offsets = offsets;
        g.wRed = randomArray({r, d}, rng, 0.2f);
        g.bRed = randomArray({r}, rng, 0.1f);
        g.wPlu = randomArray({d, r * (r - 1) / 2}, rng, 0.1f);
        g.bPlu = randomArray({d}, rng, 0.1f);
        g.z = FloatArray::zeros({T, r});
        for (int64_t t = 0; t < T; ++t)
            for (int64_t i = 0; i < r; ++i) {
                double acc = g.bRed.data[static_cast<size_t>(i)];
                for (int64_t c = 0; c < d; ++c)
                    acc += static_cast<double>(g.wRed.at2(i, c)) * L.h.at2(t, c);
                g.z.data[static_cast<size_t>(t * r + i)] = static_cast<float>(acc);
            }
        g.g = randomArray({T, d}, rng);
        g.gate = randomArray({T, d}, rng, 2.0f);
        for (float& v : g.gate.data)
            v = 1.0f / (1.0f + std::exp(-v));
        L.grassmann = std::move(g);
        tr.layers.push_back(std::move(L));
    }
    tr.config.layerOffsets.assign(N, offsets);
    return tr;
}

/// N attention layers with H heads; `dense` keeps the H x T x T probabilities (else recomputed).
inline Trace attentionTrace(int64_t T, int64_t d, int64_t H, size_t N, bool dense, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Trace tr;
    tr.config.kind = ModelKind::Transformer;
    tr.config.dModel = d;
    tr.config.nHeads = H;
    const int64_t dh = d / H;
    for (int64_t t = 0; t < T; ++t)
        tr.tokens.push_back({static_cast<int32_t>(t), "tok" + std::to_string(t), -1, -1});
    for (size_t l = 0; l < N; ++l) {
        LayerTrace L;
        L.h = randomArray({T, d}, rng);
        L.mixerInput = L.h;
        AttentionLayerTrace a;
        a.nHeads = H;
        a.q = randomArray({H, T, dh}, rng);
        a.k = randomArray({H, T, dh}, rng);
        if (dense) {
            a.attn = FloatArray::zeros({H, T, T});
            for (int64_t h = 0; h < H; ++h)
                for (int64_t t = 0; t < T; ++t) {
                    std::vector<double> s(static_cast<size_t>(t + 1));
                    double mx = -1e300, sum = 0;
                    for (int64_t j = 0; j <= t; ++j) {
                        double dot = 0;
                        for (int64_t c = 0; c < dh; ++c)
                            dot += static_cast<double>(a.q.at3(h, t, c)) * a.k.at3(h, j, c);
                        s[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(dh));
                        mx = std::max(mx, s[static_cast<size_t>(j)]);
                    }
                    for (double& v : s)
                        sum += (v = std::exp(v - mx));
                    for (int64_t j = 0; j <= t; ++j)
                        a.attn.data[static_cast<size_t>((h * T + t) * T + j)] =
                            static_cast<float>(s[static_cast<size_t>(j)] / sum);
                }
        }
        L.attention = std::move(a);
        tr.layers.push_back(std::move(L));
    }
    return tr;
}

} // namespace gwb::engine::test
