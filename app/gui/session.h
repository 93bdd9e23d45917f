#pragma once
// A workbench session: models, prompt, selection and view settings, saved as JSON so that a
// study can be reopened exactly. Format (unknown keys ignored, missing keys take defaults):
// {
//   "format": "gwb-session", "version": 1,
//   "grassmann_model": "/abs/path.gwb" | "", "baseline_model": "/abs/path.gwb" | "",
//   "prompt": "...", "device": "auto", "threads": 0,
//   "selection": {"token": 0, "layer": 0, "head": 0, "offset_index": 0},
//   "token_scalar": "surprisal", "current_view": "gate",
//   "views": {"gate": {...view settings...}, ...}
// }

#include <QJsonObject>
#include <QMap>
#include <QString>

namespace gwb::app {

struct Session {
    QString grassmannModel; ///< absolute path ("" = none)
    QString baselineModel;  ///< absolute path ("" = none)
    QString prompt;
    QString device = QStringLiteral("auto");
    int threads = 0; ///< 0 = all cores
    int token = 0;
    int layer = 0;
    int head = 0;
    int offsetIndex = 0;
    QString tokenScalar = QStringLiteral("surprisal"); ///< what colours the token strip
    QString currentView;                               ///< view id shown in front
    QMap<QString, QJsonObject> viewSettings;           ///< by view id

    QJsonObject toJson() const;
    /// Throws std::runtime_error naming the problem for a document that is not a session.
    static Session fromJson(const QJsonObject& json);

    /// Writes atomically (QSaveFile). Returns "" on success, else a message naming the path.
    QString save(const QString& path) const;
    /// Reads a session file; throws std::runtime_error naming the path and the problem.
    static Session load(const QString& path);
    /// The same from a session file's bytes; `what` (usually the path) names it in messages.
    static Session parse(const QByteArray& bytes, const QString& what);

    bool operator==(const Session& other) const;
};

} // namespace gwb::app
