#include "cli/patch_setup.h"

#include "gwb/engine/model.h"
#include "gwb/engine/tokenizer.h"

#include <stdexcept>

namespace gwb::app {

using gwb::engine::Model;
using gwb::engine::ModelKind;
using gwb::engine::PatchMode;
using gwb::engine::PatchSite;

namespace {

std::string kindName(const Model& model) {
    return model.config().kind == ModelKind::Grassmann ? "Grassmann" : "Transformer";
}

std::string quoted(const std::string& s) {
    return "'" + s + "'";
}

std::vector<int64_t> encodePrompt(const Model& model, const QString& text, const char* which) {
    const auto tok = model.tokenizer();
    if (!tok) throw std::invalid_argument("the model has no tokenizer to read the prompts");
    const std::string bytes = text.toStdString();
    gwb::engine::checkUtf8(bytes);
    std::vector<int64_t> ids;
    for (int32_t id : tok->encodeIds(bytes))
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
        out += std::string(out.empty() ? "" : ", ") + gwb::engine::patchSiteName(s);
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

int64_t pieceId(const Model& model, const QString& piece, const char* what) {
    const auto tok = model.tokenizer();
    if (!tok) throw std::invalid_argument(std::string("the model has no tokenizer to read ") + what);
    const std::string text = piece.toStdString();
    if (text.empty()) throw std::invalid_argument(std::string(what) + " is empty: type one vocabulary piece");
    gwb::engine::checkUtf8(text);
    const std::vector<int32_t> ids = tok->encodeIds(text);
    if (ids.size() == 1) return ids.front();
    // A piece typed as the vocabulary shows it (e.g. with its word-start marker), or as the window
    // draws it: the marker U+2581 looks like '_', so a leading '_' stands for a marker too.
    auto find = [&](const std::string& s) -> int64_t {
        for (int64_t id = 0; id < tok->vocabSize(); ++id)
            if (tok->pieceText(static_cast<int32_t>(id)) == s) return id;
        return -1;
    };
    if (const int64_t id = find(text); id >= 0) return id;
    static const char* const kMarkers[] = {"\u2581", "\u0120"}; // SentencePiece, byte-level BPE word starts
    const std::string bare = text.front() == '_' ? text.substr(1) : text;
    if (text.front() == '_' && !bare.empty())
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

gwb::engine::PatchRequest preparePatchRequest(const Model& model, const PatchInput& in) {
    gwb::engine::PatchRequest r;
    // "offset/head" is the window's (and gwb figure's) site for the two models at once: offset in a
    // Grassmann model, head in a Transformer. The same word works here, so one spelling runs everywhere.
    const bool pair = in.site == QLatin1String("offset/head");
    r.site = pair ? (model.config().kind == ModelKind::Grassmann ? PatchSite::Offset : PatchSite::Head)
                  : gwb::engine::patchSiteFromName(in.site.toStdString());
    if (!siteAvailable(model, r.site))
        throw std::invalid_argument("site " + quoted(in.site.toStdString()) + " does not exist in a " +
                                    kindName(model) + " model (its sites: " + siteList(model) + ")");
    const bool hasCorrupt = !in.corrupt.isEmpty();
    r.mode = in.mode.isEmpty() ? (hasCorrupt ? PatchMode::Patch : PatchMode::Zero)
                               : gwb::engine::patchModeFromName(in.mode.toStdString());
    if (r.mode == PatchMode::Patch && !hasCorrupt)
        throw std::invalid_argument("mode patch puts clean values into a corrupted run: give a corrupted prompt "
                                    "(or ablate with mode zero or mean)");
    if (in.answer.isEmpty() != in.wrong.isEmpty())
        throw std::invalid_argument("the metric needs both an answer piece and a wrong piece");
    if (hasCorrupt && in.answer.isEmpty())
        throw std::invalid_argument("with a corrupted prompt the metric logit[answer] - logit[wrong] needs an "
                                    "answer piece and a wrong piece");

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
            throw std::invalid_argument(
                "the prompts tokenize to different lengths: clean " + std::to_string(r.clean.size()) +
                " tokens, corrupted " + std::to_string(r.corrupt.size()) + " tokens; they first differ at token " +
                std::to_string(i) + ": " + a + " vs " + b + " (patching needs prompts of equal token length)");
        }
    }
    if (!in.answer.isEmpty()) {
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
    gwb::engine::validatePatchRequest(model, r);
    return r;
}

std::string patchDefinitions() {
    return "metric: logit[answer] - logit[wrong] of the next-token logits at the metric position (raw logits, "
           "before the softmax). patch: the corrupted prompt runs with one site's value replaced by the clean "
           "run's; zero / mean: the clean prompt runs with the site's value set to 0 / to its mean over the "
           "prompt's positions. effect: (metric - corrupt_metric) / (clean_metric - corrupt_metric): 1 = the "
           "intervention gives the clean metric, 0 = the corrupted one; undefined (NaN) when clean_metric equals "
           "corrupt_metric or the cell does not exist. delta_logprob: log p(actual next token) of the ablated "
           "run minus the unchanged run's at every position t (predicting token t+1), nats; NaN at the last "
           "token. mean_delta_logprob: its mean over t < T-1.";
}

} // namespace gwb::app
