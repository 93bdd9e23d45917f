#pragma once
// A forward pass with hooks at named sites: read a site's value, or replace it and let the rest of
// the pass use the replacement (the Python package's model.run(ids, hooks=...)). Std types only.
//
// Site names are those of gwb patch, the NPZ labels and the window (patching.h):
//   resid.L     the block input h^L, L = 0..N (L = N: the final state before the final LayerNorm), T x d
//   mixer.L     the mixing sublayer's output (Grassmann g after the empty rule; attention after
//               out_proj), T x d
//   gate.L      (Grassmann) the gate a, T x d
//   ffn.L       the FFN output, T x d
//   ffn_in.L    what the FFN reads (LN2 of the residual in pre-norm blocks, the residual itself in
//               post-norm ones), T x d; read only (a transcoder's input: a
//               replacement is refused, change ffn.L instead); not in hookSiteNames()
//   offset.L.D  (Grassmann) offset D's normalised Plucker vectors, T x C(r,2); rows t < D are zero
//               and take no part in the average (a replacement there is ignored)
//   head.L.H    (Transformer) head H's context rows (its slice of out_proj's input), T x d_head
// Within a block the hooks run in the order the values are computed: offsets (ascending D) or
// heads, then mixer, gate, ffn; resid.L before block L. A value passed to a hook already reflects
// every earlier replacement. A replacement bitwise equal to the value is no replacement: identity
// hooks leave the logits bit-identical.

#include "gwb/engine/array.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gwb::engine {

class Model;

/// Called with the site's value and its name; returns nothing to only observe, or an array of the
/// same shape to replace the value. May throw: the exception leaves the run as it is.
using SiteHook = std::function<std::optional<FloatArray>(const FloatArray& value, const std::string& name)>;

/// Every site name of the model for a prompt of T tokens, in the order hooks run (offsets with
/// D >= T included: their values are all zero rows).
std::vector<std::string> hookSiteNames(const Model& model);

/// Shape of a site's value for T tokens; throws std::invalid_argument naming the valid sites
/// (a summary of hookSiteNames) for a name the model lacks.
std::vector<int64_t> hookSiteShape(const Model& model, const std::string& name, int64_t T);

/// Logits (T x V) of the prompt with the hooks applied. Without hooks: a plain forward pass.
/// Throws std::invalid_argument for an unknown site name (listing the valid ones), ids outside
/// the vocabulary, an empty prompt or one longer than max_len, and a replacement of the wrong
/// shape (naming the site and both shapes).
/// `warnings` (optional) receives what makes the result ill-defined: in a Grassmann model, a layer
/// after a replacement where 5% or more of the pair planes join nearly parallel reduced vectors
/// (sin < 1e-4), whose normalised Plucker vectors are rounding noise (a zeroed residual does this).
FloatArray runWithHooks(const Model& model, const std::vector<int64_t>& ids,
                        const std::map<std::string, SiteHook>& hooks = {},
                        std::vector<std::string>* warnings = nullptr);

} // namespace gwb::engine
