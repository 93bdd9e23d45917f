#include "runs/import_choice.h"

#include <algorithm>
#include <stdexcept>

namespace gwb::app {

QStringList importLayoutNames() {
    QStringList names{QStringLiteral("auto")};
    for (const std::string& n : gwb::engine::builtinLayoutNames())
        names << QString::fromStdString(n);
    return names;
}

QString noVocabularyMessage(const QString& path) {
    return QStringLiteral("%1: no vocabulary found next to the checkpoint (vocab.txt or vocab.json); "
                          "choose the vocabulary the model was trained with")
        .arg(path);
}

bool needsImportChoice(const QString& path, const QString& message) {
    if (!gwb::engine::isImportableCheckpointPath(path.toStdString())) return false;
    // Phrases of the importer's messages (engine/src/import/import_convert.cpp, import_parameters.cpp,
    // layout_file.cpp) that a different layout, vocabulary or offset schedule can fix.
    static const char* const fixable[] = {
        "no vocabulary found",              // ours, above
        "cannot tell which implementation", // layout detection failed
        "checkpoint (the keys look like",
        "keys: not a ", // a chosen layout that does not fit: "... keys: not a NAME checkpoint"
        "missing key",
        "unknown keys", // a chosen layout that does not fit
        "the vocabulary '",
        "cannot open vocabulary",
        "merges.txt", // a chosen vocabulary that does not fit
        "offset",     // a chosen offset schedule that does not parse or fit
    };
    for (const char* f : fixable)
        if (message.contains(QLatin1String(f), Qt::CaseInsensitive)) return true;
    return false;
}

gwb::engine::ImportOptions importOptionsFor(const ImportChoice& choice, const QString& device) {
    gwb::engine::ImportOptions o;
    o.layout = choice.layout.trimmed().toLower().toStdString();
    const std::vector<std::string> known = gwb::engine::builtinLayoutNames();
    if (o.layout != "auto" && std::find(known.begin(), known.end(), o.layout) == known.end())
        throw std::invalid_argument("unknown layout '" + o.layout + "' (use auto or " +
                                    importLayoutNames().mid(1).join(QStringLiteral(", ")).toStdString() + ")");
    o.vocabPath = choice.vocabPath.trimmed().toStdString();
    o.offsetSchedule = choice.offsets.trimmed().toStdString();
    o.device = device.toStdString();
    // Check the schedule's syntax now (any layer count parses it the same way for plain lists),
    // so a typo is reported before the file is read; the importer checks it against the layers.
    if (!o.offsetSchedule.empty() && o.offsetSchedule.find(';') == std::string::npos)
        gwb::engine::parseOffsetSchedule(o.offsetSchedule, 1);
    return o;
}

} // namespace gwb::app
