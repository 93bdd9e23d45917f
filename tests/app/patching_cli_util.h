#pragma once
// What the `gwb patch` and `gwb paths` process tests share (patching_cli_test.cpp,
// patching_pairs_cli_test.cpp, paths_cli_test.cpp): the test prompts, the NPZ reader, a line
// counter and the pairs file for the test vocabulary.

#include "gwb/engine/npy.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QString>

#include <map>
#include <string>
#include <vector>

namespace gwb::app::test::patching_cli {

inline const QString kClean = QStringLiteral("emma was in the");
inline const QString kCorrupt = QStringLiteral("she was in the");

struct Npz {
    std::map<std::string, gwb::engine::NpyArray> arrays;
    nlohmann::json meta;
    const gwb::engine::NpyArray& at(const std::string& name) const { return arrays.at(name); }
};

inline Npz readNpz(const QString& path) {
    Npz out;
    for (const auto& [name, bytes] : gwb::engine::readZipStored(gwb::engine::readBinaryFile(path.toStdString()))) {
        if (name == "meta.json")
            out.meta = nlohmann::json::parse(std::string(bytes.begin(), bytes.end()));
        else
            out.arrays[name.substr(0, name.size() - 4)] = gwb::engine::parseNpy(bytes);
    }
    return out;
}

/// Lines of a text file (-1 when it cannot be read).
inline int lines(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? static_cast<int>(f.readAll().count('\n')) : -1;
}

/// A pairs file for the test vocabulary: two lengths, with and without a position, plus lines
/// that cannot be used.
inline QString writePairs(const QString& path, bool csv) {
    struct P {
        const char *clean, *corrupt, *answer, *wrong;
        int position;
    };
    const std::vector<P> pairs = {
        {"emma was in the", "she was in the", "her", "the", -1},
        {"it is a truth that emma was in the", "it is a truth that she was in the", "her", "the", -1},
        {"emma had a man", "she had a man", "the", "her", -1},
        {"it is the single man that was in the", "it is a single man that was in the", "her", "of", 6},
        {"emma was in the", "she was in the the", "her", "the", -1}, // lengths differ
        {"emma was in the", "she was in the", "zebra", "the", -1}};  // not a piece
    QString text = csv ? QStringLiteral("clean,corrupt,answer,wrong,position,kind\n") : QString();
    for (const P& p : pairs) {
        if (csv)
            text += QStringLiteral("%1,%2,%3,%4,%5,t\n")
                        .arg(p.clean, p.corrupt, p.answer, p.wrong,
                             p.position >= 0 ? QString::number(p.position) : QString());
        else
            text += QStringLiteral("{\"clean\": \"%1\", \"corrupt\": \"%2\", \"answer\": \"%3\", \"wrong\": \"%4\"%5, "
                                   "\"kind\": \"t\"}\n")
                        .arg(p.clean, p.corrupt, p.answer, p.wrong,
                             p.position >= 0 ? QStringLiteral(", \"position\": %1").arg(p.position) : QString());
    }
    if (!csv) text += QStringLiteral("{\"clean\": \"oops\"\n");
    QFile f(path);
    if (f.open(QIODevice::WriteOnly)) f.write(text.toUtf8());
    return path;
}

} // namespace gwb::app::test::patching_cli
