#include "gui/session.h"

#include <QFile>
#include <QJsonDocument>
#include <QSaveFile>

#include <stdexcept>

namespace gwb::app {
namespace {
const QString kFormat = QStringLiteral("gwb-session");
constexpr int kVersion = 1;
constexpr qint64 kMaxSessionBytes = 64 << 20; ///< a session is small; refuse anything huge

int intField(const QJsonObject& o, const char* key, int fallback) {
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isUndefined()) return fallback;
    if (!v.isDouble()) throw std::runtime_error(std::string("field '") + key + "' must be a number");
    return v.toInt(fallback);
}

QString stringField(const QJsonObject& o, const char* key, const QString& fallback) {
    const QJsonValue v = o.value(QLatin1String(key));
    if (v.isUndefined()) return fallback;
    if (!v.isString()) throw std::runtime_error(std::string("field '") + key + "' must be a string");
    return v.toString();
}
} // namespace

QJsonObject Session::toJson() const {
    QJsonObject sel{{QStringLiteral("token"), token},
                    {QStringLiteral("layer"), layer},
                    {QStringLiteral("head"), head},
                    {QStringLiteral("offset_index"), offsetIndex}};
    QJsonObject views;
    for (auto it = viewSettings.begin(); it != viewSettings.end(); ++it)
        views.insert(it.key(), it.value());
    return QJsonObject{{QStringLiteral("format"), kFormat},
                       {QStringLiteral("version"), kVersion},
                       {QStringLiteral("grassmann_model"), grassmannModel},
                       {QStringLiteral("baseline_model"), baselineModel},
                       {QStringLiteral("prompt"), prompt},
                       {QStringLiteral("device"), device},
                       {QStringLiteral("threads"), threads},
                       {QStringLiteral("selection"), sel},
                       {QStringLiteral("token_scalar"), tokenScalar},
                       {QStringLiteral("current_view"), currentView},
                       {QStringLiteral("views"), views}};
}

Session Session::fromJson(const QJsonObject& json) {
    if (json.value(QStringLiteral("format")).toString() != kFormat)
        throw std::runtime_error("not a workbench session (no \"format\": \"gwb-session\")");
    const int version = intField(json, "version", kVersion);
    if (version > kVersion)
        throw std::runtime_error("session version " + std::to_string(version) + " is newer than this gwb reads (" +
                                 std::to_string(kVersion) + ")");
    Session s;
    s.grassmannModel = stringField(json, "grassmann_model", {});
    s.baselineModel = stringField(json, "baseline_model", {});
    s.prompt = stringField(json, "prompt", {});
    s.device = stringField(json, "device", s.device);
    s.threads = intField(json, "threads", 0);
    s.tokenScalar = stringField(json, "token_scalar", s.tokenScalar);
    s.currentView = stringField(json, "current_view", {});
    const QJsonValue sel = json.value(QStringLiteral("selection"));
    if (!sel.isUndefined()) {
        if (!sel.isObject()) throw std::runtime_error("field 'selection' must be an object");
        const QJsonObject o = sel.toObject();
        s.token = intField(o, "token", 0);
        s.layer = intField(o, "layer", 0);
        s.head = intField(o, "head", 0);
        s.offsetIndex = intField(o, "offset_index", 0);
    }
    const QJsonValue views = json.value(QStringLiteral("views"));
    if (!views.isUndefined()) {
        if (!views.isObject()) throw std::runtime_error("field 'views' must be an object");
        const QJsonObject o = views.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            if (it.value().isObject()) s.viewSettings.insert(it.key(), it.value().toObject());
    }
    return s;
}

QString Session::save(const QString& path) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return QStringLiteral("cannot write session '%1': %2").arg(path, file.errorString());
    file.write(QJsonDocument(toJson()).toJson(QJsonDocument::Indented));
    if (!file.commit()) return QStringLiteral("cannot write session '%1': %2").arg(path, file.errorString());
    return {};
}

Session Session::load(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        throw std::runtime_error("cannot open session '" + path.toStdString() +
                                 "': " + file.errorString().toStdString());
    if (file.size() > kMaxSessionBytes)
        throw std::runtime_error("'" + path.toStdString() + "' is too large to be a session file");
    return parse(file.readAll(), path);
}

Session Session::parse(const QByteArray& bytes, const QString& what) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (doc.isNull())
        throw std::runtime_error("'" + what.toStdString() + "' is not valid JSON: " +
                                 error.errorString().toStdString() + " at byte " + std::to_string(error.offset));
    if (!doc.isObject()) throw std::runtime_error("'" + what.toStdString() + "' is not a workbench session");
    try {
        return fromJson(doc.object());
    } catch (const std::exception& e) {
        throw std::runtime_error("'" + what.toStdString() + "': " + e.what());
    }
}

bool Session::operator==(const Session& o) const {
    return grassmannModel == o.grassmannModel && baselineModel == o.baselineModel && prompt == o.prompt &&
           device == o.device && threads == o.threads && token == o.token && layer == o.layer && head == o.head &&
           offsetIndex == o.offsetIndex && tokenScalar == o.tokenScalar && currentView == o.currentView &&
           viewSettings == o.viewSettings;
}

} // namespace gwb::app
