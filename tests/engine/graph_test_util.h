#pragma once
// What the attribution graph tests share: a transcoder set with random weights for any model.

#include "gwb/engine/features.h"
#include "gwb/engine/model.h"

#include <cmath>
#include <random>
#include <string>

namespace gwb::engine::test {

/// A transcoder per block with random weights (ReLU, or top-k): enough active features to make a
/// graph; what the transcoders miss goes to the error nodes, so any weights give a complete graph.
inline TranscoderSet randomTranscoders(const Model& model, int64_t dSae, const std::string& arch, int64_t k,
                                       uint32_t seed) {
    TranscoderSet set;
    const int64_t d = model.config().dModel;
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t l = 0; l < model.config().nLayers; ++l) {
        Dictionary t;
        t.config.architecture = arch;
        t.config.k = k;
        t.config.site = "ffn_in." + std::to_string(l);
        t.config.targetSite = "ffn." + std::to_string(l);
        t.config.dIn = d;
        t.config.dOut = d;
        t.config.dSae = dSae;
        t.config.modelName = model.displayName();
        t.config.modelHash = modelWeightsHash(model);
        t.config.applyBDecToInput = false;
        t.wEnc = FloatArray::zeros({d, dSae});
        t.bEnc = FloatArray::zeros({dSae});
        t.wDec = FloatArray::zeros({dSae, d});
        t.bDec = FloatArray::zeros({d});
        for (float& v : t.wEnc.data)
            v = normal(rng) / std::sqrt(static_cast<float>(d));
        for (float& v : t.bEnc.data)
            v = 0.1f * normal(rng);
        for (float& v : t.wDec.data)
            v = 0.3f * normal(rng);
        for (float& v : t.bDec.data)
            v = 0.05f * normal(rng);
        set.layers.push_back(std::move(t));
    }
    return set;
}

} // namespace gwb::engine::test
