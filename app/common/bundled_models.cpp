#include "common/bundled_models.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <stdexcept>

namespace gwb::app {

QString bundledModelFileName(gwb::engine::ModelKind kind) {
    return kind == gwb::engine::ModelKind::Grassmann ? QStringLiteral("grassmann-austen.gwb")
                                                     : QStringLiteral("transformer-austen.gwb");
}

QStringList bundledModelDirs() {
    QStringList dirs;
    // An explicit folder replaces the search (packagers, tests that must not find a model).
    const QString env = qEnvironmentVariable("GWB_MODELS_DIR");
    if (!env.isEmpty()) return {QDir::cleanPath(env)};
    // applicationDirPath() needs a Q(Core)Application; tests and early callers may have none.
    if (QCoreApplication::instance()) {
        const QDir exe(QCoreApplication::applicationDirPath());
        for (const char* rel : {"../share/gwb/models", "../../resources/models", "../resources/models"})
            dirs << QDir::cleanPath(exe.absoluteFilePath(QString::fromLatin1(rel)));
    }
#ifdef GWB_SOURCE_DIR
    dirs << QDir::cleanPath(QStringLiteral(GWB_SOURCE_DIR "/resources/models"));
#endif
    dirs.removeDuplicates();
    return dirs;
}

QString findBundledModel(gwb::engine::ModelKind kind) {
    const QString name = bundledModelFileName(kind);
    for (const QString& dir : bundledModelDirs()) {
        const QFileInfo info(QDir(dir).filePath(name));
        if (info.isFile()) return info.absoluteFilePath();
    }
    return {};
}

QString missingBundledModelMessage(gwb::engine::ModelKind kind) {
    return QStringLiteral("bundled %1 model '%2' not found (looked in %3); open a model file instead")
        .arg(kind == gwb::engine::ModelKind::Grassmann ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"),
             bundledModelFileName(kind), bundledModelDirs().join(QStringLiteral(", ")));
}

QString resolveModelPath(const QString& explicitPath, gwb::engine::ModelKind kind) {
    if (!explicitPath.isEmpty()) return explicitPath;
    const QString found = findBundledModel(kind);
    if (found.isEmpty()) throw std::runtime_error(missingBundledModelMessage(kind).toStdString());
    return found;
}

QString modelArgument(const QString& value) {
    if (value.isEmpty() || value == QLatin1String("grassmann"))
        return resolveModelPath(QString(), gwb::engine::ModelKind::Grassmann);
    if (value == QLatin1String("transformer")) return resolveModelPath(QString(), gwb::engine::ModelKind::Transformer);
    return value;
}

QString modelOptionHelp() {
    return QStringLiteral("Checkpoint (.gwb), or 'grassmann' / 'transformer' for a bundled model "
                          "(default: the bundled Grassmann model).");
}

} // namespace gwb::app
