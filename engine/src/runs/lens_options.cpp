// The lens fit's and evaluation's options, declared once (gwb/engine/lens.h: lensFitOptions,
// lensEvalOptions), and the fit request's checks: `gwb lens fit|eval`'s flags, gwb.lens.fit's and
// eval's keywords and gwb.lens.DEFAULTS all read these tables.

#include "gwb/engine/lens.h"

#include <stdexcept>

namespace gwb::engine {

const OptionTable<LensFitRequest>& lensFitOptions() {
    using R = LensFitRequest;
    static const OptionTable<R> table = {
        textOption<R>(
            "kind", "kind", "tuned|jacobian", "Which lens to fit", [](const R& r) { return lensKindName(r.kind); },
            [](R& r, const std::string& v) { r.kind = lensKindFromName(v); }),
        integerOption<R>("window", "window", "N", "Tokens per prompt; each file is cut into windows of N tokens", 2,
                         kNoMax, &R::window),
        integerOption<R>("max_prompts", "max-prompts", "N", "Use the first N windows of all files; 0 = all", 0, kNoMax,
                         &R::maxPrompts),
        shardOption<R>("Jacobian lens: cover windows g with g mod n = i; 'gwb lens merge' joins the shards"),
        integerOption<R>("skip_first", "skip-first", "N", "Jacobian lens: leading positions left out of the average", 0,
                         kNoMax, &R::skipFirst),
        integerOption<R>("dim_batch", "dim-batch", "N", "Jacobian lens: output dimensions per backward pass", 1, kNoMax,
                         &R::dimBatch),
        integerOption<R>("steps", "steps", "N", "Tuned lens: optimiser steps", 1, kNoMax, &R::steps),
        integerOption<R>("tokens_per_step", "tokens-per-step", "N", "Tuned lens: tokens per step, in whole windows", 1,
                         kNoMax, &R::tokensPerStep),
        numberOption<R>("lr", "lr", "X", "Tuned lens: SGD learning rate in torch units, decayed linearly to 0", 0, true,
                        kNoMax, false, &R::lr),
        numberOption<R>("momentum", "momentum", "X", "Tuned lens: Nesterov momentum", 0, false, 1, true, &R::momentum),
        numberOption<R>("weight_decay", "weight-decay", "X", "Tuned lens: weight decay", 0, false, kNoMax, false,
                        &R::weightDecay),
        numberOption<R>("clip", "clip", "X", "Tuned lens: gradient norm clipping", 0, true, kNoMax, false, &R::clip),
        integerOption<R>("seed", "seed", "N", "Tuned lens: seed of the windows each step reads", 0, kMaxSeed, &R::seed),
    };
    return table;
}

const OptionTable<LensEvalRequest>& lensEvalOptions() {
    using R = LensEvalRequest;
    static const OptionTable<R> table = {
        integerOption<R>("window", "window", "N", "Tokens per prompt", 2, kNoMax, &R::window),
        integerOption<R>("max_prompts", "max-prompts", "N", "Use the first N windows; 0 = all", 0, kNoMax,
                         &R::maxPrompts),
    };
    return table;
}

void LensFitRequest::validate() const {
    const auto need = [](bool ok, const std::string& what) {
        if (!ok) throw std::invalid_argument(what);
    };
    need(kind != LensKind::Logit, "the logit lens has nothing to fit: choose --kind tuned or jacobian");
    need(!files.empty() || !promptIds.empty(), "no text: give --corpus files");
    checkOptions(lensFitOptions(), *this);
    need(shardCount >= 1 && shardIndex >= 0 && shardIndex < shardCount,
         "shard (--shard i/n) needs 0 <= i < n; got " + std::to_string(shardIndex) + "/" + std::to_string(shardCount));
    need(kind == LensKind::Jacobian || shardCount == 1, "--shard is for the Jacobian lens only");
    need(kind != LensKind::Jacobian || skipFirst + 2 <= window,
         "skip_first (--skip-first) leaves no position to average: it must be at most window - 2");
}

} // namespace gwb::engine
