#pragma once
// The Qt spelling of gwb/engine/patch_input.h (typed patching inputs -> a checked PatchRequest)
// for `gwb patch`, the window's Patching view and `gwb figure --view patching`.

#include "gwb/engine/patching.h"

#include <QString>

#include <cstdint>
#include <string>
#include <vector>

namespace gwb::engine {
class Model;
}

namespace gwb::app {

/// The typed inputs of a patching run (one model).
struct PatchInput {
    QString clean;         ///< clean prompt text
    QString corrupt;       ///< corrupted prompt text; "" = ablate the clean prompt (zero/mean)
    QString answer;        ///< answer piece ("" with wrong "" = no logit-difference metric)
    QString wrong;         ///< wrong piece
    QString site;          ///< "resid", "mixer", "gate", "ffn", "offset", "head"
    QString mode;          ///< "patch", "zero", "mean"; "" = patch with a corrupted prompt, else zero
    int64_t position = -1; ///< metric position; -1 = the last token
};

/// One vocabulary id for a typed piece: the text's encoding when it is one piece (as the Saliency
/// view reads its target: "she" is the word-start piece "▁she"), else a piece whose display text
/// is exactly the text. Throws std::invalid_argument saying it is not one vocabulary piece.
int64_t pieceId(const gwb::engine::Model& model, const QString& piece, const char* what);

/// Display texts of token ids ("▁she"), for messages and labels.
std::vector<std::string> pieceTexts(const gwb::engine::Model& model, const std::vector<int64_t>& ids);

/// Sites the model's kind has ("resid, mixer, gate, ffn, offset" for Grassmann).
std::vector<gwb::engine::PatchSite> sitesOf(const gwb::engine::Model& model);

/// Whether `site` exists in the model's kind.
bool siteAvailable(const gwb::engine::Model& model, gwb::engine::PatchSite site);

/// The request for `model`, checked: prompts tokenize (to the same length, naming both lengths and
/// the first differing token as pieces), fit the context, pieces are vocabulary pieces, the site
/// exists for the model's kind, the mode fits (patch needs a corrupted prompt; a corrupted prompt
/// needs --answer and --wrong), the position is inside the prompt; then the engine's own
/// validatePatchRequest. Throws std::invalid_argument with a message for a person.
gwb::engine::PatchRequest preparePatchRequest(const gwb::engine::Model& model, const PatchInput& input);

/// "(metric - corrupt) / (clean - corrupt) ..." words for meta.json and figure captions.
std::string patchDefinitions();

} // namespace gwb::app
