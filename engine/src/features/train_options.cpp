// The dictionary trainer's option table (gwb/engine/features.h: featureTrainOptions).

#include "gwb/engine/features.h"

#include <stdexcept>

namespace gwb::engine {

const OptionTable<FeatureTrainOptions>& featureTrainOptions() {
    using O = FeatureTrainOptions;
    static const OptionTable<O> table = {
        textOption<O>(
            "architecture", "architecture", "topk|relu",
            "topk: k active features a token, dead ones trained back by the AuxK loss; relu: ReLU + L1, dead ones "
            "resampled",
            [](const O& o) { return o.architecture; },
            [](O& o, const std::string& v) {
                if (v != "topk" && v != "relu")
                    throw std::invalid_argument("architecture (--architecture) is topk or relu; got '" + v + "'");
                o.architecture = v;
            }),
        integerOption<O>("d_sae", "d-sae", "M", "Features of the dictionary", 1, kNoMax, &O::dSae),
        integerOption<O>("k", "k", "K", "Active features a token (topk), at most d_sae", 1, kNoMax, &O::k),
        numberOption<O>("l1", "l1", "C", "L1 coefficient (relu), on activations scaled to mean norm sqrt(d_in)", 0,
                        false, kNoMax, false, &O::l1),
        integerOption<O>("tokens", "tokens", "N", "Activation rows to train on (the files repeat as needed)", 1,
                         kMaxSeed, &O::tokens),
        integerOption<O>("batch", "batch", "B", "Rows a step", 1, kNoMax, &O::batch),
        integerOption<O>("context", "context", "T", "Tokens a window, at most the model's max_len", 2, kNoMax,
                         &O::contextSize),
        numberOption<O>("lr", "lr", "LR", "Adam's learning rate", 0, true, kNoMax, false, &O::lr),
        integerOption<O>("seed", "seed", "S", "Seed: the same options and seed give the same weights", 0, kMaxSeed,
                         &O::seed),
    };
    return table;
}

} // namespace gwb::engine
