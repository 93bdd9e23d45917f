#pragma once
// What the features tests share: a small dictionary with fixed, varied weights, the bundled
// Grassmann model and a short corpus file.

#include "engine_test_util.h"

#include "gwb/engine/features.h"

#include <cmath>
#include <fstream>
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

/// The bundled Grassmann model on the CPU (loaded once).
inline const Model& bundledGrassmann() {
    static const Model m = Model::load(std::string(GWB_SOURCE_DIR) + "/resources/models/grassmann-austen.gwb", "cpu");
    return m;
}

/// About 25 tokens a line of plain English, `lines` lines, in dir/corpus.txt; returns its path.
inline std::string corpusFile(const TempDir& dir, int lines = 120) {
    const std::string path = dir.file("corpus.txt");
    std::ofstream f(path);
    for (int i = 0; i < lines; ++i)
        f << "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be "
             "in want of a wife; and Mr. Bennet said number "
          << i << " to her.\n";
    return path;
}

} // namespace gwb::engine::test
