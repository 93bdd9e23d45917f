#pragma once
// The one site vocabulary: every place a value inside a model is named — hooks, patching
// sweeps and their labels, path patching's senders and receivers, dictionaries, NPZ labels, the
// window — reads and writes these names through this parser and printer:
//   resid.L      block input h^L, L = 0..N (N: the final state before the final LayerNorm)
//   mixer.L      the mixer's output of block L        gate.L   the Grassmann gate a (Grassmann only)
//   ffn.L        the FFN's output                      ffn_in.L the FFN's input (read only)
//   offset.L.D   offset D's Plücker vectors (Grassmann) head.L.H head H's context (Transformer)
// and "offset/head", the word for "each model's own mixing unit" (offsets in a Grassmann model,
// heads in a Transformer) that the window and `gwb figure` use for both models at once.
// Std-only, Torch-free (gwb_trace).

#include "gwb/engine/config.h"

#include <string>
#include <vector>

namespace gwb::engine {

enum class SiteKind { Resid, Mixer, Gate, Ffn, FfnIn, Offset, Head };

/// A parsed site name.
struct SiteRef {
    SiteKind kind = SiteKind::Resid;
    int layer = 0;
    int unit = -1; ///< D of an offset, H of a head; -1 for the other kinds
};

/// "resid", "mixer", "gate", "ffn", "ffn_in", "offset", "head".
const char* siteKindName(SiteKind kind);

/// The printer: "resid.3", "offset.5.2", "head.2.1".
std::string siteName(const SiteRef& site);
std::string siteName(SiteKind kind, int layer, int unit = -1);

/// The parser, checked against the model: throws std::invalid_argument "unknown <what> 'NAME'
/// (why); the Grassmann model's sites are ..." (validSiteNames) for a name it lacks.
SiteRef parseSiteName(const std::string& name, const ModelConfig& config, const std::string& what = "site");

/// "resid.0 .. resid.N, mixer.L, ffn_in.L (read only), gate.L, ffn.L, offset.L.D with L = 0..N-1
/// and D in {...}": the model's sites in a sentence, for messages.
std::string validSiteNames(const ModelConfig& config);

/// Every writable site of the model, block by block: resid.L, offset.L.D or head.L.H, mixer.L,
/// gate.L (Grassmann), ffn.L; then resid.N.
std::vector<std::string> siteNames(const ModelConfig& config);

/// The mixing-unit alias "offset/head".
inline constexpr const char* kUnitAlias = "offset/head";

/// The mixing unit's site word of a model kind: "offset" (Grassmann) or "head" (Transformer).
const char* unitSiteWord(ModelKind kind);

/// A site word as a model of `kind` reads it: the alias "offset/head" becomes unitSiteWord(kind);
/// every other word is returned unchanged.
std::string resolveUnitAlias(const std::string& word, ModelKind kind);

/// The rules of a causal test's text inputs that need no model, stated once for `gwb patch`,
/// `gwb paths`, Python and the window's Patching and Paths views: mode patch needs a corrupted
/// prompt; the metric logit[answer] - logit[wrong] needs both pieces or neither; a corrupted prompt
/// needs the metric. "" when they hold, else the problem (lower case, no full stop).
std::string patchTextProblem(const std::string& mode, bool hasCorrupt, bool hasAnswer, bool hasWrong);

} // namespace gwb::engine
