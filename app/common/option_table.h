#pragma once
// An analysis's option table (gwb/engine/options.h) on the command line: one QCommandLineOption per
// option with the table's help, default and range, read back into the request with the engine's
// checks and sentences.

#include "gwb/engine/options.h"

#include <QCommandLineOption>
#include <QCommandLineParser>

#include <algorithm>
#include <string>
#include <vector>

namespace gwb::app {

/// One option of a table as the parser's: "--max-logits <N>  Logit nodes, at most (default 10; an
/// integer, at least 1)."
template <class Request> QCommandLineOption commandLineOption(const engine::Option<Request>& o) {
    return {QString::fromLatin1(o.flag),
            QString::fromUtf8(o.help) + QStringLiteral(" (") + QString::fromStdString(o.defaultAndRange()) +
                QStringLiteral(")."),
            QString::fromLatin1(o.valueName)};
}

/// The table's options as the parser's; with `only`, those of these keys (a command that takes a part
/// of a shared table), in the table's order.
template <class Request>
std::vector<QCommandLineOption> commandLineOptions(const engine::OptionTable<Request>& table,
                                                   const std::vector<std::string>& only = {}) {
    std::vector<QCommandLineOption> out;
    for (const engine::Option<Request>& o : table)
        if (only.empty() || std::find(only.begin(), only.end(), o.key) != only.end())
            out.push_back(commandLineOption(o));
    return out;
}

/// Sets each option given on the command line (`options` as commandLineOptions made them, each
/// found in the table by its flag), checked; throws std::invalid_argument with the engine's sentence.
template <class Request>
void readCommandLineOptions(const QCommandLineParser& p, const std::vector<QCommandLineOption>& options,
                            const engine::OptionTable<Request>& table, Request& r) {
    for (const QCommandLineOption& q : options)
        if (p.isSet(q))
            engine::setOptionText(engine::findOption(table, q.names().first().toStdString(), "the command"), r,
                                  p.value(q).toStdString());
}

} // namespace gwb::app
