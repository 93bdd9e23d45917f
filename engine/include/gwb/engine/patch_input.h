#pragma once
// Turning what a person types (prompts, answer and wrong pieces, site and mode names) into an
// engine PatchRequest for one model, with messages that name the problem in the person's words:
// shared by `gwb patch`, the window's Patching view, `gwb figure --view patching` and the Python
// package's model.patch(). Std types only.

#include "gwb/engine/npy.h"
#include "gwb/engine/patching.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {

class Model;

/// The typed inputs of a patching run (one model).
struct PatchText {
    std::string clean;     ///< clean prompt text
    std::string corrupt;   ///< corrupted prompt text; "" = ablate the clean prompt (zero/mean)
    std::string answer;    ///< answer piece ("" with wrong "" = no logit-difference metric)
    std::string wrong;     ///< wrong piece
    std::string site;      ///< "resid", "mixer", "gate", "ffn", "offset", "head" or "offset/head"
    std::string mode;      ///< "patch", "zero", "mean"; "" = patch with a corrupted prompt, else zero
    int64_t position = -1; ///< metric position; -1 = the last token
};

/// One vocabulary id for a typed piece: the text's encoding when it is one piece (as the Saliency
/// view reads its target: "she" is the word-start piece "▁she"), else a piece whose display text
/// is exactly the text ("_she" also names "▁she"). Throws std::invalid_argument saying it is not
/// one vocabulary piece, with the piece probably meant.
int64_t pieceId(const Model& model, const std::string& piece, const char* what);

/// Display texts of token ids ("▁she"), for messages and labels.
std::vector<std::string> pieceTexts(const Model& model, const std::vector<int64_t>& ids);

/// Sites the model's kind has ("resid, mixer, gate, ffn, offset" for Grassmann).
std::vector<PatchSite> sitesOf(const Model& model);

/// Whether `site` exists in the model's kind.
bool siteAvailable(const Model& model, PatchSite site);

/// The request for `model`, checked: prompts tokenize (to the same length, naming both lengths and
/// the first differing token as pieces), fit the context, pieces are vocabulary pieces, the site
/// exists for the model's kind, the mode fits (patch needs a corrupted prompt; a corrupted prompt
/// needs an answer and a wrong piece), the position is inside the prompt; then
/// validatePatchRequest. Throws std::invalid_argument with a message for a person.
PatchRequest preparePatchRequest(const Model& model, const PatchText& input);

/// "(metric - corrupt) / (clean - corrupt) ..." words for meta.json and figure captions.
std::string patchDefinitions();

/// The arrays `gwb patch` writes for a sweep, by name: effect, metric, clean_metric,
/// corrupt_metric (exact with a metric); attribution, estimated_metric, flagged, clean_metric,
/// corrupt_metric (attribution); defined, computed; delta_logprob, mean_delta_logprob (ablation
/// without a metric); clean_ids, corrupt_ids.
std::vector<NpzMember> patchSweepArrays(const PatchSweep& sweep);

} // namespace gwb::engine
