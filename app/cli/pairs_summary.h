#pragma once
// The printed summary of a run over pairs (gwb patch --pairs, gwb paths --pairs, gwb patch merge):
// first the verdict on whether there is anything to explain, then the estimator, the correction
// and the strongest cells (effect_claims.h's numbers; one printer for every pairs command).

#include "gwb/engine/effect_claims.h"

#include <functional>
#include <string>

namespace gwb::app {

/// `label(i)` names cell i ("L3, D=4" or "offset.5.2 -> logits"); `estimated`: the cells hold
/// first-order estimates (attribution), summarised as mean estimated metric changes.
void printPairsEstimates(const gwb::engine::PairsEstimates& e, const std::function<std::string(size_t)>& label,
                         bool estimated);

} // namespace gwb::app
