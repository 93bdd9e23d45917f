// Typed patching inputs -> a checked PatchRequest (gwb/engine/patch_input.h): shared by gwb patch,
// the window's Patching view, gwb figure and the Python package.

#include "gwb/engine/patch_input.h"
#include "gwb/engine/sites.h"

#include "gwb/engine/model.h"
#include "gwb/engine/patching.h"
#include "gwb/engine/tokenizer.h"

#include <stdexcept>

namespace gwb::engine {

namespace {

/// "1 token", "7 tokens".
std::string tokenCount(size_t n) {
    return std::to_string(n) + (n == 1 ? " token" : " tokens");
}

std::string kindName(const Model& model) {
    return model.config().kind == ModelKind::Grassmann ? "Grassmann" : "Transformer";
}

std::string quoted(const std::string& s) {
    return "'" + s + "'";
}

std::vector<int64_t> encodePrompt(const Model& model, const std::string& text, const char* which) {
    const auto tok = model.tokenizer();
    if (!tok) throw std::invalid_argument("the model has no tokenizer to read the prompts");
    checkUtf8(text);
    std::vector<int64_t> ids;
    for (int32_t id : tok->encodeIds(text))
        ids.push_back(id);
    if (ids.empty()) throw std::invalid_argument(std::string("the ") + which + " prompt encodes to no tokens");
    const int64_t maxLen = model.config().maxLen;
    if (static_cast<int64_t>(ids.size()) > maxLen)
        throw std::invalid_argument(std::string("the ") + which + " prompt is " + std::to_string(ids.size()) +
                                    " tokens, longer than the model's context (max_len " + std::to_string(maxLen) +
                                    ")");
    return ids;
}

std::string siteList(const Model& model) {
    std::string out;
    for (PatchSite s : sitesOf(model))
        out += std::string(out.empty() ? "" : ", ") + patchSiteName(s);
    return out;
}

} // namespace

std::vector<std::string> pieceTexts(const Model& model, const std::vector<int64_t>& ids) {
    std::vector<std::string> out;
    const auto tok = model.tokenizer();
    for (int64_t id : ids) {
        try {
            out.push_back(tok ? tok->pieceText(static_cast<int32_t>(id)) : std::to_string(id));
        } catch (const std::exception&) {
            out.push_back("<" + std::to_string(id) + ">");
        }
    }
    return out;
}

int64_t pieceId(const Model& model, const std::string& piece, const char* what) {
    const auto tok = model.tokenizer();
    if (!tok) throw std::invalid_argument(std::string("the model has no tokenizer to read ") + what);
    const std::string& text = piece;
    if (text.empty()) throw std::invalid_argument(std::string(what) + " is empty: type one vocabulary piece");
    checkUtf8(text);
    const std::vector<int32_t> ids = tok->encodeIds(text);
    if (ids.size() == 1) return ids.front();
    // A piece typed as the vocabulary writes it (with its word-start marker U+2581), as every front
    // end draws it (a middle dot), or with '_', which the marker looks like: both stand for it.
    auto find = [&](const std::string& s) -> int64_t {
        for (int64_t id = 0; id < tok->vocabSize(); ++id)
            if (tok->pieceText(static_cast<int32_t>(id)) == s) return id;
        return -1;
    };
    if (const int64_t id = find(text); id >= 0) return id;
    static const char* const kMarkers[] = {"\u2581", "\u0120"}; // SentencePiece, byte-level BPE word starts
    const size_t markLength = text.front() == '_' ? 1 : text.rfind("\xc2\xb7", 0) == 0 ? 2 : 0; // '_' or U+00B7
    const std::string bare = text.substr(markLength);
    if (markLength > 0 && !bare.empty())
        for (const char* m : kMarkers)
            if (const int64_t id = find(m + bare); id >= 0) return id;
    std::string pieces;
    for (int32_t id : ids)
        pieces += std::string(pieces.empty() ? "" : " ") + quoted(tok->pieceText(id));
    // Suggest the one piece that was probably meant: the word with a word-start marker.
    std::string suggestion;
    for (const char* m : kMarkers)
        if (find(m + bare) >= 0) {
            suggestion = "; did you mean " + quoted(m + bare) + "?";
            break;
        }
    throw std::invalid_argument(std::string(what) + " " + quoted(text) + " is not in the vocabulary: it is " +
                                std::to_string(ids.size()) + " pieces (" + pieces + ")" + suggestion);
}

std::vector<PatchSite> sitesOf(const Model& model) {
    if (model.config().kind == ModelKind::Grassmann)
        return {PatchSite::Resid, PatchSite::Mixer, PatchSite::Gate, PatchSite::Ffn, PatchSite::Offset};
    return {PatchSite::Resid, PatchSite::Mixer, PatchSite::Ffn, PatchSite::Head};
}

bool siteAvailable(const Model& model, PatchSite site) {
    for (PatchSite s : sitesOf(model))
        if (s == site) return true;
    return false;
}

PatchRequest preparePatchRequest(const Model& model, const PatchText& in) {
    PatchRequest r;
    // "offset/head" (kUnitAlias) is the window's (and gwb figure's) site for the two models at once:
    // offset in a Grassmann model, head in a Transformer. The same word works here (sites.h).
    r.site = patchSiteFromName(resolveUnitAlias(in.site, model.config().kind));
    if (!siteAvailable(model, r.site))
        throw std::invalid_argument("site " + quoted(in.site) + " does not exist in a " + kindName(model) +
                                    " model (its sites: " + siteList(model) + ")");
    const bool hasCorrupt = !in.corrupt.empty();
    r.mode = in.mode.empty() ? (hasCorrupt ? PatchMode::Patch : PatchMode::Zero) : patchModeFromName(in.mode);
    if (const std::string problem = patchTextProblem(r.mode == PatchMode::Patch ? "patch" : "", hasCorrupt,
                                                     !in.answer.empty(), !in.wrong.empty());
        !problem.empty())
        throw std::invalid_argument(problem);

    r.clean = encodePrompt(model, in.clean, "clean");
    if (hasCorrupt) {
        r.corrupt = encodePrompt(model, in.corrupt, "corrupted");
        if (r.corrupt.size() != r.clean.size()) {
            size_t i = 0;
            while (i < r.clean.size() && i < r.corrupt.size() && r.clean[i] == r.corrupt[i])
                ++i;
            const auto cleanPieces = pieceTexts(model, r.clean);
            const auto corruptPieces = pieceTexts(model, r.corrupt);
            const std::string a = i < cleanPieces.size() ? quoted(cleanPieces[i]) : "(end)";
            const std::string b = i < corruptPieces.size() ? quoted(corruptPieces[i]) : "(end)";
            throw std::invalid_argument("the prompts tokenize to different lengths: clean " +
                                        tokenCount(r.clean.size()) + ", corrupted " + tokenCount(r.corrupt.size()) +
                                        "; they first differ at token " + std::to_string(i) + ": " + a + " vs " + b +
                                        " (patching needs prompts of equal token length)");
        }
    }
    if (!in.answer.empty()) {
        r.answer = pieceId(model, in.answer, "the answer piece");
        r.wrong = pieceId(model, in.wrong, "the wrong piece");
        if (r.answer == r.wrong)
            throw std::invalid_argument("the answer and wrong pieces are the same piece: their logit difference is "
                                        "always 0");
    }
    const int64_t T = static_cast<int64_t>(r.clean.size());
    if (in.position < -1 || in.position >= T)
        throw std::invalid_argument("position " + std::to_string(in.position) + " is outside the prompt (tokens 0.." +
                                    std::to_string(T - 1) + ")");
    r.position = in.position;
    validatePatchRequest(model, r);
    return r;
}

std::string patchDefinitions() {
    return "metric: logit[answer] - logit[wrong] of the next-token logits at the metric position (raw logits, "
           "before the softmax). patch: the corrupted prompt runs with one site's value replaced by the clean "
           "run's; zero / mean: the clean prompt runs with the site's value set to 0 / to its mean over the "
           "prompt's positions. effect: (metric - corrupt_metric) / (clean_metric - corrupt_metric): 1 = the "
           "intervention gives the clean metric, 0 = the corrupted one; undefined (NaN) when |clean_metric - "
           "corrupt_metric| is below min_difference (logits; it would divide by rounding noise) or the cell does "
           "not exist. raw_effect: metric - the changed run's own metric, logits. delta_logprob: log p(actual next "
           "token) of the ablated "
           "run minus the unchanged run's at every position t (predicting token t+1), nats; NaN at the last "
           "token. mean_delta_logprob: its mean over t < T-1.";
}

std::vector<NpzMember> patchSweepArrays(const PatchSweep& s) {
    std::vector<NpzMember> out;
    auto matrix = [&](const std::vector<double>& v) { return Array<double>({s.rows, s.cols}, v); };
    auto scalar = [](double v) { return Array<double>({}, {v}); };
    auto ids = [](const std::vector<int64_t>& v) { return Array<int64_t>({static_cast<int64_t>(v.size())}, v); };
    if (s.estimated) {
        out.push_back({"attribution", matrix(s.attribution)});
        out.push_back({"estimated_metric", matrix(s.metric)});
        out.push_back({"flagged", Array<uint8_t>({s.rows, s.cols}, s.flagged)});
        out.push_back({"clean_metric", scalar(s.cleanMetric)});
        out.push_back({"corrupt_metric", scalar(s.corruptMetric)});
    } else if (s.hasMetric) {
        out.push_back({"effect", matrix(s.effect)});
        out.push_back({"metric", matrix(s.metric)});
        std::vector<double> raw(s.metric.size());
        const double base = s.mode == PatchMode::Patch ? s.corruptMetric : s.cleanMetric;
        for (size_t i = 0; i < raw.size(); ++i)
            raw[i] = s.metric[i] - base;
        out.push_back({"raw_effect", matrix(raw)});
        out.push_back({"clean_metric", scalar(s.cleanMetric)});
        out.push_back({"corrupt_metric", scalar(s.corruptMetric)});
    }
    out.push_back({"defined", Array<uint8_t>({s.rows, s.cols}, s.defined)});
    out.push_back({"computed", Array<uint8_t>({s.rows, s.cols}, s.computed)});
    if (!s.deltaLogprob.empty()) {
        out.push_back({"delta_logprob", Array<double>({s.rows, s.cols, s.T}, s.deltaLogprob)});
        out.push_back({"mean_delta_logprob", matrix(s.meanDeltaLogprob)});
    }
    out.push_back({"clean_ids", ids(s.clean)});
    if (!s.corrupt.empty()) out.push_back({"corrupt_ids", ids(s.corrupt)});
    return out;
}

} // namespace gwb::engine
