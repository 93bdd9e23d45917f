// gwb trace: run a model on a prompt and write every recorded array (and optionally the
// geometry analyses) to an NPZ file with a meta.json member.

#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "common/layer_warnings.h"
#include "common/option_table.h"
#include "cli/trace_writer.h"

#include "gwb/engine/import.h"
#include "gwb/engine/tokenizer.h"
#include "gwb/engine/device.h"
#include "gwb/engine/model.h"
#include "gwb/engine/prompt_file.h"
#include "gwb/engine/prompt_run.h"
#include "gwb/engine/trace_npz.h"
#include "gwb/engine/trace_options.h"
#include "gwb/engine/tracer.h"

#include <QCommandLineParser>
#include <QFileInfo>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using namespace gwb::engine;

void writeTrace(const Trace& t, bool withAnalysis, const std::string& out) {
    const TraceFile file = traceFile(t, withAnalysis);
    for (const QString& w : gwb::app::collapseLayerWarnings(file.warnings))
        std::fprintf(stderr, "warning: %s\n", qPrintable(w));
    writeTraceFile(file, out);
}

} // namespace

void gwb::app::writeTraceNpz(const Trace& trace, bool withAnalysis, const std::string& out) {
    writeTrace(trace, withAnalysis, out);
}

namespace {

std::string indexedName(const std::string& out, size_t i) {
    const QFileInfo fi(QString::fromStdString(out));
    const QString base = fi.path() + QLatin1Char('/') + fi.completeBaseName();
    return (base + QStringLiteral("-%1.").arg(i) + (fi.suffix().isEmpty() ? QStringLiteral("npz") : fi.suffix()))
        .toStdString();
}

int runTrace(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral(
            "Trace a model on a prompt and write an NPZ of its states (token_ids, surprisal, lL_h, lL_z, lL_g,\n"
            "lL_gate or lL_q, lL_k, lL_attn, final_h, lens_top_*; lL_mixer_input where the mixer reads a\n"
            "normalised input (pre-norm models); logits with --logits; analyses with --analysis) plus\n"
            "meta.json (model, config, tokens with byte and character spans, definitions).\n"
            "A prompt file holds one prompt per line; several prompts write OUT-0.npz, OUT-1.npz, ...\n"
            "Prompt file: ") +
        QString::fromUtf8(gwb::engine::kPromptFileRule) + QStringLiteral("."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("Prompt text."), QStringLiteral("TEXT"));
    const QCommandLineOption promptFile(QStringLiteral("prompt-file"),
                                        QStringLiteral("File with one prompt per line (UTF-8)."),
                                        QStringLiteral("FILE"));
    const QCommandLineOption tokenIds(QStringLiteral("token-ids"), QStringLiteral("Comma-separated token ids."),
                                      QStringLiteral("IDS"));
    const QCommandLineOption logits(QStringLiteral("logits"), QStringLiteral("Also write the T x V logits."));
    const QCommandLineOption analysis(QStringLiteral("analysis"),
                                      QStringLiteral("Also compute and write the geometry analyses."));
    const QCommandLineOption out(QStringLiteral("out"), QStringLiteral("Output .npz file."), QStringLiteral("FILE"));
    const std::vector<QCommandLineOption> valued = gwb::app::commandLineOptions(gwb::engine::traceOptions());
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({model, prompt, promptFile, tokenIds, logits, analysis, out});
    for (const QCommandLineOption& o : valued)
        p.addOption(o);
    p.addOptions({device, threads});
    p.process(args);
    try {
        if (!p.isSet(out)) throw std::invalid_argument("--out is required");
        if (int(p.isSet(prompt)) + int(p.isSet(promptFile)) + int(p.isSet(tokenIds)) != 1)
            throw std::invalid_argument("give exactly one of --prompt, --prompt-file, --token-ids");
        TraceOptions o;
        gwb::app::readCommandLineOptions(p, valued, gwb::engine::traceOptions(), o);
        setThreads(p.value(threads).toInt());
        const Model m = gwb::engine::loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(),
                                                       p.value(device).toStdString())
                            .model;
        o.keepLogits = p.isSet(logits);
        const bool withAnalysis = p.isSet(analysis);
        const std::string outPath = p.value(out).toStdString();
        auto report = [&](const TracePtr& t, const std::string& path) {
            // Which limit cut it: --max-tokens or the model's context (max_len).
            if (const std::string note = gwb::engine::truncationNotice(*t, "", o.maxTokens, "--max-tokens");
                !note.empty())
                std::fprintf(stderr, "note: %s\n", note.c_str());
            writeTrace(*t, withAnalysis, path);
            std::printf("wrote %s (%lld tokens, %zu layers)\n", path.c_str(), static_cast<long long>(t->length()),
                        t->layers.size());
        };
        if (p.isSet(tokenIds)) {
            std::vector<int32_t> ids;
            for (const QString& s : p.value(tokenIds).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
                bool ok = false;
                ids.push_back(s.trimmed().toInt(&ok));
                if (!ok) throw std::invalid_argument("'" + s.toStdString() + "' is not a token id");
            }
            report(traceIds(m, ids, o), outPath);
        } else if (p.isSet(prompt)) {
            report(trace(m, p.value(prompt).toStdString(), o), outPath);
        } else {
            // The engine's one rule for a prompt file (as the window and gwb figure read it), then
            // one prompt a line.
            const std::string file = p.value(promptFile).toStdString();
            const std::vector<std::string> prompts = gwb::engine::promptFileLines(file);
            if (prompts.empty()) throw std::invalid_argument(file + ": the prompt file has no non-empty line");
            for (size_t i = 0; i < prompts.size(); ++i)
                report(trace(m, prompts[i], o), prompts.size() == 1 ? outPath : indexedName(outPath, i));
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb trace: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kTraceCommand{"trace", "Trace a model on a prompt and write an NPZ", runTrace, false};
} // namespace gwb::app
