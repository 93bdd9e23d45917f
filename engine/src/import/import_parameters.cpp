// gwb import, the parameters: a converted family's tensors through the layout's key table into our
// named parameters (stacked and transposed where the layout says), then the buffers checked (pair
// indices folded into W_plu's columns, causal masks, offset buffers, a tied head) and no key left
// over. The rest of the conversion is import_convert.cpp's.

#include "import/import_convert.h"

#include "gwb/engine/config_io.h"
#include "import/import_rules.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gwb::engine {

namespace {

/// "a, b, c and 7 more" for messages.
std::string listNames(const std::vector<std::string>& names, size_t shown = 8) {
    std::string s;
    for (size_t i = 0; i < names.size() && i < shown; ++i) {
        if (i) s += ", ";
        s += names[i];
    }
    if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
    return s;
}

} // namespace

/// Our parameters through the layout's key table: every key present with exactly our shape,
/// pair-index and causal-mask buffers checked, a tied head checked, no key left over.
std::map<std::string, FloatArray> detail::mapParameters(const Layout& L,
                                                        const std::map<std::string, RawTensor>& tensors,
                                                        const ModelConfig& c, ImportReport& report) {
    const KindLayout& k = L.kind(c.kind);
    // Parameters: every mapped key must be present with exactly our shape.
    std::map<std::string, std::vector<int64_t>> wanted;
    for (const auto& s : parameterSpecs(c))
        wanted[s.name] = s.shape;
    std::set<std::string> used;
    std::vector<std::string> missing;
    std::map<std::string, FloatArray> params;
    auto storedTransposed = [&](const std::string& ours) { // "blocks.3.qkv.weight" -> is "qkv" in transposed?
        if (ours.rfind("blocks.", 0) != 0 || ours.size() < 7 || ours.compare(ours.size() - 7, 7, ".weight") != 0)
            return false;
        const size_t dot = ours.find('.', 7);
        return k.transposed.count(ours.substr(dot + 1, ours.size() - 7 - dot - 1)) != 0;
    };
    for (const KeyMapping& m : layoutMappings(L, c.kind, c.nLayers, c.mixerLayerNorm)) {
        const auto want = wanted.find(m.ours);
        if (want == wanted.end()) throw std::logic_error("import: layout table names unknown parameter " + m.ours);
        // One tensor of theirs, or several stacked along the first dimension (q | k | v).
        std::vector<float> data;
        std::vector<int64_t> shape;
        std::string names;
        bool complete = true;
        for (const std::string& theirs : m.theirs) {
            names += (names.empty() ? "'" : " + '") + theirs + "'";
            const auto it = tensors.find(theirs);
            if (it == tensors.end()) {
                missing.push_back(theirs);
                complete = false;
                continue;
            }
            used.insert(theirs);
            const std::vector<int64_t>& s = it->second.shape;
            if (shape.empty()) {
                shape = s;
            } else if (s.empty() || s.size() != shape.size() ||
                       !std::equal(s.begin() + 1, s.end(), shape.begin() + 1)) {
                throw std::runtime_error("shape mismatch: " + names + " cannot be stacked (" + it->second.describe() +
                                         ")");
            } else {
                shape[0] += s[0];
            }
            std::vector<float> v = it->second.toFloat();
            if (storedTransposed(m.ours)) { // stored input x output (Conv1D): ours is output x input
                if (s.size() != 2)
                    throw std::runtime_error("shape mismatch: '" + theirs + "' is " + it->second.describe() +
                                             ", expected a matrix (input x output)");
                std::vector<float> t(v.size());
                for (int64_t i = 0; i < s[0]; ++i)
                    for (int64_t j = 0; j < s[1]; ++j)
                        t[static_cast<size_t>(j * s[0] + i)] = v[static_cast<size_t>(i * s[1] + j)];
                v = std::move(t);
                if (m.theirs.size() == 1)
                    shape = {s[1], s[0]};
                else
                    throw std::logic_error("import: a transposed parameter stacked from several tensors");
            }
            data.insert(data.end(), v.begin(), v.end());
        }
        if (!complete) continue;
        if (shape != want->second) {
            const std::string is =
                m.theirs.size() == 1 ? tensors.at(m.theirs[0]).describe() : "stacked " + shapeText(shape);
            throw std::runtime_error("shape mismatch: " + names + " is " + is + ", expected " +
                                     shapeText(want->second) + " (V=" + std::to_string(c.vocabSize) +
                                     ", d=" + std::to_string(c.dModel) + ", r=" + std::to_string(c.reduced) +
                                     ", d_ff=" + std::to_string(c.dFF) + ")");
        }
        params[m.ours] = FloatArray(want->second, std::move(data));
    }
    if (!missing.empty())
        throw std::runtime_error("missing keys (" + L.name + " layout, " + kindName(c.kind) +
                                 " model): " + listNames(missing));

    // Pair-index buffers: checked against our order; another order of the same pairs is
    // folded into W_plu's columns (with a sign flip for pairs stored as (j, i)).
    if (c.kind == ModelKind::Grassmann && !k.idxI.empty()) {
        for (int64_t l = 0; l < c.nLayers; ++l) {
            const std::string p = L.blockPrefix(l);
            const bool hi = tensors.count(p + k.idxI) != 0, hj = tensors.count(p + k.idxJ) != 0;
            if (!hi && !hj) continue;
            if (hi != hj)
                throw std::runtime_error("missing key '" + p + (hi ? k.idxJ : k.idxI) + "' (its partner is present)");
            const auto cols = pairColumns(tensors.at(p + k.idxI), tensors.at(p + k.idxJ), c.reduced, p + k.idxI);
            used.insert(p + k.idxI);
            used.insert(p + k.idxJ);
            bool identity = true;
            for (size_t q = 0; q < cols.size(); ++q)
                identity &= cols[q].first == static_cast<int64_t>(q) && cols[q].second > 0;
            if (identity) continue;
            // The matrix that reads the planes: W_plu (d x C), or the per-offset MLP's first layer (d_geom x C).
            const bool mlp = c.aggregation == Aggregation::PerOffsetMlp;
            FloatArray& w = params.at("blocks." + std::to_string(l) + (mlp ? ".geo_in.weight" : ".w_plu.weight"));
            const FloatArray src = w;
            const int64_t cc = static_cast<int64_t>(cols.size());
            for (int64_t row = 0; row < w.dim(0); ++row)
                for (int64_t q = 0; q < cc; ++q)
                    w.data[static_cast<size_t>(row * cc + cols[static_cast<size_t>(q)].first)] =
                        cols[static_cast<size_t>(q)].second * src.data[static_cast<size_t>(row * cc + q)];
            report.notes.push_back("layer " + std::to_string(l) + ": pair order differs from ours; " +
                                   (mlp ? "geo_in" : "W_plu") + " columns reordered");
        }
    }

    // Causal-mask buffers: must be the Lmax x Lmax lower-triangular ones our attention applies.
    if (c.kind == ModelKind::Transformer && !k.causalMask.empty()) {
        for (int64_t l = 0; l < c.nLayers; ++l) {
            const std::string name = L.blockPrefix(l) + k.causalMask;
            const auto it = tensors.find(name);
            if (it == tensors.end()) continue;
            checkCausalMask(it->second, c.maxLen, name);
            used.insert(name);
        }
    }

    // Buffers that carry nothing (older transformers' attn.masked_bias).
    for (const auto& [buffer, why] : k.ignoredBuffers) {
        int n = 0;
        for (int64_t l = 0; l < c.nLayers; ++l)
            n += used.insert(L.blockPrefix(l) + buffer).second && tensors.count(L.blockPrefix(l) + buffer);
        if (n) report.notes.push_back("skipped " + std::to_string(n) + " x " + buffer + ": " + why);
    }

    // Offset buffers (read by offsetsFor).
    if (!k.offsetsBuffer.empty())
        for (int64_t l = 0; l < c.nLayers; ++l)
            if (tensors.count(L.blockPrefix(l) + k.offsetsBuffer)) used.insert(L.blockPrefix(l) + k.offsetsBuffer);

    // Tied head: optional, but when present it must be the token table.
    if (const auto it = tensors.find(L.head); it != tensors.end()) {
        used.insert(L.head);
        const FloatArray& e = params.at("tok_embed.weight");
        if (it->second.shape != e.shape || it->second.toFloat() != e.data)
            throw std::runtime_error("'" + L.head + "' (" + it->second.describe() +
                                     ") differs from the token embedding: untied heads are not supported");
    }

    std::vector<std::string> unknown;
    for (const auto& [n, t] : tensors)
        if (!used.count(n)) unknown.push_back(n);
    if (!unknown.empty()) {
        const ModelKind other = c.kind == ModelKind::Grassmann ? ModelKind::Transformer : ModelKind::Grassmann;
        const bool otherKind = c.kind == ModelKind::Grassmann && L.kinds.count(other) &&
                               std::any_of(unknown.begin(), unknown.end(), [&](const std::string& n) {
                                   return n.find(L.kinds.at(other).probe) != std::string::npos;
                               });
        throw std::runtime_error("unknown keys (" + L.name + " layout, " + kindName(c.kind) + " model): " +
                                 listNames(unknown) + (otherKind ? " (it mixes Grassmann and attention blocks)" : ""));
    }

    return params;
}

} // namespace gwb::engine
