#include "runs/trace_job.h"

#include "runs/saliency_adapter.h"

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

/// The engine's progress callbacks: record progress and say whether to go on.
gwb::engine::ProgressFn progressInto(TraceJobState& state) {
    return [&state](int64_t done, int64_t total) {
        state.done.store(done);
        state.total.store(total);
        return !state.cancel.load();
    };
}

} // namespace

QString stageName(TraceStage stage) {
    return QString::fromUtf8(gwb::engine::promptStageName(stage));
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

QString validateRequest(const TraceRequest& request) {
    if (request.grassmannPath.isEmpty() && request.baselinePath.isEmpty())
        return QStringLiteral("no model to run: open a Grassmann model or a Transformer baseline (File > Open Model)");
    if (request.prompt.trimmed().isEmpty())
        return request.headless ? QStringLiteral("the prompt is empty: give the text with --prompt TEXT")
                                : QStringLiteral("the prompt is empty: type or open some text, then Run");
    if (request.continuation.maxNew < 0) return QStringLiteral("the number of tokens to continue must not be negative");
    return {};
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
        options.cache = gwb::engine::processAnalysisCache();
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
    gwb::engine::PromptRunRequest r;
    r.paths[0] = request.grassmannPath.toStdString();
    r.paths[1] = request.baselinePath.toStdString();
    r.prompt = request.prompt.toStdString();
    r.device = request.device.toStdString();
    r.threads = request.threads;
    r.promptSubspaceK = request.promptSubspaceK;
    r.continuation = request.continuation;
    r.promptTokens = request.promptTokens;
    r.firstGeneratedToken = request.firstGeneratedToken;
    // The window marks generated text by QChar index, the engine by byte.
    if (request.continuationFrom >= 0)
        r.continuationFromByte = request.prompt.left(request.continuationFrom).toUtf8().size();
    r.analysisParts = request.analysisParts;
    r.lensTopK = request.lensTopK;
    r.maxTokens = request.maxTokens;
    gwb::engine::PromptRunResult res = gwb::engine::runPrompt(cache.opener(), r, state);
    out.message = QString::fromStdString(res.message);
    if (res.status == gwb::engine::PromptRunResult::Status::Cancelled) out.status = TraceOutcome::Status::Cancelled;
    if (res.status != gwb::engine::PromptRunResult::Status::Ok) return out;
    out.data.grassmann = res.traces[0];
    out.data.grassmannAnalysis = res.analyses[0];
    out.data.baseline = res.traces[1];
    out.data.baselineAnalysis = res.analyses[1];
    out.data.continuationFrom = res.continuationFromByte;
    out.data.firstGeneratedToken = res.firstGeneratedToken;
    for (size_t i = 0; i < res.notices.size(); ++i) {
        out.notices << QString::fromStdString(res.notices[i]);
        out.analysisNotice << (i < res.analysisNotice.size() && res.analysisNotice[i] != 0);
    }
    out.prompt = QString::fromStdString(res.prompt);
    if (res.continuationFromByte >= 0)
        out.continuationFrom = static_cast<int>(
            QString::fromUtf8(res.prompt.data(), static_cast<qsizetype>(res.continuationFromByte)).size());
    out.generated = res.generated;
    out.tokens = std::move(res.tokens);
    out.tokensPerSecond = res.tokensPerSecond;
    if (request.withSaliency) {
        // computeSaliency reports per-model problems in the result, never throws.
        if (state.cancel.load()) {
            out = TraceOutcome{};
            out.status = TraceOutcome::Status::Cancelled;
            out.message = QStringLiteral("cancelled");
            return out;
        }
        SaliencyRequest s;
        s.grassmannPath = request.grassmannPath;
        s.baselinePath = request.baselinePath;
        s.device = request.device;
        s.data = out.data;
        s.token = gwb::views::tokenAfterRun(out.data, request.previousToken);
        s.target = request.saliencyTarget;
        if (s.token >= 0) out.saliency = computeSaliency(cache, s);
    }
    out.status = TraceOutcome::Status::Ok;
    return out;
}

} // namespace gwb::app
