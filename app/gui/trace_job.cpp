#include "gui/trace_job.h"

#include "gui/saliency_job.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/device.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/import.h"
#include "gwb/engine/tracer.h"
#include "gwb/views/selection_policy.h"

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <exception>
#include <future>
#include <iterator>
#include <map>
#include <memory>

namespace gwb::app {
namespace {

using gwb::engine::ModelKind;

/// One cache of weight-only analysis results for every run of this process (keyed by the weights).
std::shared_ptr<gwb::engine::AnalysisCache> analysisCache() {
    static const std::shared_ptr<gwb::engine::AnalysisCache> cache = gwb::engine::makeAnalysisCache();
    return cache;
}

struct Slot {
    ModelKind kind;
    QString path;
    TraceStage load, trace, analyse;
    QString label;
};

/// The engine's progress callbacks: record progress and say whether to go on.
gwb::engine::ProgressFn progressInto(TraceJobState& state) {
    return [&state](int64_t done, int64_t total) {
        state.done.store(done);
        state.total.store(total);
        return !state.cancel.load();
    };
}

/// Whether the model's tokenizer has these pieces under these ids (the bundled pair shares one).
bool sameVocabulary(const gwb::engine::Model& model, const std::vector<gwb::engine::TraceToken>& tokens) {
    const gwb::engine::TokenizerPtr tok = model.tokenizer();
    if (!tok) return false;
    for (const auto& t : tokens)
        if (t.id < 0 || t.id >= tok->vocabSize() || tok->pieceText(t.id) != t.text) return false;
    return true;
}

/// Traces the tokens' ids (not a new encoding of the text) and gives the trace the text and the
/// tokens' byte spans in it.
gwb::engine::TracePtr traceTokens(const gwb::engine::Model& model, const std::vector<gwb::engine::TraceToken>& tokens,
                                  const std::string& text, const gwb::engine::TraceOptions& options,
                                  const gwb::engine::ProgressFn& progress, const std::atomic<bool>* cancel) {
    std::vector<int32_t> ids;
    for (const auto& t : tokens)
        ids.push_back(t.id);
    const gwb::engine::TracePtr traced = gwb::engine::traceIds(model, ids, options, progress, cancel);
    auto withText = std::make_shared<gwb::engine::Trace>(*traced);
    withText->prompt = text;
    for (size_t i = 0; i < withText->tokens.size() && i < tokens.size(); ++i)
        withText->tokens[i] = tokens[i];
    return withText;
}

void enterStage(TraceJobState& state, TraceStage stage) {
    if (state.cancel.load()) throw gwb::engine::Cancelled();
    state.done.store(0);
    state.total.store(0);
    state.stage.store(static_cast<int>(stage));
}

} // namespace

QString stageName(TraceStage stage) {
    switch (stage) {
    case TraceStage::Idle:
        return QStringLiteral("idle");
    case TraceStage::Generate:
        return QStringLiteral("Continuing the prompt");
    case TraceStage::LoadGrassmann:
        return QStringLiteral("Loading the Grassmann model");
    case TraceStage::TraceGrassmann:
        return QStringLiteral("Tracing the Grassmann model");
    case TraceStage::AnalyseGrassmann:
        return QStringLiteral("Analysing the Grassmann trace");
    case TraceStage::LoadBaseline:
        return QStringLiteral("Loading the Transformer baseline");
    case TraceStage::TraceBaseline:
        return QStringLiteral("Tracing the Transformer baseline");
    case TraceStage::AnalyseBaseline:
        return QStringLiteral("Analysing the Transformer trace");
    case TraceStage::Done:
        return QStringLiteral("Done");
    }
    return {};
}

double TraceJobState::fraction(bool withGrassmann, bool withBaseline) const {
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
    if (models == 0) return s >= static_cast<int>(TraceStage::Done) ? 1.0 : 0.0;
    double f = 0;
    if (withGrassmann) f += partOf(static_cast<int>(TraceStage::LoadGrassmann));
    if (withBaseline) f += partOf(static_cast<int>(TraceStage::LoadBaseline));
    f /= models;
    if (!continuing.load()) return f;
    // Generating (which includes loading the generating model) is the first third of the bar.
    if (s <= static_cast<int>(TraceStage::Generate))
        return s == static_cast<int>(TraceStage::Generate) ? within / 3 : 0;
    return 1.0 / 3 + 2.0 / 3 * f;
}

ModelCache::ModelCache() : ModelCache(std::make_shared<gwb::engine::ModelStore>(), std::make_shared<Choices>()) {}

ModelCache::ModelCache(std::shared_ptr<gwb::engine::ModelStore> store, std::shared_ptr<Choices> choices)
    : m_store(std::move(store)), m_choices(std::move(choices)) {}

ModelCache ModelCache::process() {
    static const ModelCache cache(gwb::engine::ModelStore::process(), std::make_shared<Choices>());
    return cache;
}

gwb::engine::ModelOpener ModelCache::opener() const {
    return [cache = *this](const std::string& path, const std::string& device) mutable {
        return cache.get(QString::fromStdString(path), QString::fromStdString(device));
    };
}

gwb::engine::Model ModelCache::get(const QString& path, const QString& device) {
    const QFileInfo info(path);
    if (!info.exists()) throw std::runtime_error("model file '" + path.toStdString() + "' does not exist");
    // A folder is a model too: a Hugging Face save_pretrained folder (config.json and the weights).
    if (!(info.isFile() || info.isDir()) || !info.isReadable())
        throw std::runtime_error("model file '" + path.toStdString() + "' cannot be read");
    const QString abs = info.absoluteFilePath();
    const std::string file = abs.toStdString();
    // .gwb files load directly; PyTorch re-implementations' checkpoints are imported, with what
    // the user chose for this file when the importer could not tell on its own.
    std::optional<gwb::engine::ImportOptions> options;
    if (const std::optional<ImportChoice> choice = importChoice(abs)) {
        try {
            options = importOptionsFor(*choice, device);
        } catch (const std::invalid_argument& e) { // a bad layout name or offset text
            throw std::runtime_error(file + ": " + e.what());
        }
    }
    // A text file or an image opened by mistake: the engine says so first, the parser's detail after.
    gwb::engine::Model model = m_store->get(file, device.toStdString(), options).model;
    if (gwb::engine::isImportableCheckpointPath(file) && !model.tokenizer())
        throw std::runtime_error(noVocabularyMessage(abs).toStdString());
    return model;
}

void ModelCache::setImportChoice(const QString& path, const ImportChoice& choice) {
    std::lock_guard<std::mutex> lock(m_choices->mutex);
    m_choices->byPath[QFileInfo(path).absoluteFilePath()] = choice;
}

std::optional<ImportChoice> ModelCache::importChoice(const QString& path) const {
    const QString abs = QFileInfo(path).absoluteFilePath();
    std::lock_guard<std::mutex> lock(m_choices->mutex);
    const auto it = m_choices->byPath.find(abs);
    if (it == m_choices->byPath.end()) return std::nullopt;
    return it->second;
}

gwb::engine::GenerateOptions continueOptions(int tokens, bool sample, quint64 seed) {
    gwb::engine::GenerateOptions o;
    o.maxNew = tokens;
    o.greedy = !sample;
    o.topP = sample ? 0.9 : 1.0;
    o.seed = seed;
    return o;
}

Continuation continuePrompt(const gwb::engine::Model& model, const QString& prompt,
                            const std::vector<gwb::engine::TraceToken>& promptTokens,
                            const gwb::engine::GenerateOptions& options, TraceJobState& state) {
    const gwb::engine::TokenizerPtr tok = model.tokenizer();
    if (!tok) throw std::runtime_error("the model has no tokenizer, so it cannot continue a text prompt");
    const std::string text = prompt.toStdString();
    gwb::engine::checkUtf8(text);
    Continuation out;
    out.tokens = promptTokens;
    if (out.tokens.empty())
        for (const gwb::engine::TokenPiece& p : tok->encode(text))
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
    const gwb::engine::GenerateResult r = gwb::engine::generate(
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
    std::string added;
    std::string previous = tok->decode(ids);
    const bool promptEndsInSpace = !prompt.isEmpty() && prompt.back().isSpace();
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
        if (added.empty() && promptEndsInSpace)
            while (!piece.empty() && piece.front() == ' ')
                piece.erase(0, 1);
        const int64_t begin = at;
        added += piece;
        at += static_cast<int64_t>(piece.size());
        out.tokens.push_back({r.ids[k], tok->pieceText(r.ids[k]), begin, at});
    }
    out.appended = QString::fromStdString(added);
    return out;
}

QString validateRequest(const TraceRequest& request) {
    if (request.grassmannPath.isEmpty() && request.baselinePath.isEmpty())
        return QStringLiteral("no model to run: open a Grassmann model or a Transformer baseline (File > Open Model)");
    if (request.prompt.trimmed().isEmpty())
        return request.headless ? QStringLiteral("the prompt is empty: give the text with --prompt TEXT")
                                : QStringLiteral("the prompt is empty: type or open some text, then Run");
    if (request.continuation.maxNew < 0) return QStringLiteral("the number of tokens to continue must not be negative");
    return {};
}

QString truncationNotice(const gwb::engine::Trace& trace, const QString& label, int64_t maxTokens) {
    if (trace.droppedTokens <= 0) return {};
    if (maxTokens > 0 && maxTokens < trace.config.maxLen)
        return QStringLiteral("%1: the prompt has %2 tokens; the first %3 were traced, as the Longest prompt setting "
                              "in the toolbar asks (the model's context is %4 tokens)")
            .arg(label)
            .arg(trace.length() + trace.droppedTokens)
            .arg(trace.length())
            .arg(trace.config.maxLen);
    return QStringLiteral("%1: the prompt is longer than the model's context of %2 tokens; "
                          "the first %3 tokens were traced and the last %4 dropped")
        .arg(label)
        .arg(trace.config.maxLen)
        .arg(trace.length())
        .arg(trace.droppedTokens);
}

AnalysisCompletion completeRunAnalysis(const gwb::views::WorkbenchData& data, int threads, TraceJobState& state) {
    AnalysisCompletion out;
    if (!data.grassmann || !data.grassmannAnalysis) {
        out.message = QStringLiteral("no Grassmann analysis to complete");
        return out;
    }
    try {
        gwb::engine::setThreads(threads);
        gwb::engine::AnalysisOptions options;
        options.cache = analysisCache();
        options.threads = gwb::engine::threads();
        const unsigned before = data.grassmannAnalysis->parts;
        auto whole = std::make_shared<const gwb::engine::TraceAnalysis>(
            gwb::engine::completeAnalysis(*data.grassmann, *data.grassmannAnalysis, options, progressInto(state)));
        std::vector<std::string> added;
        for (size_t i = 0; i < whole->warnings.size() && i < whole->warningParts.size(); ++i)
            if (!(whole->warningParts[i] & before)) added.push_back(whole->warnings[i]);
        for (const QString& w : collapseLayerWarnings(added))
            out.notices << QStringLiteral("Grassmann model: ") + w;
        out.analysis = whole;
        out.status = AnalysisCompletion::Status::Ok;
    } catch (const gwb::engine::Cancelled&) {
        out.status = AnalysisCompletion::Status::Cancelled;
        out.message = QStringLiteral("cancelled");
    } catch (const std::exception& e) {
        out.status = AnalysisCompletion::Status::Failed;
        out.message = QStringLiteral("Grassmann model: ") + QString::fromUtf8(e.what());
    }
    return out;
}

LensCompletion computeRunLens(const gwb::views::WorkbenchData& data, const QString& grassmannPath,
                              const QString& baselinePath, const QString& device, int threads, int topK,
                              ModelCache& cache, TraceJobState& state) {
    LensCompletion out;
    QString current;
    try {
        gwb::engine::setThreads(threads);
        const std::pair<gwb::engine::TracePtr, QString> todo[] = {{data.grassmann, grassmannPath},
                                                                  {data.baseline, baselinePath}};
        int64_t passes = 0, before = 0; // head passes of both traces: one progress bar
        for (const auto& [trace, path] : todo)
            if (trace && !data.lensOf(trace)) passes += trace->config.nLayers + 1;
        for (size_t i = 0; i < 2; ++i) {
            const auto& [trace, path] = todo[i];
            if (!trace || data.lensOf(trace)) continue;
            current = trace->isGrassmann() ? QStringLiteral("Grassmann model") : QStringLiteral("Transformer baseline");
            if (path.isEmpty()) throw std::runtime_error("the model that made this trace is no longer open");
            const gwb::engine::Model model = cache.get(path, device);
            const gwb::engine::LensPtr lens = gwb::engine::logitLens(
                model, *trace, topK,
                [&](int64_t done, int64_t) {
                    state.done.store(before + done);
                    state.total.store(passes);
                    return !state.cancel.load();
                },
                &state.cancel);
            before += trace->config.nLayers + 1;
            (i == 0 ? out.grassmann : out.baseline) = lens;
        }
        out.status = LensCompletion::Status::Ok;
    } catch (const gwb::engine::Cancelled&) {
        out.status = LensCompletion::Status::Cancelled;
        out.message = QStringLiteral("cancelled");
    } catch (const std::exception& e) {
        out.status = LensCompletion::Status::Failed;
        out.message = (current.isEmpty() ? QString() : current + QStringLiteral(": ")) +
                      QStringLiteral("the logit lens failed: ") + QString::fromUtf8(e.what());
    }
    return out;
}

TraceOutcome runTraceJob(const TraceRequest& request, ModelCache& cache, TraceJobState& state) {
    TraceOutcome out;
    const QString problem = validateRequest(request);
    if (!problem.isEmpty()) {
        out.message = problem;
        return out;
    }
    const Slot slots[] = {
        {ModelKind::Grassmann, request.grassmannPath, TraceStage::LoadGrassmann, TraceStage::TraceGrassmann,
         TraceStage::AnalyseGrassmann, QStringLiteral("Grassmann model")},
        {ModelKind::Transformer, request.baselinePath, TraceStage::LoadBaseline, TraceStage::TraceBaseline,
         TraceStage::AnalyseBaseline, QStringLiteral("Transformer baseline")},
    };
    QString current;
    state.continuing.store(request.continuation.maxNew > 0);
    try {
        gwb::engine::setThreads(request.threads);
        QString text = request.prompt;
        // Tokens to trace as ids (a Continue's, or those of text a Continue left unedited).
        std::vector<gwb::engine::TraceToken> idTokens = request.promptTokens;
        int64_t firstGenerated = request.promptTokens.empty() ? -1 : request.firstGeneratedToken;
        if (firstGenerated >= 0 && request.continuationFrom >= 0) {
            out.continuationFrom = request.continuationFrom;
            out.data.continuationFrom = static_cast<int64_t>(text.left(request.continuationFrom).toStdString().size());
        }
        if (request.continuation.maxNew > 0) {
            // The model under study continues the prompt; the baseline only when it is alone.
            const Slot& gen = request.grassmannPath.isEmpty() ? slots[1] : slots[0];
            current = gen.label;
            enterStage(state, TraceStage::Generate);
            const gwb::engine::Model model = cache.get(gen.path, request.device);
            const Continuation c = continuePrompt(model, text, idTokens, request.continuation, state);
            // Marks of earlier Continues stay: the generated part starts where the first one began.
            if (firstGenerated < 0) {
                firstGenerated = static_cast<int64_t>(c.tokens.size()) - c.generated;
                out.continuationFrom = static_cast<int>(text.size());
                out.data.continuationFrom = static_cast<int64_t>(text.toStdString().size());
            }
            out.generated = c.generated;
            out.tokensPerSecond = c.tokensPerSecond;
            idTokens = c.tokens;
            text += c.appended;
            if (c.generated > 0 && c.appended.trimmed().isEmpty())
                out.notices << QStringLiteral("%1 wrote %2 tokens that add no visible text (white space only). "
                                              "Sample the continuation (the \u201csample\u201d box; --sample on the "
                                              "command line) instead of always taking the likeliest token.")
                                   .arg(gen.label)
                                   .arg(c.generated);
            if (c.stoppedAtMaxLen)
                out.notices << QStringLiteral(
                                   "%1: the continuation stopped after %2 tokens, at the context length of %3")
                                   .arg(gen.label)
                                   .arg(c.generated)
                                   .arg(model.config().maxLen);
        }
        out.data.firstGeneratedToken = firstGenerated;
        out.tokens = idTokens;
        out.prompt = text;
        const std::string prompt = text.toStdString();
        gwb::engine::checkUtf8(prompt);
        const int threads = gwb::engine::threads();
        // Load and trace one model (its stages on the progress bar).
        auto loadAndTrace = [&](const Slot& slot) {
            current = slot.label;
            enterStage(state, slot.load);
            const gwb::engine::Model model = cache.get(slot.path, request.device);
            if (model.config().kind != slot.kind)
                throw std::runtime_error(
                    "'" + slot.path.toStdString() + "' is a " +
                    (model.config().kind == ModelKind::Grassmann ? "Grassmann" : "Transformer") + " model, not a " +
                    (slot.kind == ModelKind::Grassmann ? "Grassmann model" : "Transformer baseline"));
            enterStage(state, slot.trace);
            gwb::engine::TraceOptions options;
            options.lensTopK = std::max(0, request.lensTopK);
            options.maxTokens = std::max<int64_t>(0, request.maxTokens);
            options.keepMixerStates = false; // no view draws g or the mixer's input
            // Above 512 tokens the baseline's H x T x T probabilities (GPT-2 small at 2,048: 2.3 GB)
            // are not kept: the views and analyses recompute the rows they read from q and k.
            options.denseAttentionLimit = 512;
            if (!idTokens.empty() && sameVocabulary(model, idTokens))
                return traceTokens(model, idTokens, prompt, options, progressInto(state), &state.cancel);
            return gwb::engine::trace(model, prompt, options, progressInto(state), &state.cancel);
        };
        auto analyse = [&](const gwb::engine::TracePtr& trace, int analysisThreads,
                           const gwb::engine::ProgressFn& progress) {
            gwb::engine::AnalysisOptions analysisOptions;
            analysisOptions.promptSubspaceK = request.promptSubspaceK;
            analysisOptions.cache = analysisCache(); // the same models are traced again and again
            analysisOptions.threads = analysisThreads;
            analysisOptions.parts = request.analysisParts | gwb::engine::kAnalysisCore;
            return std::make_shared<const gwb::engine::TraceAnalysis>(
                gwb::engine::analyzeTrace(*trace, analysisOptions, progress));
        };
        auto keep = [&](const Slot& slot, const gwb::engine::TracePtr& trace,
                        const std::shared_ptr<const gwb::engine::TraceAnalysis>& analysis) {
            const QString notice = truncationNotice(*trace, slot.label, request.maxTokens);
            if (!notice.isEmpty()) out.notices << notice;
            for (const QString& w : collapseLayerWarnings(analysis->warnings))
                out.notices << slot.label + QStringLiteral(": ") + w;
            if (slot.kind == ModelKind::Grassmann) {
                out.data.grassmann = trace;
                out.data.grassmannAnalysis = analysis;
            } else {
                out.data.baseline = trace;
                out.data.baselineAnalysis = analysis;
            }
        };
        if (!slots[0].path.isEmpty() && !slots[1].path.isEmpty() && threads >= 2) {
            // Both models: the Grassmann analysis (geometry on the CPU, no matrix library) runs on
            // its own thread while the baseline loads, traces and is analysed on this one, each
            // with half of the threads. Run after run, the two overlap instead of taking turns
            // (tests/app/gui_bench). The progress bar follows the baseline meanwhile.
            const gwb::engine::TracePtr grassmannTrace = loadAndTrace(slots[0]);
            const int grassmannThreads = threads / 2;
            const gwb::engine::ProgressFn cancelOnly = [&state](int64_t, int64_t) { return !state.cancel.load(); };
            std::future<std::shared_ptr<const gwb::engine::TraceAnalysis>> grassmannAnalysis =
                std::async(std::launch::async, analyse, grassmannTrace, grassmannThreads, cancelOnly);
            gwb::engine::TracePtr baselineTrace;
            std::shared_ptr<const gwb::engine::TraceAnalysis> baselineAnalysis;
            {
                const gwb::engine::ScopedThreads baselineThreads(threads - grassmannThreads);
                baselineTrace = loadAndTrace(slots[1]);
                enterStage(state, slots[1].analyse);
                baselineAnalysis = analyse(baselineTrace, threads - grassmannThreads, progressInto(state));
            }
            current = slots[0].label;
            keep(slots[0], grassmannTrace, grassmannAnalysis.get());
            current = slots[1].label;
            keep(slots[1], baselineTrace, baselineAnalysis);
        } else {
            for (const Slot& slot : slots) {
                if (slot.path.isEmpty()) continue;
                const gwb::engine::TracePtr trace = loadAndTrace(slot);
                enterStage(state, slot.analyse);
                keep(slot, trace, analyse(trace, threads, progressInto(state))); // layers in parallel
            }
        }
        if (request.withSaliency) {
            if (state.cancel.load()) throw gwb::engine::Cancelled();
            current.clear(); // computeSaliency reports per-model problems in the result, never throws
            SaliencyRequest s;
            s.grassmannPath = request.grassmannPath;
            s.baselinePath = request.baselinePath;
            s.device = request.device;
            s.data = out.data;
            s.token = gwb::views::tokenAfterRun(out.data, request.previousToken);
            s.target = request.saliencyTarget;
            if (s.token >= 0) out.saliency = computeSaliency(cache, s);
        }
        enterStage(state, TraceStage::Done);
        out.status = TraceOutcome::Status::Ok;
    } catch (const gwb::engine::Cancelled&) {
        out = TraceOutcome{};
        out.status = TraceOutcome::Status::Cancelled;
        out.message = QStringLiteral("cancelled");
    } catch (const std::exception& e) {
        const QString what = QString::fromUtf8(e.what());
        out = TraceOutcome{};
        out.status = TraceOutcome::Status::Failed;
        out.message = current.isEmpty() ? what : current + QStringLiteral(": ") + what;
    }
    return out;
}

} // namespace gwb::app
