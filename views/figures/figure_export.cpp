#include "gwb/views/figure_export.h"

#include "gwb/views/corpus_summary.h"
#include "gwb/views/selection.h"

#include "gwb/engine/analysis.h"
#include "gwb/engine/npy.h"

#include <QBuffer>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <cmath>

namespace gwb::views {

QSizeF figureSizePoints(const Figure& figure, const FigureOptions& options) {
    const double w = options.widthInches;
    const double h = options.resolvedHeight(figure.aspect(w));
    return {w * 72.0, h * 72.0};
}

QImage renderFigureImage(const Figure& figure, const FigureOptions& options) {
    const QSizeF pt = figureSizePoints(figure, options);
    const int dpi = std::max(10, options.dpi);
    const QSize px(static_cast<int>(std::lround(pt.width() / 72.0 * dpi)),
                   static_cast<int>(std::lround(pt.height() / 72.0 * dpi)));
    QImage img(px, QImage::Format_ARGB32);
    img.fill(Qt::white);
    const int dpm = static_cast<int>(std::lround(dpi / 0.0254));
    img.setDotsPerMeterX(dpm);
    img.setDotsPerMeterY(dpm);
    QPainter p(&img);
    p.scale(dpi / 72.0, dpi / 72.0);
    figure.render(p, QRectF(QPointF(0, 0), pt), options);
    p.end();
    return img;
}

ExportResult writeFileAtomically(const QString& path, const QByteArray& bytes) {
    ExportResult r;
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly)) {
        r.message = QStringLiteral("cannot write %1: %2").arg(QDir::toNativeSeparators(path), f.errorString());
        return r;
    }
    if (f.write(bytes) != bytes.size() || !f.commit()) {
        r.message = QStringLiteral("cannot write %1: %2").arg(QDir::toNativeSeparators(path), f.errorString());
        f.cancelWriting();
        return r;
    }
    r.ok = true;
    r.files << path;
    r.message = QStringLiteral("wrote %1").arg(QDir::toNativeSeparators(path));
    return r;
}

namespace {

/// A PDF's only varying bytes are its /CreationDate. With SOURCE_DATE_EPOCH set (seconds since
/// 1970, the reproducible-builds convention) it becomes that time, written in the same number of
/// bytes (the cross-reference offsets stay right), so a script that rebuilds a paper's figures gets
/// the same files. Without it, or with a date in another form, the bytes are unchanged.
QByteArray pdfWithSourceDate(QByteArray pdf) {
    bool ok = false;
    const qint64 epoch = qEnvironmentVariable("SOURCE_DATE_EPOCH").toLongLong(&ok);
    if (!ok || epoch < 0) return pdf;
    static const QByteArray key = "/CreationDate (D:";
    const qsizetype at = pdf.indexOf(key);
    if (at < 0) return pdf;
    const qsizetype from = at + key.size(), to = pdf.indexOf(')', from);
    const QByteArray date =
        QDateTime::fromSecsSinceEpoch(epoch, Qt::UTC).toString(QStringLiteral("yyyyMMddHHmmss'Z'")).toLatin1();
    if (to < 0 || to - from != date.size()) return pdf; // another form: left as Qt wrote it
    pdf.replace(from, date.size(), date);
    return pdf;
}

} // namespace

ExportResult exportFigure(const Figure& figure, const FigureOptions& options, const QString& path) {
    ExportResult fail;
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (options.widthInches <= 0 || options.widthInches > 100 || options.dpi <= 0 || options.dpi > 2400) {
        fail.message =
            QStringLiteral("invalid figure options: width %1 in, dpi %2 (expected 0 < width <= 100, 0 < dpi <= 2400)")
                .arg(options.widthInches)
                .arg(options.dpi);
        return fail;
    }
    const QSizeF pt = figureSizePoints(figure, options);
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (suffix == QLatin1String("png")) {
        const QImage img = renderFigureImage(figure, options);
        if (!img.save(&buffer, "PNG")) {
            fail.message = QStringLiteral("PNG encoding failed for %1").arg(path);
            return fail;
        }
    } else if (suffix == QLatin1String("svg")) {
        QSvgGenerator gen;
        gen.setOutputDevice(&buffer);
        gen.setResolution(72); // 1 user unit = 1 pt
        gen.setSize(QSize(static_cast<int>(std::ceil(pt.width())), static_cast<int>(std::ceil(pt.height()))));
        gen.setViewBox(QRectF(QPointF(0, 0), pt));
        gen.setTitle(figure.title().toHtmlEscaped()); // QSvgGenerator writes these verbatim into XML
        gen.setDescription(figure.caption().toHtmlEscaped());
        QPainter p(&gen);
        figure.render(p, QRectF(QPointF(0, 0), pt), options);
        p.end();
    } else if (suffix == QLatin1String("pdf")) {
        QPdfWriter pdf(&buffer);
        pdf.setResolution(72 * 10); // fine device grid; painter is scaled to points below
        pdf.setPageSize(QPageSize(pt, QPageSize::Point, QString(), QPageSize::ExactMatch));
        pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
        pdf.setTitle(figure.title());
        pdf.setCreator(QStringLiteral("Grassmann Workbench"));
        QPainter p(&pdf);
        p.scale(10, 10);
        figure.render(p, QRectF(QPointF(0, 0), pt), options);
        p.end();
    } else {
        fail.message =
            QStringLiteral("unsupported figure format '%1' in %2 (use .png, .svg or .pdf)").arg(suffix, path);
        return fail;
    }
    buffer.close();
    if (suffix == QLatin1String("pdf")) bytes = pdfWithSourceDate(bytes);
    return writeFileAtomically(path, bytes);
}

namespace {

QString csvField(const QString& s) {
    if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) || s.contains(QLatin1Char('\n')) ||
        s.contains(QLatin1Char('\r')) || s.startsWith(QLatin1Char(' ')) || s.endsWith(QLatin1Char(' '))) {
        QString q = s;
        q.replace(QLatin1Char('"'), QStringLiteral("\"\""));
        return QLatin1Char('"') + q + QLatin1Char('"');
    }
    return s;
}

QString csvNumber(float v) {
    if (std::isnan(v)) return QStringLiteral("nan");
    return QString::number(static_cast<double>(v), 'g', 9);
}

/// Labels made unique by their index ("3:▁the"): column headers always (pandas renames repeated
/// headers and the positions are lost), row labels when any repeats; a label that is its own
/// index stays as it is.
QStringList indexedLabels(const QStringList& labels, int64_t n, bool always) {
    QStringList out;
    QSet<QString> seen;
    bool repeats = false;
    for (int64_t j = 0; j < n; ++j) {
        const QString l = j < labels.size() ? labels[static_cast<int>(j)] : QString::number(j);
        repeats = repeats || seen.contains(l);
        seen.insert(l);
        out << l;
    }
    if (!always && !repeats) return out;
    for (int64_t j = 0; j < n; ++j)
        if (out[static_cast<int>(j)] != QString::number(j))
            out[static_cast<int>(j)] = QStringLiteral("%1:%2").arg(j).arg(out[static_cast<int>(j)]);
    return out;
}

QByteArray encodeCsv(const DataTable& t) {
    QString out;
    const auto& a = t.values;
    if (a.rank() == 1) {
        out += csvField(t.rowAxis.isEmpty() ? QStringLiteral("index") : t.rowAxis) + QStringLiteral(",label,") +
               csvField(t.name) + QLatin1Char('\n');
        for (int64_t i = 0; i < a.dim(0); ++i)
            out += QString::number(i) + QLatin1Char(',') +
                   csvField(i < t.rowLabels.size() ? t.rowLabels[static_cast<int>(i)] : QString()) + QLatin1Char(',') +
                   csvNumber(a.data[static_cast<size_t>(i)]) + QLatin1Char('\n');
    } else {
        const int64_t R = a.dim(0);
        const int64_t C = a.rank() >= 2 ? a.count(a.shape) / std::max<int64_t>(1, R) : 0;
        out += csvField(QStringLiteral("%1 \\ %2").arg(t.rowAxis, t.colAxis));
        const QStringList cols = indexedLabels(t.colLabels, C, true), rows = indexedLabels(t.rowLabels, R, false);
        for (int64_t j = 0; j < C; ++j)
            out += QLatin1Char(',') + csvField(cols[static_cast<int>(j)]);
        out += QLatin1Char('\n');
        for (int64_t i = 0; i < R; ++i) {
            out += csvField(rows[static_cast<int>(i)]);
            for (int64_t j = 0; j < C; ++j)
                out += QLatin1Char(',') + csvNumber(a.data[static_cast<size_t>(i * C + j)]);
            out += QLatin1Char('\n');
        }
    }
    return out.toUtf8();
}

QJsonObject traceInfo(const gwb::engine::Trace& t) {
    QJsonObject o;
    o.insert(QStringLiteral("name"), QString::fromStdString(t.modelName));
    o.insert(QStringLiteral("path"), QString::fromStdString(t.modelPath));
    o.insert(QStringLiteral("kind"), t.isGrassmann() ? QStringLiteral("grassmann") : QStringLiteral("transformer"));
    o.insert(QStringLiteral("layers"), static_cast<qint64>(t.layers.size()));
    o.insert(QStringLiteral("tokens"), static_cast<qint64>(t.length()));
    o.insert(QStringLiteral("device"), QString::fromStdString(t.device));
    return o;
}

// What a statistics file covers (the Corpus view's header), for the data export's JSON.
QJsonObject corpusInfo(const gwb::engine::CorpusStats& s, const QString& path) {
    QJsonObject o;
    o.insert(QStringLiteral("file"), path);
    o.insert(QStringLiteral("windows_covered"), static_cast<qint64>(s.windows.size()));
    o.insert(QStringLiteral("windows_planned"), static_cast<qint64>(s.windowsPlanned));
    o.insert(QStringLiteral("windows_total"), static_cast<qint64>(s.windowsTotal));
    o.insert(QStringLiteral("complete"), s.complete);
    o.insert(QStringLiteral("window"), static_cast<qint64>(s.window));
    o.insert(QStringLiteral("stride"), static_cast<qint64>(s.stride));
    o.insert(QStringLiteral("shard"), QJsonArray{s.shardIndex, s.shardCount});
    o.insert(QStringLiteral("tokens_per_model"), static_cast<qint64>(corpusTokens(s)));
    QJsonArray files, skipped;
    for (const auto& f : s.files)
        files.append(QString::fromStdString(f));
    for (const auto& k : s.skipped)
        skipped.append(QJsonObject{{QStringLiteral("file"), QString::fromStdString(k.file)},
                                   {QStringLiteral("reason"), QString::fromStdString(k.reason)}});
    o.insert(QStringLiteral("files"), files);
    o.insert(QStringLiteral("skipped"), skipped);
    QJsonObject models;
    for (const auto& [role, name] : s.models)
        models.insert(QString::fromStdString(role), QString::fromStdString(name));
    o.insert(QStringLiteral("models"), models);
    o.insert(QStringLiteral("interval"), QStringLiteral("95% normal interval of the mean: mean +- 1.96 sd / sqrt(n)"));
    o.insert(QStringLiteral("quantiles"),
             QStringLiteral("from the fixed-edge histogram, linear inside a bin (geometric for log-spaced edges)"));
    return o;
}

QJsonArray toJson(const QStringList& l) {
    return QJsonArray::fromStringList(l);
}

} // namespace

ExportResult exportData(const Figure& figure, const QString& basePath) {
    ExportResult result;
    const std::vector<DataTable> tables = figure.dataTables();
    if (tables.empty()) {
        result.message = QStringLiteral("view '%1' has no data to export: %2").arg(figure.id(), figure.caption());
        return result;
    }
    const WorkbenchData& d = figure.data();
    QJsonObject meta;
    meta.insert(QStringLiteral("view"), figure.id());
    meta.insert(QStringLiteral("title"), figure.title());
    meta.insert(QStringLiteral("caption"), figure.caption());
    QJsonObject models;
    if (d.grassmann) models.insert(QStringLiteral("grassmann"), traceInfo(*d.grassmann));
    if (d.baseline) models.insert(QStringLiteral("baseline"), traceInfo(*d.baseline));
    meta.insert(QStringLiteral("model"), models);
    meta.insert(QStringLiteral("prompt"), QString::fromStdString(d.prompt()));
    // Continue: tokens from here on were generated, not typed (-1: all typed).
    meta.insert(QStringLiteral("first_generated_token"), static_cast<qint64>(d.firstGenerated()));
    if (d.corpus) meta.insert(QStringLiteral("corpus"), corpusInfo(*d.corpus, QString::fromStdString(d.corpusPath)));
    QJsonObject sel;
    if (figure.hasSelection()) {
        const SelectionState& s = figure.selection();
        sel.insert(QStringLiteral("token"), s.token);
        if (const auto t = d.primary(); t && s.token < t->length())
            sel.insert(QStringLiteral("token_text"),
                       QString::fromStdString(t->tokens[static_cast<size_t>(s.token)].text));
        sel.insert(QStringLiteral("layer"), s.layer);
        sel.insert(QStringLiteral("head"), s.head);
        sel.insert(QStringLiteral("offset_index"), s.offsetIndex);
        if (d.grassmann && s.layer < static_cast<int>(d.grassmann->layers.size())) {
            const auto& gl = d.grassmann->layers[static_cast<size_t>(s.layer)].grassmann;
            if (gl && s.offsetIndex < static_cast<int>(gl->offsets.size()))
                sel.insert(QStringLiteral("offset"), gl->offsets[static_cast<size_t>(s.offsetIndex)]);
        }
    }
    meta.insert(QStringLiteral("selection"), sel);
    meta.insert(QStringLiteral("settings"), figure.settings());

    const QFileInfo base(basePath);
    QStringList written;
    QJsonArray arrays;
    QJsonObject defs;
    const auto& engineDefs = gwb::engine::definitions();
    auto rollback = [&written](ExportResult r) {
        for (const QString& f : written)
            QFile::remove(f); // all or none
        r.files.clear();
        return r;
    };
    for (const DataTable& t : tables) {
        const QString stem = base.filePath() + QLatin1Char('_') + t.name;
        ExportResult r = writeFileAtomically(stem + QStringLiteral(".csv"), encodeCsv(t));
        if (!r.ok) return rollback(r);
        written << r.files;
        // The engine's NPY encoder (the one trace files use); written here so that failures roll back with the rest.
        QByteArray npy;
        try {
            const std::vector<uint8_t> bytes = gwb::engine::encodeNpy(t.values);
            npy = QByteArray(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
        } catch (const std::exception& e) {
            r.ok = false;
            r.message = QStringLiteral("cannot encode %1.npy: %2")
                            .arg(QDir::toNativeSeparators(stem), QString::fromStdString(e.what()));
            return rollback(r);
        }
        r = writeFileAtomically(stem + QStringLiteral(".npy"), npy);
        if (!r.ok) return rollback(r);
        written << r.files;
        QJsonObject a;
        a.insert(QStringLiteral("name"), t.name);
        a.insert(QStringLiteral("quantity"), t.quantity);
        a.insert(QStringLiteral("units"), t.units);
        QJsonArray shape;
        for (int64_t s : t.values.shape)
            shape.append(static_cast<qint64>(s));
        a.insert(QStringLiteral("shape"), shape);
        a.insert(QStringLiteral("row_axis"), t.rowAxis);
        a.insert(QStringLiteral("col_axis"), t.colAxis);
        a.insert(QStringLiteral("row_labels"), toJson(t.rowLabels));
        a.insert(QStringLiteral("col_labels"), toJson(t.colLabels));
        a.insert(QStringLiteral("csv"), QFileInfo(stem + QStringLiteral(".csv")).fileName());
        a.insert(QStringLiteral("npy"), QFileInfo(stem + QStringLiteral(".npy")).fileName());
        a.insert(QStringLiteral("definition_key"), t.definitionKey);
        arrays.append(a);
        if (!t.definitionKey.isEmpty()) {
            const auto it = engineDefs.find(t.definitionKey.toStdString());
            if (it != engineDefs.end()) defs.insert(t.definitionKey, QString::fromStdString(it->second));
        }
    }
    meta.insert(QStringLiteral("arrays"), arrays);
    QJsonObject allDefs;
    for (const auto& [k, v] : engineDefs)
        allDefs.insert(QString::fromStdString(k), QString::fromStdString(v));
    meta.insert(QStringLiteral("definitions_used"), defs);
    meta.insert(QStringLiteral("definitions"), allDefs);
    ExportResult r = writeFileAtomically(base.filePath() + QStringLiteral(".json"),
                                         QJsonDocument(meta).toJson(QJsonDocument::Indented));
    if (!r.ok) return rollback(r);
    written << r.files;
    result.ok = true;
    result.files = written;
    result.message = QStringLiteral("wrote %1 files").arg(written.size());
    return result;
}

ExportResult exportViewFigure(const QString& viewId, const WorkbenchData& data, const SelectionState& selection,
                              const QJsonObject& settings, const FigureOptions& options, const QString& figurePath,
                              const QString& dataBasePath) {
    std::unique_ptr<Figure> figure = createFigure(viewId);
    if (!figure) {
        ExportResult r;
        r.message = QStringLiteral("unknown view '%1' (known: %2)").arg(viewId, figureIds().join(QStringLiteral(", ")));
        return r;
    }
    Selection sel; // clamps the selection to the data as the window does
    sel.setExtents(data);
    sel.setState(selection);
    figure->setData(data);
    figure->setSelection(sel.state());
    figure->setSettings(settings);
    ExportResult r = exportFigure(*figure, options, figurePath);
    if (!r.ok || dataBasePath.isEmpty()) return r;
    ExportResult d = exportData(*figure, dataBasePath);
    if (!d.ok) {
        QFile::remove(figurePath); // all or none
        d.files.clear();
        return d;
    }
    r.files << d.files;
    r.message = QStringLiteral("wrote %1 files").arg(r.files.size());
    return r;
}

} // namespace gwb::views
