#pragma once
// An analysis's option table (gwb/engine/options.h) on the command line: one QCommandLineOption per
// option with the table's help, default and range, read back into the request with the engine's
// checks and sentences.

#include "gwb/engine/options.h"

#include <QCommandLineOption>
#include <QCommandLineParser>

#include <vector>

namespace gwb::app {

/// The table's options as the parser's: "--max-logits <N>  Logit nodes, at most (default 10; an
/// integer, at least 1)."
template <class Request> std::vector<QCommandLineOption> commandLineOptions(const engine::OptionTable<Request>& table) {
    std::vector<QCommandLineOption> out;
    for (const engine::Option<Request>& o : table)
        out.emplace_back(QString::fromLatin1(o.flag),
                         QString::fromUtf8(o.help) + QStringLiteral(" (") +
                             QString::fromStdString(o.defaultAndRange()) + QStringLiteral(")."),
                         QString::fromLatin1(o.valueName));
    return out;
}

/// Sets each option given on the command line (`options` as commandLineOptions made them), checked;
/// throws std::invalid_argument with the engine's sentence.
template <class Request>
void readCommandLineOptions(const QCommandLineParser& p, const std::vector<QCommandLineOption>& options,
                            const engine::OptionTable<Request>& table, Request& r) {
    for (size_t i = 0; i < options.size() && i < table.size(); ++i)
        if (p.isSet(options[i])) engine::setOptionText(table[i], r, p.value(options[i]).toStdString());
}

} // namespace gwb::app
