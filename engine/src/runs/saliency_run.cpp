// Saliency of a traced prompt at one token (tracer.h: saliencyAt): the target's rules and
// messages, for the window's Saliency view and `gwb figure --view saliency`.

#include "gwb/engine/patch_input.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/tracer.h"

#include <stdexcept>

namespace gwb::engine {

std::vector<float> saliencyAt(const Model& model, const Trace& trace, int64_t t, const std::string& target,
                              std::string* targetPiece) {
    std::vector<int32_t> ids;
    for (const TraceToken& tok : trace.tokens)
        ids.push_back(tok.id);
    const auto T = static_cast<int64_t>(ids.size());
    if (t < 0 || t >= T)
        throw std::invalid_argument("token " + std::to_string(t) + " is outside this trace (" + std::to_string(T) +
                                    " tokens)");
    int32_t targetId = -1, wrongId = -1;
    std::string piece;
    if (const size_t minus = target.find(" - "); minus != std::string::npos && minus > 0) {
        // The contrast "A - W": logit[A] - logit[W], as the causal tests' metric.
        targetId = static_cast<int32_t>(pieceId(model, target.substr(0, minus), "the target"));
        wrongId = static_cast<int32_t>(pieceId(model, target.substr(minus + 3), "the contrast's wrong piece"));
        piece = model.tokenizer()->pieceText(targetId) + " - " + model.tokenizer()->pieceText(wrongId);
    } else if (target.empty()) {
        if (t + 1 >= T) throw std::invalid_argument("the last token has no next token: type a target piece");
        targetId = ids[static_cast<size_t>(t + 1)];
        piece = trace.tokens[static_cast<size_t>(t + 1)].text;
    } else {
        targetId = static_cast<int32_t>(pieceId(model, target, "the target"));
        piece = model.tokenizer()->pieceText(targetId);
    }
    if (targetPiece) *targetPiece = piece;
    return saliency(model, ids, t, targetId, wrongId);
}

} // namespace gwb::engine
