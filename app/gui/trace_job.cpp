#include "gui/trace_job.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/tracer.h"

#include <QFileInfo>

#include <exception>
#include <iterator>
#include <memory>

namespace gwb::app {
namespace {

using gwb::engine::ModelKind;

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
    return f / models;
}

gwb::engine::Model ModelCache::get(const QString& path, const QString& device) {
    const QFileInfo info(path);
    if (!info.exists()) throw std::runtime_error("model file '" + path.toStdString() + "' does not exist");
    if (!info.isFile() || !info.isReadable())
        throw std::runtime_error("model file '" + path.toStdString() + "' cannot be read");
    const auto key = std::make_pair(info.absoluteFilePath(), device);
    const qint64 modified = info.lastModified().toMSecsSinceEpoch();
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        const auto it = m_entries.find(key);
        if (it != m_entries.end() && it->second.modified == modified && it->second.size == info.size())
            return it->second.model;
    }
    // Load outside the lock: it may take a while and the cache is only a cache.
    // .gwb files load directly; PyTorch re-implementations' checkpoints are imported, with what
    // the user chose for this file when the importer could not tell on its own.
    const std::optional<ImportChoice> choice = importChoice(key.first);
    const std::string file = key.first.toStdString();
    gwb::engine::Model model;
    if (choice) {
        try {
            model = gwb::engine::importCheckpoint(file, importOptionsFor(*choice, device)).model;
        } catch (const std::invalid_argument& e) { // a bad layout name or offset text
            throw std::runtime_error(file + ": " + e.what());
        }
    } else {
        model = gwb::engine::loadOrImportModel(file, device.toStdString()).model;
    }
    if (gwb::engine::isImportableCheckpointPath(file) && !model.tokenizer())
        throw std::runtime_error(noVocabularyMessage(key.first).toStdString());
    std::lock_guard<std::mutex> lock(m_mutex);
    m_entries[key] = Entry{model, modified, info.size()};
    return model;
}

void ModelCache::setImportChoice(const QString& path, const ImportChoice& choice) {
    const QString abs = QFileInfo(path).absoluteFilePath();
    std::lock_guard<std::mutex> lock(m_mutex);
    m_choices[abs] = choice;
    for (auto it = m_entries.begin(); it != m_entries.end();)
        it = it->first.first == abs ? m_entries.erase(it) : std::next(it);
}

std::optional<ImportChoice> ModelCache::importChoice(const QString& path) const {
    const QString abs = QFileInfo(path).absoluteFilePath();
    std::lock_guard<std::mutex> lock(m_mutex);
    const auto it = m_choices.find(abs);
    if (it == m_choices.end()) return std::nullopt;
    return it->second;
}

void ModelCache::clear() {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_entries.clear();
}

QString validateRequest(const TraceRequest& request) {
    if (request.grassmannPath.isEmpty() && request.baselinePath.isEmpty())
        return QStringLiteral("no model to run: open a Grassmann model or a Transformer baseline (File > Open Model)");
    if (request.prompt.trimmed().isEmpty())
        return QStringLiteral("the prompt is empty: type or open some text, then Run");
    return {};
}

QString truncationNotice(const gwb::engine::Trace& trace, const QString& label) {
    if (trace.droppedTokens <= 0) return {};
    return QStringLiteral("%1: the prompt is longer than the model's context of %2 tokens; "
                          "the first %3 tokens were traced and the last %4 dropped")
        .arg(label)
        .arg(trace.config.maxLen)
        .arg(trace.length())
        .arg(trace.droppedTokens);
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
    try {
        gwb::engine::setThreads(request.threads);
        const std::string prompt = request.prompt.toStdString();
        gwb::engine::checkUtf8(prompt);
        for (const Slot& slot : slots) {
            if (slot.path.isEmpty()) continue;
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
            const gwb::engine::TracePtr trace =
                gwb::engine::trace(model, prompt, options, progressInto(state), &state.cancel);
            enterStage(state, slot.analyse);
            gwb::engine::AnalysisOptions analysisOptions;
            analysisOptions.promptSubspaceK = request.promptSubspaceK;
            auto analysis = std::make_shared<const gwb::engine::TraceAnalysis>(
                gwb::engine::analyzeTrace(*trace, analysisOptions, progressInto(state)));
            const QString notice = truncationNotice(*trace, slot.label);
            if (!notice.isEmpty()) out.notices << notice;
            for (const auto& w : analysis->warnings)
                out.notices << slot.label + QStringLiteral(": ") + QString::fromStdString(w);
            if (slot.kind == ModelKind::Grassmann) {
                out.data.grassmann = trace;
                out.data.grassmannAnalysis = analysis;
            } else {
                out.data.baseline = trace;
                out.data.baselineAnalysis = analysis;
            }
        }
        enterStage(state, TraceStage::Done);
        out.status = TraceOutcome::Status::Ok;
    } catch (const gwb::engine::Cancelled&) {
        out.status = TraceOutcome::Status::Cancelled;
        out.message = QStringLiteral("cancelled");
        out.data = {};
    } catch (const std::exception& e) {
        out.status = TraceOutcome::Status::Failed;
        const QString what = QString::fromUtf8(e.what());
        out.message = current.isEmpty() ? what : current + QStringLiteral(": ") + what;
        out.data = {};
    }
    return out;
}

} // namespace gwb::app
