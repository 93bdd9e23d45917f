#pragma once
// One lens (logit, tuned or Jacobian; gwb/engine/lens.h) read out on one traced prompt, as plain
// numbers the views draw: per residual state and token the top-1 next token, its probability, the
// actual next token's rank and KL(p_final || p_s). Std types only: views include this header
// (lensReadout in lens.h computes it); and gwb lens eval's per-layer summary (LensEvalResult).

#include "gwb/engine/array.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gwb::engine {

/// Rows are residual states s = 0..N (s = N: the model's own output, the same for every lens);
/// columns the prompt's T tokens. Where the lens has no map (the Jacobian lens at s = 0) a row
/// holds top1 = -1, NaN probability and KL, and rank -1.
struct LensReadout {
    std::string lens;                      ///< "logit", "tuned" or "jacobian"
    std::string folder;                    ///< the lens's folder ("" for the logit lens)
    std::string fittedOn;                  ///< display name of the model the lens was fitted on ("" for the logit lens)
    bool sameModel = true;                 ///< fitted on the drawn model's weights (modelWeightsHash)
    bool complete = true;                  ///< false for a fit that was stopped before its budget
    std::string modelName;                 ///< the model it was read out on
    bool grassmann = false;                ///< that model is a Grassmann model
    int64_t nLayers = 0;                   ///< N
    IntArray top1;                         ///< (N+1) x T  top-1 next-token id
    FloatArray top1Prob;                   ///< (N+1) x T  its probability
    IntArray nextRank;                     ///< (N+1) x T  rank (0 = top-1) of the actual next token; -1 at t = T-1
    FloatArray kl;                         ///< (N+1) x T  KL(p_final || p_s) in nats (0 at s = N)
    std::map<int32_t, std::string> pieces; ///< display text of every id in top1
    /// Whether residual state s has a map (a row of numbers).
    bool hasState(int64_t s) const { return s >= 0 && s < top1.dim(0) && top1.at2(s, 0) >= 0; }
};

/// Each model's readouts, the logit lens first, then every lens drawn on it; and the lenses that
/// could not be drawn on a model, with the reason.
struct LensComparison {
    std::vector<LensReadout> grassmann, baseline;
    std::vector<std::string> notes;
    const std::vector<LensReadout>& of(bool grassmannModel) const { return grassmannModel ? grassmann : baseline; }
    bool empty() const { return grassmann.empty() && baseline.empty(); }
};
using LensComparisonPtr = std::shared_ptr<const LensComparison>;

/// Per lens (rows: the logit lens, then each lens given) and residual state s = 0..N-1 (columns),
/// means over every position with a next token: KL(p_final || p_s) in nats, cross-entropy against
/// the next token in nats, top-1 agreement with the final layer, and the rank of the next token
/// (0 = the lens's top token). NaN where a lens has no map (the Jacobian lens at s = 0).
struct LensEvalResult {
    std::vector<std::string> lenses;      ///< "logit", then lensKindName of each lens given
    std::vector<std::string> lensFolders; ///< "" for the logit lens
    std::vector<std::string> lensModels;  ///< the model each lens was fitted on ("" = this one)
    std::vector<bool> sameModel;          ///< whether that lens was fitted on this model's weights
    std::string modelName;
    int64_t nLayers = 0;
    int64_t prompts = 0;
    int64_t positions = 0;
    Array<double> kl, ce, top1, rank; ///< lenses x N
    Array<double> finalCe;            ///< 1: the model's own cross-entropy (state N)
};
using LensEvalPtr = std::shared_ptr<const LensEvalResult>;

} // namespace gwb::engine
