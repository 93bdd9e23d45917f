#include "runs/figure_request.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <stdexcept>

namespace gwb::app {

double parseLengthInches(const QString& text) {
    static const QRegularExpression re(QStringLiteral("^\\s*([0-9]*\\.?[0-9]+)\\s*(in|mm|cm|pt)?\\s*$"),
                                       QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(text);
    if (!m.hasMatch())
        throw std::invalid_argument("length '" + text.toStdString() + "' is not a number with in, mm, cm or pt");
    const double v = m.captured(1).toDouble();
    const QString unit = m.captured(2).toLower();
    double inches = v;
    if (unit == QLatin1String("mm"))
        inches = v / 25.4;
    else if (unit == QLatin1String("cm"))
        inches = v / 2.54;
    else if (unit == QLatin1String("pt"))
        inches = v / 72.0;
    if (!(inches > 0.5 && inches <= 40))
        throw std::invalid_argument("length '" + text.toStdString() + "' must be between 0.5 and 40 inches");
    return inches;
}

gwb::views::FigureOptions figureOptions(const FigureSettings& s) {
    gwb::views::FigureOptions o =
        s.widthInches >= 6 ? gwb::views::FigureOptions::twoColumn() : gwb::views::FigureOptions::oneColumn();
    o.widthInches = s.widthInches;
    o.dpi = s.dpi;
    o.colormap = s.colormap;
    if (s.fontPoints > 0) o.fontPoints = s.fontPoints;
    o.colorbar = s.colorbar;
    o.caption = s.caption;
    o.selection = s.selection;
    return o;
}

QString figureFormat(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("png") || suffix == QLatin1String("svg") || suffix == QLatin1String("pdf"))
        return suffix;
    return {};
}

QString checkWritableTarget(const QString& path) {
    const QFileInfo info(path);
    const QFileInfo dir(info.absolutePath());
    if (!dir.exists()) return QStringLiteral("folder '%1' does not exist").arg(dir.absoluteFilePath());
    if (!dir.isDir()) return QStringLiteral("'%1' is not a folder").arg(dir.absoluteFilePath());
    if (!dir.isWritable()) return QStringLiteral("folder '%1' is not writable").arg(dir.absoluteFilePath());
    return {};
}

} // namespace gwb::app
