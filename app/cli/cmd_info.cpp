// gwb info: architecture and parameter counts of a config or a model file.

#include "common/bundled_models.h"
#include "common/command_registry.h"

#include "gwb/engine/config_io.h"
#include "gwb/engine/device.h"
#include "gwb/engine/import.h"
#include "gwb/engine/model.h"
#include "gwb/engine/train.h"

#include <nlohmann/json.hpp>

#include <QCommandLineParser>

#include <cstdio>

namespace {

int runInfo(const QStringList& args) {
    QCommandLineParser p;
    p.setApplicationDescription(
        QStringLiteral("Print architecture, per-block and total parameter counts, device and threads."));
    p.addHelpOption();
    const QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Model config JSON."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption model(QStringLiteral("model"), gwb::app::modelOptionHelp(), QStringLiteral("FILE"));
    const QCommandLineOption device = gwb::app::deviceOption();
    const QCommandLineOption threads = gwb::app::threadsOption();
    p.addOptions({config, model, device, threads});
    p.addPositionalArgument(QStringLiteral("MODEL"),
                            QStringLiteral("The model, as --model takes it (a file or a Hugging Face folder)."),
                            QStringLiteral("[MODEL]"));
    p.process(args);
    // `gwb info FILE` describes FILE; --model and --config name a model too, so one of them at most.
    const QStringList given = p.positionalArguments();
    if (given.size() > 1 || (given.size() == 1 && (p.isSet(model) || p.isSet(config)))) {
        std::fprintf(stderr, "gwb info: give one model, as MODEL or --model (got %s)\n",
                     qPrintable(given.join(QStringLiteral(", "))));
        return 2;
    }
    try {
        using namespace gwb::engine;
        setThreads(p.value(threads).toInt());
        if (p.isSet(model) || !p.isSet(config)) {
            const QString path = gwb::app::modelArgument(given.isEmpty() ? p.value(model) : given.front());
            const Model m = gwb::engine::loadOrImportModel(path.toStdString(), p.value(device).toStdString()).model;
            std::printf("file:        %s\n", qPrintable(path));
            if (const std::string v = importedVariantText(m.config()); !v.empty())
                std::printf("family:      %s\n", v.c_str());
            std::printf("%s", m.summary().c_str());
            // The training summary is a JSON object: one field a line, not one long line.
            const nlohmann::json training = nlohmann::json::parse(m.trainingSummary(), nullptr, false);
            if (training.is_object() && !training.empty()) {
                std::printf("training:\n");
                // The validation figures say what they are over (a training-time sample, not the
                // whole split `gwb eval` scores), so that they read right beside other numbers.
                const std::string scope = gwb::engine::validationScope(m.trainingSummary());
                for (const auto& [key, value] : training.items()) {
                    std::string text;
                    if (value.is_string()) {
                        text = value.get<std::string>();
                    } else if (value.is_array()) { // file lists: names, comma-separated
                        for (const auto& item : value)
                            text +=
                                (text.empty() ? "" : ", ") + (item.is_string() ? item.get<std::string>() : item.dump());
                    } else {
                        text = value.dump();
                    }
                    if (!scope.empty() && (key == "valid_loss" || key == "valid_perplexity"))
                        text += " (" + scope + ")";
                    std::printf("  %-20s %s\n", (key + ":").c_str(), text.c_str());
                }
            } else {
                std::printf("training:    %s\n", training.is_object() ? "none recorded" : m.trainingSummary().c_str());
            }
            std::printf("kernels:     %s\n", kernelSummary().c_str());
            std::printf("blas:        %s\n", blasSummary().c_str());
        } else {
            const ModelConfig c = loadConfigFile(p.value(config).toStdString());
            std::printf("%s", configSummary(c).c_str());
            std::printf("device:      %s\n", deviceSummary(resolveDevice(p.value(device).toStdString())).c_str());
            std::printf("kernels:     %s\n", kernelSummary().c_str());
            std::printf("blas:        %s\n", blasSummary().c_str());
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gwb info: %s\n", e.what());
        return 1;
    }
}

} // namespace

namespace gwb::app {
// Listed in the command table (app/main.cpp).
const Command kInfoCommand{"info", "Print a model's architecture and parameter counts", runInfo, false};
} // namespace gwb::app
