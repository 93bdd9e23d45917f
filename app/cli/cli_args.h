#pragma once
// Small helpers the command-line commands share: integer options, writable outputs, CSV fields
// and numbers written the same way in every file.

#include "gwb/engine/csv.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QStringList>
#include <QFileInfo>
#include <QString>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

/// Throws naming the problem when the output folder `path` (made if missing) could not be written:
/// an existing path that is not a writable folder, or a missing one whose nearest existing parent is
/// not a writable folder. Checked before any work, so a long run never ends in "cannot create folder".
inline void checkFolderWritable(const QString& path, const char* what) {
    QFileInfo fi(path);
    if (fi.exists()) {
        if (!fi.isDir())
            throw std::runtime_error(std::string("cannot write ") + what + " '" + path.toStdString() +
                                     "': it is a file, not a folder");
        if (!fi.isWritable())
            throw std::runtime_error(std::string("cannot write ") + what + " '" + path.toStdString() +
                                     "': the folder is not writable");
        return;
    }
    QFileInfo parent(fi.absolutePath());
    while (!parent.exists() && parent.absoluteFilePath() != parent.absolutePath())
        parent = QFileInfo(parent.absolutePath());
    if (!parent.isDir() || !parent.isWritable())
        throw std::runtime_error(std::string("cannot write ") + what + " '" + path.toStdString() + "': the folder " +
                                 parent.absoluteFilePath().toStdString() +
                                 (parent.isDir() ? " is not writable" : " is not a folder"));
}

/// p.process(args) for a subcommand (`gwb features train`), whose --help reads "Usage: gwb features
/// train [options]" (args[0]); Qt's own help names the program QCoreApplication was started as
/// ("gwb features").
inline void processSubcommand(QCommandLineParser& p, const QStringList& args) {
    if (args.contains(QStringLiteral("--help")) || args.contains(QStringLiteral("-h"))) {
        QString text = p.helpText();
        const QString program = QCoreApplication::arguments().value(0);
        if (text.startsWith(QStringLiteral("Usage: ") + program))
            text.replace(0, 7 + program.size(), QStringLiteral("Usage: ") + args.value(0));
        std::fputs(text.toLocal8Bit().constData(), stdout);
        std::exit(0);
    }
    p.process(args);
}

/// A piece as the window's token strip shows it (views' displayPiece, the one rule of the Views
/// Guide): SentencePiece's word-start mark U+2581 as a middle dot, byte pieces "<0x0A>" as a return
/// sign, "<0x09>" a tab sign, "<0x20>" an open box, a printable ASCII byte as its character; every
/// other piece unchanged.
inline std::string terminalPiece(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') {
        std::string shown;
        for (size_t i = 0; i < piece.size(); ++i) {
            if (piece.compare(i, 3, "\xe2\x96\x81") == 0) { // U+2581
                shown += "\xc2\xb7";                        // U+00B7
                i += 2;
            } else {
                shown += piece[i];
            }
        }
        return shown;
    }
    int b = 0;
    for (int i = 3; i < 5; ++i) {
        const char c = piece[static_cast<size_t>(i)];
        const int v = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                             : -1;
        if (v < 0) return piece;
        b = 16 * b + v;
    }
    if (b == 0x0A || b == 0x0D) return "\u23CE";
    if (b == 0x09) return "\u21E5";
    if (b == 0x20) return "\u2423";
    if (b > 0x20 && b < 0x7F) return std::string(1, static_cast<char>(b));
    return piece;
}

/// A number as the terminal shows it: four significant digits (the files keep every digit, number()).
inline std::string shown(double v) {
    if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
}

/// CSV fields and numbers: the engine's (gwb/engine/csv.h), so every file writes them alike.
using gwb::engine::csvField;
inline std::string number(double v) {
    return gwb::engine::csvNumber(v);
}

} // namespace gwb::app::cli
