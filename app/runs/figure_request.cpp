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

QString dataHelp() {
    return QStringLiteral("Also write the figure's numbers under a folder or a stem (no extension): --data DIR/ "
                          "writes DIR/<view>_<table>.csv and .npy for each table and DIR/<view>.json (metadata "
                          "and definitions); --data STEM writes STEM_<table>.csv, STEM_<table>.npy and STEM.json.");
}

QString dataStem(const QString& value, const QString& viewId) {
    if (value.isEmpty()) throw std::invalid_argument("--data needs a folder or a stem");
    const bool folder = value.endsWith(QLatin1Char('/')) || QFileInfo(value).isDir();
    if (folder) {
        if (!QDir().mkpath(value))
            throw std::runtime_error("cannot write data: cannot make the folder '" + value.toStdString() + "'");
        const QString stem = QDir(value).filePath(viewId);
        if (const QString e = checkWritableTarget(stem); !e.isEmpty())
            throw std::runtime_error("cannot write data '" + value.toStdString() + "': " + e.toStdString());
        return stem;
    }
    const QString suffix = QFileInfo(value).suffix().toLower();
    if (suffix == QLatin1String("csv") || suffix == QLatin1String("npy") || suffix == QLatin1String("json")) {
        QString stem = value;
        stem.chop(suffix.size() + 1);
        throw std::invalid_argument("--data takes a folder or a stem, not a file name: '" + value.toStdString() +
                                    "' would write " + stem.toStdString() + "_<table>.csv/.npy and " +
                                    stem.toStdString() + ".json, never '" + value.toStdString() + "' (give --data " +
                                    stem.toStdString() + " for those, or --data " + stem.toStdString() +
                                    "/ for a folder)");
    }
    if (const QString e = checkWritableTarget(value); !e.isEmpty())
        throw std::runtime_error("cannot write data '" + value.toStdString() + "': " + e.toStdString());
    return value;
}

} // namespace gwb::app
