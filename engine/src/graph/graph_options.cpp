// The graph request's numeric options, declared once (gwb/engine/graph_run.h: graphOptions): the
// command line, Python and the validation read this table.

#include "gwb/engine/graph_run.h"

#include <stdexcept>

namespace gwb::engine {

const OptionTable<GraphRequest>& graphOptions() {
    using R = GraphRequest;
    static const OptionTable<R> options = {
        integerOption<R>("max_logits", "max-logits", "N", "Logit nodes, at most", 1, kNoMax, &R::maxLogits),
        numberOption<R>("logit_probability", "logit-probability", "P", "Logit nodes up to this cumulative probability",
                        0, true, 1, false, &R::logitProbability),
        integerOption<R>("max_features", "max-features", "N",
                         "Features given rows, chosen by influence; every active one when there are fewer", 0, kNoMax,
                         &R::maxFeatureNodes),
        numberOption<R>("node_threshold", "node-threshold", "X", "Pruning: cumulative node influence kept", 0, false, 1,
                        false, &R::nodeThreshold),
        numberOption<R>("edge_threshold", "edge-threshold", "X", "Pruning: cumulative edge influence kept", 0, false, 1,
                        false, &R::edgeThreshold),
        integerOption<R>("batch", "batch", "B",
                         "Targets per backward pass, at most; long prompts take B * 256 / tokens, at least 4", 1,
                         kNoMax, &R::batch),
    };
    return options;
}

void validateGraphRequest(const GraphRequest& request) {
    checkOptions(graphOptions(), request);
    if (request.answer.empty() != request.wrong.empty())
        throw std::invalid_argument("the contrast needs both an answer and a wrong piece");
}

} // namespace gwb::engine
