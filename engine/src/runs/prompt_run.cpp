#include "gwb/engine/prompt_run.h"

#include "gwb/engine/device.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/tracer.h"

#include "tokenizers/hf_common.h"

#include <algorithm>
#include <future>
#include <map>
#include <stdexcept>

namespace gwb::engine {

namespace {

/// One model's place in a run: its kind, file, stages and the words its messages start with.
struct Slot {
    ModelKind kind;
    std::string path;
    PromptStage load, trace, analyse;
    std::string label;
};

/// The engine's progress callbacks: record progress and say whether to go on.
ProgressFn progressInto(PromptRunState& state) {
    return [&state](int64_t done, int64_t total) {
        state.done.store(done);
        state.total.store(total);
        return !state.cancel.load();
    };
}

void enterStage(PromptRunState& state, PromptStage stage) {
    if (state.cancel.load()) throw Cancelled();
    state.done.store(0);
    state.total.store(0);
    state.stage.store(static_cast<int>(stage));
}

/// Whether the model's tokenizer has these pieces under these ids (the bundled pair shares one).
bool sameVocabulary(const Model& model, const std::vector<TraceToken>& tokens) {
    const TokenizerPtr tok = model.tokenizer();
    if (!tok) return false;
    for (const auto& t : tokens)
        if (t.id < 0 || t.id >= tok->vocabSize() || tok->pieceText(t.id) != t.text) return false;
    return true;
}

/// Traces the tokens' ids (not a new encoding of the text) and gives the trace the text and the
/// tokens' byte spans in it.
TracePtr traceTokens(const Model& model, const std::vector<TraceToken>& tokens, const std::string& text,
                     const TraceOptions& options, const ProgressFn& progress, const std::atomic<bool>* cancel) {
    std::vector<int32_t> ids;
    for (const auto& t : tokens)
        ids.push_back(t.id);
    const TracePtr traced = traceIds(model, ids, options, progress, cancel);
    auto withText = std::make_shared<Trace>(*traced);
    withText->prompt = text;
    for (size_t i = 0; i < withText->tokens.size() && i < tokens.size(); ++i)
        withText->tokens[i] = tokens[i];
    return withText;
}

/// Nothing but Unicode white space (what QString::trimmed() empties).
bool blank(const std::string& s) {
    const std::u32string cps = hf::codePoints(s);
    return std::all_of(cps.begin(), cps.end(), hf::isWhiteSpace);
}

bool endsInSpace(const std::string& s) {
    const std::u32string cps = hf::codePoints(s);
    return !cps.empty() && hf::isWhiteSpace(cps.back());
}

} // namespace

const char* promptStageName(PromptStage stage) {
    switch (stage) {
    case PromptStage::Idle:
        return "idle";
    case PromptStage::Generate:
        return "Continuing the prompt";
    case PromptStage::LoadGrassmann:
        return "Loading the Grassmann model";
    case PromptStage::TraceGrassmann:
        return "Tracing the Grassmann model";
    case PromptStage::AnalyseGrassmann:
        return "Analysing the Grassmann trace";
    case PromptStage::LoadBaseline:
        return "Loading the Transformer baseline";
    case PromptStage::TraceBaseline:
        return "Tracing the Transformer baseline";
    case PromptStage::AnalyseBaseline:
        return "Analysing the Transformer trace";
    case PromptStage::Done:
        return "Done";
    }
    return "";
}

double PromptRunState::fraction(bool withGrassmann, bool withBaseline) const {
    const int s = stage.load();
    const int64_t t = total.load();
    const double within = t > 0 ? std::min(1.0, static_cast<double>(done.load()) / static_cast<double>(t)) : 0.0;
    // Loading, tracing and analysing weigh 1 : 2 : 2 within a model.
    const double weights[] = {1, 2, 2};
    auto partOf = [&](int first) -> double {
        if (s < first) return 0;
        if (s > first + 2) return 1;
        double sum = 0;
        for (int i = first; i < s; ++i)
            sum += weights[i - first];
        return (sum + weights[s - first] * within) / 5.0;
    };
    const int models = (withGrassmann ? 1 : 0) + (withBaseline ? 1 : 0);
    if (models == 0) return s >= static_cast<int>(PromptStage::Done) ? 1.0 : 0.0;
    double f = 0;
    if (withGrassmann) f += partOf(static_cast<int>(PromptStage::LoadGrassmann));
    if (withBaseline) f += partOf(static_cast<int>(PromptStage::LoadBaseline));
    f /= models;
    if (!continuing.load()) return f;
    // Generating (which includes loading the generating model) is the first third of the bar.
    if (s <= static_cast<int>(PromptStage::Generate))
        return s == static_cast<int>(PromptStage::Generate) ? within / 3 : 0;
    return 1.0 / 3 + 2.0 / 3 * f;
}

std::shared_ptr<AnalysisCache> processAnalysisCache() {
    static const std::shared_ptr<AnalysisCache> cache = makeAnalysisCache();
    return cache;
}

std::vector<std::string> collapseLayerWarnings(const std::vector<std::string>& warnings) {
    std::vector<std::string> rests;                 // first appearance order
    std::map<std::string, std::vector<int>> layers; // rest -> layers
    std::vector<std::string> out;
    for (const std::string& w : warnings) {
        // "layer <digits>: rest"
        size_t i = 6;
        const bool prefix = w.rfind("layer ", 0) == 0;
        while (prefix && i < w.size() && w[i] >= '0' && w[i] <= '9')
            ++i;
        if (!prefix || i == 6 || w.compare(i, 2, ": ") != 0) {
            if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
            continue;
        }
        const std::string rest = w.substr(i + 2);
        if (!layers.count(rest)) rests.push_back(rest);
        layers[rest].push_back(std::stoi(w.substr(6, i - 6)));
    }
    for (const std::string& rest : rests) {
        const std::vector<int>& ls = layers[rest];
        std::string which;
        const bool run = ls.size() > 2 && ls.back() - ls.front() == static_cast<int>(ls.size()) - 1;
        if (ls.size() == 1) {
            which = "layer " + std::to_string(ls.front());
        } else if (run) {
            which = "layers " + std::to_string(ls.front()) + "\u2013" + std::to_string(ls.back());
        } else {
            which = "layers ";
            for (size_t k = 0; k < ls.size(); ++k)
                which += (k ? ", " : "") + std::to_string(ls[k]);
        }
        out.push_back(which + ": " + rest);
    }
    return out;
}

std::string truncationNotice(const Trace& trace, const std::string& label, int64_t maxTokens,
                             const std::string& limitName) {
    if (trace.droppedTokens <= 0) return {};
    const std::string head = label.empty() ? "" : label + ": ";
    if (maxTokens > 0 && maxTokens < trace.config.maxLen)
        return head + "the prompt has " + std::to_string(trace.length() + trace.droppedTokens) + " tokens; the first " +
               std::to_string(trace.length()) + " were traced, as " + limitName + " asks (the model's context is " +
               std::to_string(trace.config.maxLen) + " tokens)";
    return head + "the prompt is longer than the model's context of " + std::to_string(trace.config.maxLen) +
           " tokens; the first " + std::to_string(trace.length()) + " tokens were traced and the last " +
           std::to_string(trace.droppedTokens) + " dropped";
}

PromptContinuation continuePrompt(const Model& model, const std::string& text,
                                  const std::vector<TraceToken>& promptTokens, const GenerateOptions& options,
                                  PromptRunState& state) {
    const TokenizerPtr tok = model.tokenizer();
    if (!tok) throw std::runtime_error("the model has no tokenizer, so it cannot continue a text prompt");
    checkUtf8(text);
    PromptContinuation out;
    out.tokens = promptTokens;
    if (out.tokens.empty())
        for (const TokenPiece& p : tok->encode(text))
            out.tokens.push_back({p.id, p.text, p.begin, p.end});
    std::vector<int32_t> ids;
    for (const auto& t : out.tokens)
        ids.push_back(t.id);
    if (ids.empty()) throw std::invalid_argument("the prompt encodes to no tokens: nothing to continue");
    const int64_t maxLen = model.config().maxLen;
    if (static_cast<int64_t>(ids.size()) >= maxLen)
        throw std::invalid_argument("the prompt already fills the model's context (" + std::to_string(ids.size()) +
                                    " tokens of " + std::to_string(maxLen) + "): nothing can be appended");
    state.done.store(0);
    state.total.store(std::min<int64_t>(options.maxNew, maxLen - static_cast<int64_t>(ids.size())));
    int64_t produced = 0;
    const GenerateResult r = generate(
        model, ids, options,
        [&](int32_t, int64_t) {
            state.done.store(++produced);
            return true;
        },
        &state.cancel);
    out.generated = static_cast<int>(r.ids.size() - ids.size());
    out.tokensPerSecond = r.tokensPerSecond;
    out.stoppedAtMaxLen = r.stoppedAtMaxLen;
    // Each generated token's text: what decoding the sequence up to it adds to decoding the
    // sequence before it (so the tokenizer's own spacing between pieces is kept), else a space and
    // the piece decoded alone.
    std::string previous = tok->decode(ids);
    const bool promptEndsInSpace = endsInSpace(text);
    int64_t at = static_cast<int64_t>(text.size());
    for (size_t k = ids.size(); k < r.ids.size(); ++k) {
        const std::vector<int32_t> upTo(r.ids.begin(), r.ids.begin() + static_cast<std::ptrdiff_t>(k + 1));
        const std::string now = tok->decode(upTo);
        std::string piece;
        if (now.compare(0, previous.size(), previous) == 0) {
            piece = now.substr(previous.size());
        } else {
            piece = " "; // built with +=: GCC 12 warns falsely on " " + s
            piece += tok->decode({r.ids[k]});
        }
        previous = now;
        // A prompt that ends in white space needs no second separator.
        if (out.appended.empty() && promptEndsInSpace)
            while (!piece.empty() && piece.front() == ' ')
                piece.erase(0, 1);
        const int64_t begin = at;
        out.appended += piece;
        at += static_cast<int64_t>(piece.size());
        out.tokens.push_back({r.ids[k], tok->pieceText(r.ids[k]), begin, at});
    }
    return out;
}

PromptRunResult runPrompt(const ModelOpener& open, const PromptRunRequest& request, PromptRunState& state) {
    PromptRunResult out;
    const Slot slots[] = {
        {ModelKind::Grassmann, request.paths[0], PromptStage::LoadGrassmann, PromptStage::TraceGrassmann,
         PromptStage::AnalyseGrassmann, "Grassmann model"},
        {ModelKind::Transformer, request.paths[1], PromptStage::LoadBaseline, PromptStage::TraceBaseline,
         PromptStage::AnalyseBaseline, "Transformer baseline"},
    };
    if (slots[0].path.empty() && slots[1].path.empty()) {
        out.message = "no model to run: give a Grassmann model or a Transformer baseline";
        return out;
    }
    if (blank(request.prompt)) {
        out.message = "the prompt is empty";
        return out;
    }
    std::string current;
    state.continuing.store(request.continuation.maxNew > 0);
    try {
        setThreads(request.threads);
        std::string text = request.prompt;
        // Tokens to trace as ids (a Continue's, or those of text a Continue left unedited).
        std::vector<TraceToken> idTokens = request.promptTokens;
        int64_t firstGenerated = request.promptTokens.empty() ? -1 : request.firstGeneratedToken;
        if (firstGenerated >= 0 && request.continuationFromByte >= 0)
            out.continuationFromByte = request.continuationFromByte;
        if (request.continuation.maxNew > 0) {
            // The model under study continues the prompt; the baseline only when it is alone.
            const Slot& gen = request.paths[0].empty() ? slots[1] : slots[0];
            current = gen.label;
            enterStage(state, PromptStage::Generate);
            const Model model = open(gen.path, request.device);
            const PromptContinuation c = continuePrompt(model, text, idTokens, request.continuation, state);
            // Marks of earlier Continues stay: the generated part starts where the first one began.
            if (firstGenerated < 0) {
                firstGenerated = static_cast<int64_t>(c.tokens.size()) - c.generated;
                out.continuationFromByte = static_cast<int64_t>(text.size());
            }
            out.generated = c.generated;
            out.tokensPerSecond = c.tokensPerSecond;
            idTokens = c.tokens;
            text += c.appended;
            if (c.generated > 0 && blank(c.appended))
                out.notices.push_back(gen.label + " wrote " + std::to_string(c.generated) +
                                      " tokens that add no visible text (white space only). Sample the continuation "
                                      "(the \u201csample\u201d box; --sample on the command line) instead of always "
                                      "taking the likeliest token.");
            if (c.stoppedAtMaxLen)
                out.notices.push_back(gen.label + ": the continuation stopped after " + std::to_string(c.generated) +
                                      " tokens, at the context length of " + std::to_string(model.config().maxLen));
        }
        out.firstGeneratedToken = firstGenerated;
        out.tokens = idTokens;
        out.prompt = text;
        checkUtf8(text);
        const int nThreads = threads();
        // Load and trace one model (its stages in `state`).
        auto loadAndTrace = [&](const Slot& slot) {
            current = slot.label;
            enterStage(state, slot.load);
            const Model model = open(slot.path, request.device);
            if (model.config().kind != slot.kind)
                throw std::runtime_error(
                    "'" + slot.path + "' is a " +
                    (model.config().kind == ModelKind::Grassmann ? "Grassmann" : "Transformer") + " model, not a " +
                    (slot.kind == ModelKind::Grassmann ? "Grassmann model" : "Transformer baseline"));
            enterStage(state, slot.trace);
            TraceOptions options;
            options.lensTopK = std::max(0, request.lensTopK);
            options.maxTokens = std::max<int64_t>(0, request.maxTokens);
            options.keepMixerStates = false; // no view draws g or the mixer's input
            // Above 512 tokens the baseline's H x T x T probabilities (GPT-2 small at 2,048: 2.3 GB)
            // are not kept: the views and analyses recompute the rows they read from q and k.
            options.denseAttentionLimit = 512;
            if (!idTokens.empty() && sameVocabulary(model, idTokens))
                return traceTokens(model, idTokens, text, options, progressInto(state), &state.cancel);
            return trace(model, text, options, progressInto(state), &state.cancel);
        };
        auto analyse = [&](const TracePtr& traced, int analysisThreads, const ProgressFn& progress) {
            AnalysisOptions analysisOptions;
            analysisOptions.promptSubspaceK = request.promptSubspaceK;
            analysisOptions.cache = processAnalysisCache();
            analysisOptions.threads = analysisThreads;
            analysisOptions.parts = request.analysisParts | kAnalysisCore;
            return std::make_shared<const TraceAnalysis>(analyzeTrace(*traced, analysisOptions, progress));
        };
        auto keep = [&](int m, const TracePtr& traced, const std::shared_ptr<const TraceAnalysis>& analysis) {
            const std::string notice = truncationNotice(*traced, slots[m].label, request.maxTokens);
            if (!notice.empty()) out.notices.push_back(notice);
            out.analysisNotice.resize(out.notices.size(), 0);
            for (const std::string& w : collapseLayerWarnings(analysis->warnings)) {
                out.notices.push_back(slots[m].label + ": " + w);
                out.analysisNotice.push_back(1);
            }
            out.traces[m] = traced;
            out.analyses[m] = analysis;
        };
        if (!slots[0].path.empty() && !slots[1].path.empty() && nThreads >= 2) {
            // Both models: the Grassmann analysis (geometry on the CPU, no matrix library) runs on
            // its own thread, with half of the threads, while the baseline loads, traces and is
            // analysed on this one with all of them: run after run, the two overlap instead of
            // taking turns (tests/app/gui_bench). The baseline is the long pole (at 4,096 tokens of
            // GPT-2 small's shape its trace takes 14 s on two cores, the Grassmann core analysis
            // 0.5 s): held to half the threads it took twice as long. The progress follows the
            // baseline meanwhile.
            const TracePtr grassmannTrace = loadAndTrace(slots[0]);
            const int grassmannThreads = nThreads / 2;
            const ProgressFn cancelOnly = [&state](int64_t, int64_t) { return !state.cancel.load(); };
            std::future<std::shared_ptr<const TraceAnalysis>> grassmannAnalysis =
                std::async(std::launch::async, analyse, grassmannTrace, grassmannThreads, cancelOnly);
            const TracePtr baselineTrace = loadAndTrace(slots[1]);
            enterStage(state, slots[1].analyse);
            const auto baselineAnalysis = analyse(baselineTrace, nThreads, progressInto(state));
            current = slots[0].label;
            keep(0, grassmannTrace, grassmannAnalysis.get());
            current = slots[1].label;
            keep(1, baselineTrace, baselineAnalysis);
        } else {
            for (int m = 0; m < 2; ++m) {
                if (slots[m].path.empty()) continue;
                const TracePtr traced = loadAndTrace(slots[m]);
                enterStage(state, slots[m].analyse);
                keep(m, traced, analyse(traced, nThreads, progressInto(state))); // layers in parallel
            }
        }
        enterStage(state, PromptStage::Done);
        out.status = PromptRunResult::Status::Ok;
    } catch (const Cancelled&) {
        out = PromptRunResult{};
        out.status = PromptRunResult::Status::Cancelled;
        out.message = "cancelled";
    } catch (const std::exception& e) {
        const std::string what = e.what();
        out = PromptRunResult{};
        out.status = PromptRunResult::Status::Failed;
        out.message = current.empty() ? what : current + ": " + what;
    }
    return out;
}

} // namespace gwb::engine
