// Figure export (PNG size for the DPI, valid SVG, PDF with the asked page size), data export
// (CSV, NPY, JSON) and clear errors without temporary files for unwritable destinations.
#include "svg_text.h"
#include "synthetic_data.h"

#include "gwb/engine/npy.h"
#include "gwb/views/figure_export.h"
#include "gwb/views/gate_view.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include <QSet>
#include <unistd.h>

using namespace gwb::views;

namespace {
struct Fixture {
    WorkbenchData data = synthetic::makeWorkbenchData();
    Selection selection;
    std::unique_ptr<View> view;
    explicit Fixture(const QString& id = QStringLiteral("gate")) {
        synthetic::ensureApp();
        selection.setExtents(data);
        selection.setToken(5);
        selection.setLayer(1);
        view = createView(id);
        view->setSelection(&selection);
        view->setData(data);
    }
};

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}
} // namespace

TEST(Export, PngHasTheSizeOfTheFigureAtTheDpi) {
    Fixture fx;
    QTemporaryDir dir;
    FigureOptions o = FigureOptions::oneColumn();
    o.dpi = 120;
    o.aspect = 0.5;
    const QString path = dir.filePath("fig.png");
    const ExportResult r = exportFigure(*fx.view, o, path);
    ASSERT_TRUE(r.ok) << r.message.toStdString();
    QImage img(path);
    ASSERT_FALSE(img.isNull());
    EXPECT_EQ(img.width(), 420);  // 3.5 in * 120 dpi
    EXPECT_EQ(img.height(), 210); // aspect 0.5
    EXPECT_NEAR(img.dotsPerMeterX() * 0.0254, 120.0, 0.5);
    // Two-column preset with explicit height.
    FigureOptions t = FigureOptions::twoColumn();
    t.dpi = 50;
    t.heightInches = 3;
    ASSERT_TRUE(exportFigure(*fx.view, t, path).ok);
    EXPECT_EQ(QImage(path).size(), QSize(350, 150));
}

TEST(Export, SvgIsValidWithThePointSize) {
    for (const QString& id : viewIds()) {
        SCOPED_TRACE(id.toStdString());
        Fixture fx(id);
        QTemporaryDir dir;
        FigureOptions o = FigureOptions::twoColumn();
        o.aspect = 0.6;
        const QString path = dir.filePath("fig.svg");
        const ExportResult r = exportFigure(*fx.view, o, path);
        ASSERT_TRUE(r.ok) << r.message.toStdString();
        QSvgRenderer svg(path);
        ASSERT_TRUE(svg.isValid());
        EXPECT_NEAR(svg.viewBoxF().width(), 7 * 72.0, 0.01);
        EXPECT_NEAR(svg.viewBoxF().height(), 7 * 0.6 * 72.0, 0.01);
        EXPECT_TRUE(readAll(path).contains("<text") || readAll(path).contains("<path")); // vector content
    }
}

TEST(Export, PdfPageIsTheFigureSize) {
    Fixture fx(QStringLiteral("plucker"));
    QTemporaryDir dir;
    FigureOptions o = FigureOptions::oneColumn();
    o.heightInches = 2.5;
    const QString path = dir.filePath("fig.pdf");
    const ExportResult r = exportFigure(*fx.view, o, path);
    ASSERT_TRUE(r.ok) << r.message.toStdString();
    const QByteArray pdf = readAll(path);
    ASSERT_TRUE(pdf.startsWith("%PDF"));
    const QRegularExpression box(
        QStringLiteral("/MediaBox\\s*\\[\\s*([-\\d.]+)\\s+([-\\d.]+)\\s+([-\\d.]+)\\s+([-\\d.]+)\\s*\\]"));
    const auto m = box.match(QString::fromLatin1(pdf));
    ASSERT_TRUE(m.hasMatch());
    EXPECT_NEAR(m.captured(3).toDouble() - m.captured(1).toDouble(), 3.5 * 72, 0.6);
    EXPECT_NEAR(m.captured(4).toDouble() - m.captured(2).toDouble(), 2.5 * 72, 0.6);
}

TEST(Export, UnwritableDestinationGivesAClearErrorAndNoTempFile) {
    Fixture fx;
    QTemporaryDir dir;
    // A folder whose "parent" is a regular file cannot be written, for root too.
    const QString blocker = dir.filePath("not_a_folder");
    {
        QFile f(blocker);
        ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    }
    const ExportResult r = exportFigure(*fx.view, FigureOptions{}, blocker + "/fig.png");
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.message.contains("fig.png")) << r.message.toStdString();
    EXPECT_TRUE(r.files.isEmpty());
    EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files | QDir::NoDotAndDotDot), QStringList{"not_a_folder"});
    // A read-only folder: permissions for ordinary users; /proc refuses new files for root as well.
    QString ro = dir.filePath("ro");
    QDir().mkpath(ro);
    QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::ExeOwner);
    if (geteuid() == 0) ro = QStringLiteral("/proc");
    const ExportResult r2 = exportFigure(*fx.view, FigureOptions{}, ro + "/fig.pdf");
    EXPECT_FALSE(r2.ok);
    EXPECT_TRUE(r2.message.startsWith("cannot write")) << r2.message.toStdString();
    if (ro != QStringLiteral("/proc")) {
        EXPECT_TRUE(QDir(ro).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty());
    }
    EXPECT_FALSE(QFile::exists(QStringLiteral("/proc/fig.pdf")));
    const ExportResult r3 = exportData(*fx.view, blocker + "/data");
    EXPECT_FALSE(r3.ok);
    EXPECT_FALSE(r3.message.isEmpty());
    QFile::setPermissions(dir.filePath("ro"), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
}

TEST(Export, UnknownSuffixAndBadOptionsAreRejected) {
    Fixture fx;
    QTemporaryDir dir;
    const ExportResult r = exportFigure(*fx.view, FigureOptions{}, dir.filePath("fig.bmpx"));
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.message.contains("bmpx"));
    FigureOptions bad;
    bad.widthInches = -1;
    EXPECT_FALSE(exportFigure(*fx.view, bad, dir.filePath("fig.png")).ok);
    EXPECT_TRUE(QDir(dir.path()).isEmpty());
}

TEST(Export, DataFilesAreReadableCsvNpyAndJson) {
    Fixture fx;
    QTemporaryDir dir;
    const QString base = dir.filePath("gates");
    const ExportResult r = exportData(*fx.view, base);
    ASSERT_TRUE(r.ok) << r.message.toStdString();
    EXPECT_EQ(r.files.size(), 3);
    // NPY: magic, version 1.0, header with dtype and shape, then 3 x 12 little-endian float32.
    const QByteArray npy = readAll(base + "_mean_gate.npy");
    ASSERT_TRUE(npy.startsWith(QByteArray("\x93NUMPY\x01\x00", 8)));
    const int hlen = static_cast<uchar>(npy[8]) | (static_cast<uchar>(npy[9]) << 8);
    EXPECT_EQ((10 + hlen) % 64, 0);
    const QByteArray header = npy.mid(10, hlen);
    EXPECT_TRUE(header.contains("'descr': '<f4'"));
    EXPECT_TRUE(header.contains("'shape': (3, 12)"));
    ASSERT_EQ(npy.size(), 10 + hlen + 3 * 12 * 4);
    float v = 0;
    std::memcpy(&v, npy.constData() + 10 + hlen + (2 * 12 + 5) * 4, 4);
    EXPECT_FLOAT_EQ(v, fx.data.grassmannAnalysis->grassmann[2].meanGate[5]);
    // The engine's reader (numpy-compatible parser) gets the whole table back.
    const gwb::engine::NpyArray parsed = gwb::engine::readNpy((base + "_mean_gate.npy").toStdString());
    ASSERT_EQ(parsed.shape, (std::vector<int64_t>{3, 12}));
    EXPECT_EQ(parsed.values<float>(), fx.view->dataTables().front().values.data);
    // CSV: header row with tokens (each with its position, so repeated pieces stay distinct), one
    // row per layer.
    const QList<QByteArray> lines = readAll(base + "_mean_gate.csv").trimmed().split('\n');
    ASSERT_EQ(lines.size(), 4);
    EXPECT_TRUE(lines[0].startsWith("layer \\ token,0:The,1:")) << lines[0].toStdString();
    const QList<QByteArray> headers = lines[0].split(','); // " the" is tokens 4 and 8 of the prompt
    EXPECT_EQ(QSet<QByteArray>(headers.begin(), headers.end()).size(), headers.size()) << lines[0].toStdString();
    EXPECT_TRUE(lines[1].startsWith("L0,"));
    EXPECT_EQ(lines[1].split(',').size(), 13);
    // JSON side file: models, prompt, selection, definitions.
    const QJsonObject meta = QJsonDocument::fromJson(readAll(base + ".json")).object();
    EXPECT_EQ(meta.value("view").toString(), QStringLiteral("gate"));
    EXPECT_EQ(meta.value("prompt").toString().toStdString(), fx.data.grassmann->prompt);
    EXPECT_EQ(meta.value("model").toObject().value("grassmann").toObject().value("name").toString(),
              QStringLiteral("grassmann-synthetic"));
    const QJsonObject sel = meta.value("selection").toObject();
    EXPECT_EQ(sel.value("token").toInt(), 5);
    EXPECT_EQ(sel.value("layer").toInt(), 1);
    EXPECT_EQ(sel.value("offset").toInt(), 1);
    EXPECT_TRUE(meta.value("definitions").isObject());
    const QJsonArray arrays = meta.value("arrays").toArray();
    ASSERT_EQ(arrays.size(), 1);
    EXPECT_EQ(arrays[0].toObject().value("npy").toString(), QStringLiteral("gates_mean_gate.npy"));
    // No temporary files left behind.
    EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files).size(), 3);
}

TEST(Export, HeadlessOneCallFigureAndData) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    QTemporaryDir dir;
    QJsonObject settings;
    settings.insert("quantity", "planarity");
    settings.insert("colormap", "magma");
    FigureOptions o;
    o.dpi = 72;
    const ExportResult r = exportViewFigure("plucker", data, SelectionState{7, 2, 0, 1}, settings, o,
                                            dir.filePath("fig3.pdf"), dir.filePath("fig3"));
    ASSERT_TRUE(r.ok) << r.message.toStdString();
    EXPECT_TRUE(QFile::exists(dir.filePath("fig3.pdf")));
    EXPECT_TRUE(QFile::exists(dir.filePath("fig3_planarity.npy")));
    const QJsonObject meta = QJsonDocument::fromJson(readAll(dir.filePath("fig3.json"))).object();
    EXPECT_EQ(meta.value("selection").toObject().value("token").toInt(), 7);
    EXPECT_EQ(meta.value("selection").toObject().value("layer").toInt(), 2);
    EXPECT_EQ(meta.value("settings").toObject().value("colormap").toString(), QStringLiteral("magma"));
    const ExportResult bad = exportViewFigure("nope", data, {}, {}, o, dir.filePath("x.png"));
    EXPECT_FALSE(bad.ok);
    EXPECT_TRUE(bad.message.contains("gate"));
}

TEST(Export, FiguresLeaveOutTheSelectionUnlessAsked) {
    // Exported figures drew the on-screen selection (the outlined token column and layer row),
    // headless gwb figure included. Off by default now: the figure does not depend on where the
    // selection is, unless FigureOptions::selection asks for the outline.
    for (const QString& id : {QStringLiteral("gate"), QStringLiteral("lens")}) {
        Fixture f(id);
        auto render = [&](int token, bool outline) {
            FigureOptions o = FigureOptions::oneColumn();
            o.selection = outline;
            o.caption = false;
            f.selection.setToken(token);
            QImage img(700, 500, QImage::Format_ARGB32);
            img.fill(Qt::white);
            QPainter p(&img);
            f.view->renderFigure(p, QRectF(0, 0, 700, 500), o);
            return img;
        };
        EXPECT_FALSE(FigureOptions{}.selection) << id.toStdString();
        if (id == QLatin1String("gate")) { // the lens's top-K list follows the token: compare the outline only
            EXPECT_EQ(render(3, false), render(7, false)) << id.toStdString();
        }
        EXPECT_NE(render(3, true), render(3, false)) << id.toStdString();
    }
}

TEST(Export, TheLogitLensFigureHasAColourKey) {
    // The lens colours its cells by the top-1 probability: the figure names that scale.
    Fixture f(QStringLiteral("lens"));
    QTemporaryDir dir;
    for (const FigureOptions& o : {FigureOptions::oneColumn(), FigureOptions::twoColumn()}) {
        const QString path = dir.filePath(QStringLiteral("lens_%1.svg").arg(o.widthInches));
        const ExportResult r = exportFigure(*f.view, o, path);
        ASSERT_TRUE(r.ok) << r.message.toStdString();
        QFile file(path);
        ASSERT_TRUE(file.open(QIODevice::ReadOnly));
        const QStringList texts = gwb::test::svgTexts(file.readAll());
        EXPECT_TRUE(texts.contains(QStringLiteral("top-1 probability"))) << o.widthInches;
        EXPECT_TRUE(gwb::test::cutTexts(texts).isEmpty()) << o.widthInches;
    }
}

TEST(Export, TheViewsFigureIsTheFigureAlone) {
    // What the window exports is what `gwb figure` draws: the view's figure, and a figure made from
    // the same data, selection and settings without any view, give the same SVG, byte for byte.
    for (const QString& id : viewIds()) {
        SCOPED_TRACE(id.toStdString());
        Fixture fx(id);
        synthetic::feedComputed(fx.view.get(), fx.data, fx.selection.token());
        std::unique_ptr<Figure> alone = createFigure(id);
        ASSERT_TRUE(alone);
        alone->setData(fx.data);
        alone->setSelection(fx.selection.state());
        alone->setSettings(fx.view->settings());
        synthetic::feedComputed(*alone, fx.data, fx.selection.token());
        QTemporaryDir dir;
        const FigureOptions o = FigureOptions::twoColumn();
        ASSERT_TRUE(exportFigure(*fx.view, o, dir.filePath("view.svg")).ok);
        ASSERT_TRUE(exportFigure(*alone, o, dir.filePath("alone.svg")).ok);
        const QByteArray view = readAll(dir.filePath("view.svg"));
        EXPECT_FALSE(view.isEmpty());
        EXPECT_TRUE(view == readAll(dir.filePath("alone.svg")));
        EXPECT_EQ(fx.view->caption(), alone->caption());
    }
}
