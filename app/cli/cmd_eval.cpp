// gwb eval: perplexity and bits per character of a model on text files.

#include "common/bundled_models.h"
#include "common/command_registry.h"

#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/train.h"

#include <QCommandLineParser>

#include <cstdio>

namespace {

int runEval(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Evaluate next-token perplexity on text files (non-empty lines, each token predicted once\n"
                       "with up to max_len tokens of context)."));
    p.addHelpOption();
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption data(QStringLiteral("data"), QStringLiteral("Text file (repeat for several)."),
                                  QStringLiteral("FILE"));
    const QCommandLineOption batch(QStringLiteral("batch"), QStringLiteral("Sequences per batch (default 8)."),
                                   QStringLiteral("B"), QStringLiteral("8"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({model, data, batch, device, threads});
    p.process(args);
    try {
        using namespace gwb::engine;
        if (!p.isSet(data)) throw std::invalid_argument("--data is required");
        setThreads(p.value(threads).toInt());
        const Model m = gwb::engine::loadOrImportModel(gwb::app::modelArgument(p.value(model)).toStdString(),
                                                       p.value(device).toStdString())
                            .model;
        std::vector<std::string> files;
        for (const QString& f : p.values(data))
            files.push_back(f.toStdString());
        const EvalResult r = evaluate(m, files, std::max(1, p.value(batch).toInt()), [](int64_t done, int64_t total) {
            std::fprintf(stderr, "\revaluating: %lld/%lld blocks", static_cast<long long>(done),
                         static_cast<long long>(total));
            if (done == total) std::fprintf(stderr, "\n");
            return true;
        });
        std::printf(
            "tokens: %lld\ncharacters: %lld\nloss: %.4f nats/token\nperplexity: %.3f\nbits per character: %.4f\n",
            static_cast<long long>(r.tokens), static_cast<long long>(r.characters), r.loss, r.perplexity,
            r.bitsPerCharacter);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb eval: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kEvalCommand{"eval", "Perplexity and bits per character on text files", runEval, false};
} // namespace gwb::app
