#include "gwb/views/workbench_data.h"

#include <algorithm>

namespace gwb::views {

gwb::engine::LensPtr WorkbenchData::lensOf(const TracePtr& trace) const {
    if (!trace) return nullptr;
    if (trace == grassmann && grassmannLens) return grassmannLens;
    if (trace == baseline && baselineLens) return baselineLens;
    return trace->lens;
}

bool WorkbenchData::hasLenses() const {
    return (!grassmann || lensOf(grassmann)) && (!baseline || lensOf(baseline));
}

int64_t WorkbenchData::tokenCount() const {
    const TracePtr t = primary();
    return t ? t->length() : 0;
}

int64_t WorkbenchData::layerCount() const {
    int64_t n = 0;
    if (grassmann) n = std::max<int64_t>(n, static_cast<int64_t>(grassmann->layers.size()));
    if (baseline) n = std::max<int64_t>(n, static_cast<int64_t>(baseline->layers.size()));
    return n;
}

int64_t WorkbenchData::headCount() const {
    if (!baseline) return 0;
    int64_t h = 0;
    for (const auto& l : baseline->layers)
        if (l.attention) h = std::max(h, l.attention->nHeads);
    return h;
}

int64_t WorkbenchData::offsetCount() const {
    if (!grassmann) return 0;
    int64_t o = 0;
    for (const auto& l : grassmann->layers)
        if (l.grassmann) o = std::max<int64_t>(o, static_cast<int64_t>(l.grassmann->offsets.size()));
    return o;
}

QString WorkbenchData::prompt() const {
    const TracePtr t = primary();
    return t ? QString::fromStdString(t->prompt) : QString();
}

bool WorkbenchData::isGenerated(int64_t t) const {
    const TracePtr p = primary();
    if (!p || t < 0 || t >= p->length()) return false;
    if (firstGeneratedToken >= 0) return t >= firstGeneratedToken;
    if (continuationFrom < 0) return false;
    const auto& tok = p->tokens[static_cast<size_t>(t)];
    // A piece that ends after the typed text was (at least partly) generated.
    return tok.end > continuationFrom || (tok.end < 0 && tok.begin >= continuationFrom);
}

int64_t WorkbenchData::firstGenerated() const {
    for (int64_t t = 0; t < tokenCount(); ++t)
        if (isGenerated(t)) return t;
    return -1;
}

int64_t WorkbenchData::generatedCount() const {
    // Generated text is appended, so the generated tokens are a suffix.
    const int64_t first = firstGenerated();
    return first < 0 ? 0 : tokenCount() - first;
}

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
    return piece; // other bytes (parts of a UTF-8 character) keep their <0xHH> form
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
