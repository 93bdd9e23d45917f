#include "cli/features_transcoders.h"

#include "cli/stop_signals.h"

#include <QDir>
#include <QFileInfo>

#include <cstdio>

namespace gwb::app::cli {

int trainTranscoders(const gwb::engine::Model& model, const gwb::engine::FeatureTrainOptions& options,
                     const QString& dir, bool resume, const std::atomic<bool>& stop) {
    const QString index = QDir(dir).filePath(QStringLiteral("transcoders.json"));
    if (!resume && QFileInfo::exists(index))
        throw std::invalid_argument("'" + dir.toStdString() +
                                    "' already holds a transcoder set: --resume goes on with it, or choose another "
                                    "--out folder");
    const int64_t layers = model.config().nLayers;
    gwb::app::ProgressLine line;
    int current = -1;
    const bool complete = gwb::engine::trainTranscoderSet(
        model, options, dir.toStdString(),
        [&](int layer, const gwb::engine::FeatureTrainProgress& pr) {
            if (layer != current) {
                if (current >= 0 && line.tty()) std::fprintf(stderr, "\n");
                current = layer;
            }
            if (line.due(pr.seconds, pr.step == pr.steps))
                std::fprintf(stderr, "%slayer %d/%lld  step %lld/%lld  mse %.4g  explained %.3f  L0 %.1f%s",
                             line.start(), layer, static_cast<long long>(layers), static_cast<long long>(pr.step),
                             static_cast<long long>(pr.steps), pr.mse, pr.explained, pr.l0, line.end());
            return true;
        },
        &stop);
    if (line.tty()) std::fprintf(stderr, "\n");
    if (!complete) {
        std::fprintf(stderr,
                     "gwb features train: stopped by %s in layer %d; the layers before it are saved and its state is "
                     "kept in %s (go on with --transcoders --resume)\n",
                     gwb::app::StopSignals::name(), current,
                     QDir(dir).filePath(QStringLiteral("ffn.%1/state").arg(current)).toStdString().c_str());
        return gwb::app::StopSignals::exitCode(1);
    }
    const gwb::engine::TranscoderSet set = gwb::engine::loadTranscoderSet(dir.toStdString(), &model);
    std::printf("transcoders: %s (%lld layers of %s, %lld features each, %s)\n", dir.toStdString().c_str(),
                static_cast<long long>(set.layers.size()), model.displayName().c_str(),
                static_cast<long long>(set.layers.front().config.dSae), set.layers.front().config.architecture.c_str());
    return 0;
}

} // namespace gwb::app::cli
