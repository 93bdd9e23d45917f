#pragma once
// Small helpers the command-line commands share: integer options, writable outputs, CSV fields
// and numbers written the same way in every file.

#include "gwb/engine/csv.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QString>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace gwb::app::cli {

/// An optional integer option; `fallback` when not set. Throws naming the option.
inline int64_t intValue(const QCommandLineParser& p, const QCommandLineOption& o, const char* name, int64_t fallback) {
    if (!p.isSet(o)) return fallback;
    bool ok = false;
    const qlonglong v = p.value(o).toLongLong(&ok);
    if (!ok)
        throw std::invalid_argument(std::string("--") + name + " must be an integer, got '" + p.value(o).toStdString() +
                                    "'");
    return v;
}

/// Throws naming the problem when `path` cannot be written (before any work is done).
inline void checkWritable(const QString& path, const char* what) {
    const QFileInfo fi(path);
    const QFileInfo dir(fi.absolutePath());
    if (!dir.isDir())
        throw std::runtime_error(std::string("cannot write ") + what + " '" + path.toStdString() + "': the folder " +
                                 dir.filePath().toStdString() + " does not exist");
    if (!dir.isWritable())
        throw std::runtime_error(std::string("cannot write ") + what + " '" + path.toStdString() + "': the folder " +
                                 dir.filePath().toStdString() + " is not writable");
    if (fi.isDir())
        throw std::runtime_error(std::string("cannot write ") + what + " '" + path.toStdString() + "': it is a folder");
}

/// CSV fields and numbers: the engine's (gwb/engine/csv.h), so every file writes them alike.
using gwb::engine::csvField;
inline std::string number(double v) {
    return gwb::engine::csvNumber(v);
}

} // namespace gwb::app::cli
