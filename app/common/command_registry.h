#pragma once
// Subcommands of the `gwb` executable. Each lives in its own cli/cmd_*.cpp (the drawing one in
// figure/cmd_figure.cpp) as a Command; main.cpp lists them in one table and dispatches on the first
// argument.

#include "common/option_table.h"
#include "gwb/engine/effect_claims.h"

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QStringList>

#include <stdexcept>
#include <string>
#include <vector>

namespace gwb::app {

struct Command {
    const char* name;    ///< the word after `gwb`, e.g. "info"
    const char* summary; ///< one line for `gwb --help`
    /// Runs the command; `args` starts with "gwb <name>" so QCommandLineParser::process works.
    /// Returns the process exit code. Errors go to stderr with a message naming the problem.
    int (*run)(const QStringList& args);
    bool needsGui = false; ///< true: a QGuiApplication (offscreen when headless) is created first
};

/// --device and --threads, the same for every command that runs a model.
inline QCommandLineOption deviceOption() {
    return {QStringLiteral("device"), QStringLiteral("auto, cpu or cuda (default auto)."), QStringLiteral("DEV"),
            QStringLiteral("auto")};
}
inline QCommandLineOption threadsOption() {
    return {QStringLiteral("threads"), QStringLiteral("CPU threads (default all cores)."), QStringLiteral("N"),
            QStringLiteral("0")};
}

/// --min-difference, the same for every causal command (the engine's causalOptions): the least
/// |clean - corrupted| metric difference (logits) for a normalised effect (gwb/engine/effect_claims.h).
inline QCommandLineOption minDifferenceOption() {
    return commandLineOption(gwb::engine::causalOptions()[0]);
}
/// The option's value, checked with the table's sentence.
inline double minDifferenceValue(const QCommandLineParser& p, const QCommandLineOption& o) {
    gwb::engine::CausalOptions c;
    readCommandLineOptions(p, {o}, gwb::engine::causalOptions(), c);
    return c.minDifference;
}

/// The commands, each defined beside its run function (app/cli/cmd_*.cpp, app/figure/cmd_figure.cpp)
/// and listed once in app/main.cpp's table, which `gwb --help` and the dispatch read.
extern const Command kEvalCommand, kFeaturesCommand, kGenerateCommand, kGraphCommand, kImportCommand, kInfoCommand,
    kInitCommand, kLensCommand, kPatchCommand, kPathsCommand, kStatsCommand, kTokenizerCommand, kTraceCommand,
    kTrainCommand;
/// gwb figure: only in a build with the window's figures (not GWB_HEADLESS).
extern const Command kFigureCommand;

} // namespace gwb::app
