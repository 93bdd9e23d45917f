#pragma once
// Saliency of a run for both models (the window's Saliency view and token strip, `gwb figure
// --view saliency`): the typed result, and the shares a chart draws. Std types only; the shares
// are Torch-free (gwb_trace), the computation is tracer.h's saliencyAt.

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

/// Gradient x input saliency of one (token, target) for both models.
struct SaliencyResult {
    int token = -1;               ///< position t of the query
    std::string target;           ///< what was asked for ("" = the actual next token)
    std::string grassmannTarget;  ///< the target piece as the Grassmann model's tokenizer reads it
    std::string baselineTarget;   ///< the same for the Transformer
    std::vector<float> grassmann; ///< T_G gradient x input per token (0 after t); empty = not computed
    std::vector<float> baseline;  ///< T_B the same for the Transformer
    std::string grassmannError;   ///< why the Grassmann saliency is missing ("" = fine)
    std::string baselineError;
};

/// |s_j| / sum_{i<=t} |s_i| over j = 0..t (NaN-free; all zero when the sum is 0).
std::vector<float> saliencyShares(const std::vector<float>& s, int64_t t);

} // namespace gwb::engine
