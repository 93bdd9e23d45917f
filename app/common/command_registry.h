#pragma once
// Subcommands of the `gwb` executable. Each lives in its own cli/cmd_*.cpp (the drawing one in
// figure/cmd_figure.cpp) and registers itself with GWB_REGISTER_COMMAND; main() dispatches on the first argument.

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

/// --min-difference, the same for every causal command: the least |clean - corrupted| metric
/// difference (logits) for a normalised effect (gwb/engine/effect_claims.h).
inline QCommandLineOption minDifferenceOption() {
    return {
        QStringLiteral("min-difference"),
        QStringLiteral("The least |clean - corrupted| metric difference, in logits, for a normalised effect (default "
                       "%1). Below it the normalised effect is not defined: raw effects (changed - corrupted, "
                       "logits) are shown and written, and the output says why.")
            .arg(gwb::engine::kDefaultMinDifference),
        QStringLiteral("LOGITS")};
}
/// The option's value, checked (a clear message for a bad number).
inline double minDifferenceValue(const QCommandLineParser& p, const QCommandLineOption& o) {
    if (!p.isSet(o)) return gwb::engine::kDefaultMinDifference;
    bool ok = false;
    const double v = p.value(o).toDouble(&ok);
    if (!ok)
        throw std::invalid_argument("--min-difference must be a number of logits, got '" + p.value(o).toStdString() +
                                    "'");
    gwb::engine::checkMinDifference(v, "--min-difference");
    return v;
}

/// Adds a command; called from static initializers through GWB_REGISTER_COMMAND.
bool registerCommand(const Command& command);
/// All registered commands, sorted by name.
std::vector<Command> commands();
/// The command called `name`, or nullptr.
const Command* findCommand(const QString& name);

} // namespace gwb::app

#define GWB_CONCAT_INNER(a, b) a##b
#define GWB_CONCAT(a, b) GWB_CONCAT_INNER(a, b)
/// GWB_REGISTER_COMMAND("info", "Print a model's architecture", runInfo, false)
#define GWB_REGISTER_COMMAND(NAME, SUMMARY, FN, NEEDS_GUI)                                                             \
    static const bool GWB_CONCAT(gwbRegistered_, __LINE__) =                                                           \
        ::gwb::app::registerCommand(::gwb::app::Command{NAME, SUMMARY, FN, NEEDS_GUI})
