#pragma once
// The text an SVG figure prints, for tests that check that exported figures keep every word:
// QSvgGenerator writes each drawText as one <text> element (rotated labels included).

#include "gwb/views/figure_export.h"

#include <QByteArray>
#include <QFile>
#include <QString>
#include <QStringList>
#include <QXmlStreamReader>

namespace gwb::test {

/// Exports the figure of `drawn` (a View or a Figure) as SVG to `path` and returns the figure's
/// words; empty (with the reason in `error`) when the export fails.
template <class Drawn> // a View or a Figure
QStringList figureTexts(const Drawn& drawn, const gwb::views::FigureOptions& options, const QString& path,
                        QString* error = nullptr);

/// The content of every <text> element of an SVG document, in document order.
inline QStringList svgTexts(const QByteArray& svg) {
    QStringList out;
    QXmlStreamReader xml(svg);
    while (!xml.atEnd()) {
        if (xml.readNext() == QXmlStreamReader::StartElement && xml.name() == QLatin1String("text"))
            out << xml.readElementText(QXmlStreamReader::IncludeChildElements);
    }
    return out;
}

/// Texts a reader of the figure would find cut: anything ending in an ellipsis except a token
/// piece shortened past 12 characters (a last word exactly 12 characters long, the last one the
/// ellipsis, as in "16 ▁acknowledg…"), and the heatmap's "panel too small" notice.
inline QStringList cutTexts(const QStringList& texts) {
    QStringList bad;
    for (const QString& raw : texts) {
        const QString t = raw.trimmed();
        const QString lastWord = t.section(QLatin1Char(' '), -1);
        if (t.contains(QLatin1String("panel too small")) || (t.endsWith(QChar(0x2026)) && lastWord.size() != 12))
            bad << t;
    }
    return bad;
}

template <class Drawn>
QStringList figureTexts(const Drawn& drawn, const gwb::views::FigureOptions& options, const QString& path,
                        QString* error) {
    const gwb::views::ExportResult r = exportFigure(drawn, options, path); // the View or Figure overload (ADL)
    if (!r.ok) {
        if (error) *error = r.message;
        return {};
    }
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return svgTexts(file.readAll());
}

} // namespace gwb::test
