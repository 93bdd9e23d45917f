// Causal tests' requests (gwb/engine/patching.h): site and mode names, the checks that refuse a
// bad request by name, and the layout of a sweep (its rows, columns and cells). Running the
// cells is patching.cpp's job.

#include "runs/patching_request.h"

#include "model/model_impl.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gwb::engine {

namespace {

std::string idText(const Model& model, int64_t id) {
    std::string s = std::to_string(id);
    if (const TokenizerPtr tok = model.tokenizer(); tok && id >= 0 && id < tok->vocabSize())
        s += " '" + tok->pieceText(static_cast<int32_t>(id)) + "'";
    return s;
}

bool isGrassmann(const Model& model) {
    return model.config().kind == ModelKind::Grassmann;
}

} // namespace

namespace detail {

bool hasMetric(const PatchRequest& r) {
    return r.answer >= 0 && r.wrong >= 0;
}

std::vector<Intervention> sweepCells(const Model& model, const PatchRequest& r, PatchSweep& s) {
    const ModelConfig& c = model.config();
    const int64_t T = static_cast<int64_t>(r.clean.size());
    std::vector<Intervention> cells;
    auto cell = [&](int layer) {
        Intervention i;
        i.site = r.site;
        i.mode = r.mode;
        i.layer = layer;
        return i;
    };
    auto keepLayer = [&](int l) { return r.layer < 0 || l == r.layer; };
    auto keepHead = [&](int64_t hd) { return r.head < 0 || hd == r.head; };
    auto positionLabels = [&] {
        for (int64_t t = 0; t < T; ++t)
            s.colLabels.push_back(std::to_string(t));
    };
    switch (r.site) {
    case PatchSite::Resid:
    case PatchSite::Mixer:
    case PatchSite::Gate:
    case PatchSite::Ffn: {
        const int rows = static_cast<int>(c.nLayers) + (r.site == PatchSite::Resid ? 1 : 0);
        for (int l = 0; l < rows; ++l) {
            if (!keepLayer(l)) continue;
            s.rowLabels.push_back((r.site == PatchSite::Resid ? "h^" : "L") + std::to_string(l));
            for (int64_t t = 0; t < T; ++t) {
                Intervention i = cell(l);
                i.position = static_cast<int>(t);
                cells.push_back(i);
                s.defined.push_back(1);
            }
        }
        positionLabels();
        break;
    }
    case PatchSite::Offset: {
        std::set<int> all;
        for (const auto& offs : c.layerOffsets)
            all.insert(offs.begin(), offs.end());
        if (r.offset >= 0) all = {r.offset};
        for (int D : all)
            s.colLabels.push_back("D=" + std::to_string(D));
        for (int l = 0; l < c.nLayers; ++l) {
            if (!keepLayer(l)) continue;
            s.rowLabels.push_back("L" + std::to_string(l));
            const auto& offs = c.layerOffsets[static_cast<size_t>(l)];
            for (int D : all) {
                Intervention i = cell(l);
                i.offset = D;
                cells.push_back(i);
                // Undefined where the layer lacks the offset, and where the offset reaches before
                // the prompt at every position (D >= T): it never pairs two real tokens, so
                // there is nothing to change.
                s.defined.push_back(std::find(offs.begin(), offs.end(), D) != offs.end() && D < T ? 1 : 0);
            }
        }
        break;
    }
    case PatchSite::Head:
        for (int64_t hd = 0; hd < c.nHeads; ++hd)
            if (keepHead(hd)) s.colLabels.push_back("H" + std::to_string(hd));
        for (int l = 0; l < c.nLayers; ++l) {
            if (!keepLayer(l)) continue;
            s.rowLabels.push_back("L" + std::to_string(l));
            for (int64_t hd = 0; hd < c.nHeads; ++hd) {
                if (!keepHead(hd)) continue;
                Intervention i = cell(l);
                i.head = static_cast<int>(hd);
                cells.push_back(i);
                s.defined.push_back(1);
            }
        }
        break;
    }
    s.rows = static_cast<int64_t>(s.rowLabels.size());
    s.cols = static_cast<int64_t>(s.colLabels.size());
    return cells;
}

void checkIntervention(const Model& model, const Intervention& i, int64_t T) {
    const ModelConfig& c = model.config();
    const bool g = isGrassmann(model);
    const std::string kind = g ? "a Grassmann model" : "a Transformer";
    if ((i.site == PatchSite::Gate || i.site == PatchSite::Offset) && !g)
        throw std::invalid_argument(std::string("site '") + patchSiteName(i.site) +
                                    "' exists only in Grassmann "
                                    "models; this is a Transformer (use head, mixer, ffn or resid)");
    if (i.site == PatchSite::Head && g)
        throw std::invalid_argument("site 'head' exists only in the Transformer; this is a Grassmann model (use "
                                    "offset, gate, mixer, ffn or resid)");
    const int maxLayer = static_cast<int>(c.nLayers) - (i.site == PatchSite::Resid ? 0 : 1);
    if (i.layer < 0 || i.layer > maxLayer)
        throw std::invalid_argument("layer " + std::to_string(i.layer) + " is out of range: " + kind + " of " +
                                    std::to_string(c.nLayers) + " layers has " + patchSiteName(i.site) + " layers 0.." +
                                    std::to_string(maxLayer));
    if (i.position >= T)
        throw std::invalid_argument("position " + std::to_string(i.position) + " is out of range: the prompt has " +
                                    std::to_string(T) + " tokens");
    if (i.site == PatchSite::Offset) {
        const auto& offs = c.layerOffsets[static_cast<size_t>(i.layer)];
        if (std::find(offs.begin(), offs.end(), i.offset) == offs.end()) {
            std::string list;
            for (int D : offs)
                list += (list.empty() ? "" : ", ") + std::to_string(D);
            throw std::invalid_argument("offset " + std::to_string(i.offset) + " is not in layer " +
                                        std::to_string(i.layer) + " (its offsets are " + list + ")");
        }
    }
    if (i.site == PatchSite::Head && (i.head < 0 || i.head >= c.nHeads))
        throw std::invalid_argument("head " + std::to_string(i.head) + " is out of range: the model has " +
                                    std::to_string(c.nHeads) + " heads (0.." + std::to_string(c.nHeads - 1) + ")");
}

} // namespace detail

using detail::checkIntervention;
using detail::hasMetric;

const char* patchSiteName(PatchSite site) {
    switch (site) {
    case PatchSite::Resid:
        return "resid";
    case PatchSite::Mixer:
        return "mixer";
    case PatchSite::Gate:
        return "gate";
    case PatchSite::Ffn:
        return "ffn";
    case PatchSite::Offset:
        return "offset";
    case PatchSite::Head:
        return "head";
    }
    return "?";
}

const char* patchModeName(PatchMode mode) {
    switch (mode) {
    case PatchMode::Patch:
        return "patch";
    case PatchMode::Zero:
        return "zero";
    case PatchMode::Mean:
        return "mean";
    }
    return "?";
}

PatchSite patchSiteFromName(const std::string& name) {
    for (PatchSite s :
         {PatchSite::Resid, PatchSite::Mixer, PatchSite::Gate, PatchSite::Ffn, PatchSite::Offset, PatchSite::Head})
        if (name == patchSiteName(s)) return s;
    throw std::invalid_argument("unknown site '" + name + "' (use resid, mixer, gate, ffn, offset or head)");
}

PatchMode patchModeFromName(const std::string& name) {
    for (PatchMode m : {PatchMode::Patch, PatchMode::Zero, PatchMode::Mean})
        if (name == patchModeName(m)) return m;
    throw std::invalid_argument("unknown mode '" + name + "' (use patch, zero or mean)");
}

std::vector<int> layerOffsets(const Model& model, int layer) {
    const auto& offs = model.config().layerOffsets;
    if (layer < 0 || layer >= static_cast<int>(offs.size())) return {};
    return offs[static_cast<size_t>(layer)];
}

void validatePatchRequest(const Model& model, const PatchRequest& r) {
    if (!model.valid()) throw std::invalid_argument("no model");
    const ModelConfig& c = model.config();
    const int64_t T = static_cast<int64_t>(r.clean.size());
    if (T == 0) throw std::invalid_argument("the clean prompt is empty");
    checkMinDifference(r.minDifference);
    if (T > c.maxLen)
        throw std::invalid_argument("the prompt has " + std::to_string(T) +
                                    " tokens, more than the model's context of " + std::to_string(c.maxLen));
    if (!r.corrupt.empty() && r.corrupt.size() != r.clean.size()) {
        size_t first = 0;
        while (first < r.clean.size() && first < r.corrupt.size() && r.clean[first] == r.corrupt[first])
            ++first;
        std::string at = "they first differ at token " + std::to_string(first);
        if (first < r.clean.size() && first < r.corrupt.size())
            at += " (" + idText(model, r.clean[first]) + " against " + idText(model, r.corrupt[first]) + ")";
        throw std::invalid_argument("the clean prompt has " + std::to_string(r.clean.size()) +
                                    " tokens and the corrupted one " + std::to_string(r.corrupt.size()) +
                                    "; patching needs prompts of the same length (" + at + ")");
    }
    if (r.corrupt.empty() && r.mode == PatchMode::Patch)
        throw std::invalid_argument("mode 'patch' needs a corrupted prompt of the same length (or use zero or mean "
                                    "to ablate the clean prompt)");
    for (const auto* ids : {&r.clean, &r.corrupt})
        for (int64_t id : *ids)
            if (id < 0 || id >= c.vocabSize)
                throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (" +
                                            std::to_string(c.vocabSize) + " pieces)");
    if ((r.answer >= 0) != (r.wrong >= 0))
        throw std::invalid_argument("the logit difference needs both an answer and a wrong piece");
    for (int64_t id : {r.answer, r.wrong})
        if (id >= c.vocabSize)
            throw std::invalid_argument("piece id " + std::to_string(id) + " is outside the vocabulary");
    if (!r.corrupt.empty() && !hasMetric(r))
        throw std::invalid_argument("with a corrupted prompt, give the answer and the wrong piece of the logit "
                                    "difference");
    if (r.position >= T)
        throw std::invalid_argument("metric position " + std::to_string(r.position) +
                                    " is out of range: the prompt has " + std::to_string(T) + " tokens");
    const int maxLayer = static_cast<int>(c.nLayers) - (r.site == PatchSite::Resid ? 0 : 1);
    if (r.layer > maxLayer)
        throw std::invalid_argument("layer " + std::to_string(r.layer) + " is out of range: site " +
                                    patchSiteName(r.site) + " has layers 0.." + std::to_string(maxLayer));
    if (r.offset >= 0 && r.site != PatchSite::Offset)
        throw std::invalid_argument("an offset selects a column only of site 'offset'");
    if (r.head >= 0 && r.site != PatchSite::Head)
        throw std::invalid_argument("a head selects a column only of site 'head'");
    if (r.offset >= 0 && r.site == PatchSite::Offset) {
        std::set<int> have;
        for (size_t l = 0; l < c.layerOffsets.size(); ++l)
            if (r.layer < 0 || static_cast<int>(l) == r.layer)
                have.insert(c.layerOffsets[l].begin(), c.layerOffsets[l].end());
        if (!have.count(r.offset)) {
            std::string list;
            for (int D : have)
                list += (list.empty() ? "" : ", ") + std::to_string(D);
            throw std::invalid_argument("offset " + std::to_string(r.offset) + " is not an offset of " +
                                        (r.layer >= 0 ? "layer " + std::to_string(r.layer) : std::string("any layer")) +
                                        " (it has " + list + ")");
        }
    }
    Intervention probe;
    probe.site = r.site;
    probe.layer = 0;
    if (r.site == PatchSite::Offset) probe.offset = c.layerOffsets.empty() ? 0 : c.layerOffsets[0].front();
    if (r.site == PatchSite::Head) probe.head = std::max(r.head, 0);
    checkIntervention(model, probe, T);
}

namespace detail {

void validatePathRequest(const Model& model, const PathRequest& q, const char* what) {
    PatchRequest check;
    check.clean = q.clean;
    check.corrupt = q.corrupt;
    check.answer = q.answer;
    check.wrong = q.wrong;
    check.position = q.position;
    check.site = PatchSite::Resid;
    check.mode = PatchMode::Patch;
    validatePatchRequest(model, check);
    if (q.corrupt.empty()) throw std::invalid_argument(std::string(what) + " needs a corrupted prompt");
    if (q.answer < 0 || q.wrong < 0)
        throw std::invalid_argument(std::string(what) + " needs the metric's answer and wrong pieces");
}

} // namespace detail

} // namespace gwb::engine
