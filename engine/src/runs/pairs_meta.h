#pragma once
// The JSON of pairs runs' meta.json, private to the engine (the public PairsResult carries the
// typed fields and the text): a pair's entry, the skipped lines, and the typed fields read back.

#include "gwb/engine/patch_pairs_run.h"

#include <nlohmann/json.hpp>

namespace gwb::engine {

/// A pair as meta.json lists it: line, texts, answer and wrong (typed, piece, id), tokens, tags.
nlohmann::json pairJson(const Model& model, const PatchPair& pair, const PatchRequest& request);
/// [{"line", "reason"}, ...]
nlohmann::json skippedJson(const std::vector<SkippedLine>& skipped);
/// Sets r.metaJson to `meta` and the typed fields from it (model_name, site, mode, labels, skipped,
/// pairs_usable, shard, stopped_by). Throws std::invalid_argument for a field of the wrong type.
void setPairsMeta(PairsResult& r, const nlohmann::json& meta);

} // namespace gwb::engine
