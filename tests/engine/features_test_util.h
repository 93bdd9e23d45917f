#pragma once
// A small dictionary with fixed, varied weights for the features tests.

#include "gwb/engine/features.h"

#include <cmath>
#include <string>

namespace gwb::engine::test {

inline Dictionary smallDictionary(int64_t dIn, int64_t dSae, const std::string& arch, int64_t k) {
    Dictionary d;
    d.config.architecture = arch;
    d.config.site = "resid.1";
    d.config.dIn = dIn;
    d.config.dSae = dSae;
    d.config.k = k;
    d.wEnc = FloatArray::zeros({dIn, dSae});
    d.bEnc = FloatArray::zeros({dSae});
    d.wDec = FloatArray::zeros({dSae, dIn});
    d.bDec = FloatArray::zeros({dIn});
    for (size_t i = 0; i < d.wEnc.data.size(); ++i)
        d.wEnc.data[i] = std::sin(0.7f * static_cast<float>(i));
    for (size_t i = 0; i < d.wDec.data.size(); ++i)
        d.wDec.data[i] = std::cos(0.3f * static_cast<float>(i));
    for (size_t i = 0; i < d.bEnc.data.size(); ++i)
        d.bEnc.data[i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
    for (size_t i = 0; i < d.bDec.data.size(); ++i)
        d.bDec.data[i] = 0.05f * static_cast<float>(i);
    return d;
}

} // namespace gwb::engine::test
