// gwb generate: continue a prompt with the incremental generator (the prompt runs once; each new
// token costs O(1) per Grassmann layer, one KV-cache row per attention layer), streaming the text
// as it comes; optionally trace prompt + continuation into an NPZ like `gwb trace`.

#include "common/bundled_models.h"
#include "common/command_registry.h"
#include "common/option_table.h"
#include "cli/stop_signals.h"
#include "cli/trace_writer.h"

#include "gwb/engine/device.h"
#include "gwb/engine/generate.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/tracer.h"

#include <QCommandLineParser>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <string>

namespace {

using namespace gwb::engine;

std::atomic<bool> g_interrupted{false};

int runGenerate(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Continue a prompt with the model, printing the text as it is generated and the speed\n"
                       "(tokens/s) at the end. --trace writes the trace of prompt + continuation (as gwb trace)."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption prompt(QStringLiteral("prompt"), QStringLiteral("Prompt text."), QStringLiteral("TEXT"));
    const std::vector<QCommandLineOption> valued = gwb::app::commandLineOptions(generateOptions());
    const QCommandLineOption greedy(QStringLiteral("greedy"), QStringLiteral("Always take the likeliest token."));
    const QCommandLineOption traceOut(QStringLiteral("trace"),
                                      QStringLiteral("Also trace prompt + continuation into this .npz."),
                                      QStringLiteral("FILE"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({model, prompt});
    for (const QCommandLineOption& o : valued)
        p.addOption(o);
    p.addOptions({greedy, traceOut, device, threads});
    p.process(args);
    try {
        if (!p.isSet(prompt)) throw std::invalid_argument("--prompt is required");
        GenerateOptions o;
        gwb::app::readCommandLineOptions(p, valued, generateOptions(), o);
        o.greedy = p.isSet(greedy);
        setThreads(p.value(threads).toInt());
        const Model m = gwb::engine::loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(),
                                                       p.value(device).toStdString())
                            .model;
        const TokenizerPtr tok = m.tokenizer();
        if (!tok) throw std::invalid_argument("this model has no tokenizer: it cannot read a text prompt");
        const std::string text = p.value(prompt).toStdString();
        const std::vector<int32_t> promptIds = tok->encodeIds(text);
        if (promptIds.empty()) throw std::invalid_argument("the prompt encodes to no tokens");

        // Stream: print what decoding prompt + continuation adds to the decoded prompt, beyond what
        // was already printed. (The continuation is decoded after the prompt, not alone: a
        // word-start piece decoded alone loses its space, "truth" + "in" for "truth in".)
        std::vector<int32_t> all = promptIds;
        const std::string base = tok->decode(promptIds);
        std::string printed;
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
        auto onToken = [&](int32_t id, int64_t) {
            all.push_back(id);
            const std::string full = tok->decode(all);
            const std::string now = full.compare(0, base.size(), base) == 0 ? full.substr(base.size()) : full;
            // Normally `now` extends what was printed; if a new piece changed how earlier ones
            // decode, the text already on the terminal stays and only the rest is printed.
            std::fputs(now.c_str() + std::min(printed.size(), now.size()), stdout);
            printed = now;
            std::fflush(stdout);
            return true;
        };
        g_interrupted = false;
        GenerateResult r;
        {
            const gwb::app::StopSignals signals(g_interrupted); // Ctrl-C or SIGTERM: stop, exit 130/143
            try {
                r = generate(m, promptIds, o, onToken, &g_interrupted);
            } catch (const Cancelled&) {
                std::fprintf(stderr, "\ninterrupted by %s after %zu tokens\n", gwb::app::StopSignals::name(),
                             all.size() - promptIds.size());
                return gwb::app::StopSignals::exitCode(130);
            }
        }
        const int64_t produced = static_cast<int64_t>(r.ids.size()) - r.promptLength;
        std::fprintf(stderr, "\n%lld tokens in, %lld generated, %.1f tokens/s on %s%s\n",
                     static_cast<long long>(r.promptLength), static_cast<long long>(produced), r.tokensPerSecond,
                     m.device().c_str(), r.stoppedAtMaxLen ? " (stopped at max_len)" : "");
        if (p.isSet(traceOut)) {
            const std::string out = p.value(traceOut).toStdString();
            const TracePtr t = traceIds(m, r.ids);
            gwb::app::writeTraceNpz(*t, /*withAnalysis=*/false, out);
            std::fprintf(stderr, "wrote %s (%lld tokens: prompt %lld + continuation %lld)\n", out.c_str(),
                         static_cast<long long>(t->length()), static_cast<long long>(r.promptLength),
                         static_cast<long long>(produced));
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb generate: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kGenerateCommand{"generate", "Continue a prompt (incremental decoding), optionally trace the result",
                               runGenerate, false};
} // namespace gwb::app
