#include "gwb/views/view_data.h"

#include <algorithm>

namespace gwb::views {

int bytePieceValue(const QString& piece) {
    if (piece.size() != 6 || !piece.startsWith(QLatin1String("<0x")) || !piece.endsWith(QLatin1Char('>'))) return -1;
    bool ok = false;
    const int v = piece.mid(3, 2).toInt(&ok, 16);
    return ok ? v : -1;
}

QString displayPiece(const QString& piece) {
    const int b = bytePieceValue(piece);
    if (b == 0x0A || b == 0x0D) return QStringLiteral("\u23CE"); // ⏎
    if (b == 0x09) return QStringLiteral("\u21E5");              // ⇥
    if (b == 0x20) return QStringLiteral("\u2423");              // ␣
    if (b > 0x20 && b < 0x7F) return QString(QChar(b));
    if (b >= 0) return piece; // other bytes (parts of a UTF-8 character) keep their <0xHH> form
    QString shown = piece;
    return shown.replace(QChar(0x2581), QChar(0x00B7));
}

QString pendingAnalysisParts(const WorkbenchData& data, unsigned parts) {
    if (!data.grassmann || !data.grassmannAnalysis) return {};
    QStringList names;
    for (const std::string& n : gwb::engine::analysisPartNames(parts & ~data.grassmannAnalysis->parts))
        names << QString::fromStdString(n);
    return names.join(QStringLiteral(", "));
}

QStringList tokenLabels(const gwb::engine::Trace& trace) {
    QStringList out;
    out.reserve(static_cast<int>(trace.tokens.size()));
    for (const auto& tok : trace.tokens)
        out << QString::fromStdString(tok.text);
    return out;
}

QStringList layerLabels(int64_t n) {
    QStringList out;
    for (int64_t i = 0; i < n; ++i)
        out << QStringLiteral("L%1").arg(i);
    return out;
}

} // namespace gwb::views
