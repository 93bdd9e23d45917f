#pragma once
// The two models that ship with the workbench (resources/models/grassmann-austen.gwb and
// transformer-austen.gwb). The GUI and every command use them when no model is named.

#include "gwb/engine/config.h"

#include <QString>
#include <QStringList>

namespace gwb::app {

/// File name of the bundled model of a kind ("grassmann-austen.gwb", "transformer-austen.gwb").
QString bundledModelFileName(gwb::engine::ModelKind kind);

/// Folders searched in order: only $GWB_MODELS_DIR when it is set; else next to the executable
/// (../share/gwb/models, ../../resources/models, ../resources/models), then
/// GWB_SOURCE_DIR/resources/models of the source tree the binary was built from.
QStringList bundledModelDirs();

/// Absolute path of the bundled model of a kind, or an empty string when none of the folders has it.
QString findBundledModel(gwb::engine::ModelKind kind);

/// One-line explanation for a missing bundled model: which file was looked for and where.
QString missingBundledModelMessage(gwb::engine::ModelKind kind);

/// `explicitPath` when given, else the bundled model; throws std::runtime_error with
/// missingBundledModelMessage() when neither exists.
QString resolveModelPath(const QString& explicitPath, gwb::engine::ModelKind kind);

/// The model a command's --model names: a file path, or the words "grassmann" / "transformer" for
/// the bundled ones; empty means the bundled Grassmann model. Throws when a bundled one is missing.
QString modelArgument(const QString& value);

/// Help text for a --model option that defaults to the bundled models.
QString modelOptionHelp();

} // namespace gwb::app
