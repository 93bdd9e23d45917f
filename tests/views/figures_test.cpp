// The figure library alone (gwb_figures: Qt Gui, no widget; this executable links nothing else
// of the views): every view's figure made from data, a selection and settings, as `gwb figure` and
// gwb.figure make it, drawn to SVG, PNG and PDF with its caption and numbers.

#include "svg_text.h"
#include "synthetic_data.h"

#include "gwb/views/figure_export.h"
#include "gwb/views/gate_figure.h"
#include "gwb/views/lens_figure.h"

#include <QCoreApplication>
#include <QJsonObject>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

using namespace gwb::views;

namespace {

std::unique_ptr<Figure> filledFigure(const QString& id, const WorkbenchData& data) {
    std::unique_ptr<Figure> f = createFigure(id);
    if (!f) return f;
    Selection selection; // clamped as the window clamps
    selection.setExtents(data);
    selection.setState({5, 1, 1, 0});
    f->setData(data);
    f->setSelection(selection.state());
    synthetic::feedComputed(*f, data, selection.token());
    return f;
}

} // namespace

TEST(Figures, TheProcessHasNoWidgets) {
    synthetic::ensureApp();
    EXPECT_FALSE(QCoreApplication::instance()->inherits("QApplication")); // a QGuiApplication is enough
}

TEST(Figures, EveryViewsFigureDrawsWithoutAWindow) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    ASSERT_EQ(figureIds().size(), 14);
    for (const QString& id : figureIds()) {
        SCOPED_TRACE(id.toStdString());
        const std::unique_ptr<Figure> f = filledFigure(id, data);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->id(), id);
        EXPECT_FALSE(f->title().isEmpty());
        ASSERT_TRUE(f->hasContent()) << f->missingDataMessage().toStdString();
        EXPECT_FALSE(f->caption().isEmpty());
        EXPECT_FALSE(f->dataTables().empty());
        QTemporaryDir dir;
        FigureOptions o = FigureOptions::oneColumn();
        o.dpi = 60;
        QString error;
        const QStringList words = gwb::test::figureTexts(*f, o, dir.filePath("f.svg"), &error);
        ASSERT_TRUE(error.isEmpty()) << error.toStdString();
        // The caption is drawn (wrapped over lines): its first word is among the figure's texts.
        const QString first = f->caption().section(QLatin1Char(' '), 0, 0);
        EXPECT_TRUE(words.join(QLatin1Char(' ')).contains(first)) << first.toStdString();
        EXPECT_TRUE(gwb::test::cutTexts(words).isEmpty()) << gwb::test::cutTexts(words).join(" | ").toStdString();
        const ExportResult png = exportFigure(*f, o, dir.filePath("f.png"));
        ASSERT_TRUE(png.ok) << png.message.toStdString();
        EXPECT_EQ(QImage(dir.filePath("f.png")).width(), 210); // 3.5 in at 60 dpi
        const ExportResult pdf = exportFigure(*f, o, dir.filePath("f.pdf"));
        ASSERT_TRUE(pdf.ok) << pdf.message.toStdString();
        QFile file(dir.filePath("f.pdf"));
        ASSERT_TRUE(file.open(QIODevice::ReadOnly));
        EXPECT_TRUE(file.read(5) == "%PDF-");
        const ExportResult numbers = exportData(*f, dir.filePath("f"));
        ASSERT_TRUE(numbers.ok) << numbers.message.toStdString();
        EXPECT_TRUE(QFile::exists(dir.filePath("f.json")));
    }
}

TEST(Figures, WithoutDataTheFigureSaysWhatIsMissing) {
    synthetic::ensureApp();
    for (const QString& id : figureIds()) {
        SCOPED_TRACE(id.toStdString());
        const std::unique_ptr<Figure> f = createFigure(id);
        ASSERT_TRUE(f);
        EXPECT_FALSE(f->hasContent());
        EXPECT_FALSE(f->missingDataMessage().isEmpty());
        EXPECT_TRUE(f->dataTables().empty());
        QTemporaryDir dir;
        const ExportResult r = exportFigure(*f, FigureOptions::oneColumn(), dir.filePath("f.svg"));
        ASSERT_TRUE(r.ok) << r.message.toStdString(); // the message is drawn instead of the figure
        const QStringList words = gwb::test::svgTexts([&] {
            QFile file(dir.filePath("f.svg"));
            return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
        }());
        EXPECT_TRUE(words.join(QLatin1Char(' ')).contains(f->missingDataMessage().section(QLatin1Char(' '), 0, 1)))
            << words.join(" | ").toStdString();
    }
}

TEST(Figures, SettingsRoundTripAndChangeThePicture) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    for (const QString& id : figureIds()) {
        SCOPED_TRACE(id.toStdString());
        const std::unique_ptr<Figure> f = filledFigure(id, data);
        const QJsonObject saved = f->settings();
        EXPECT_EQ(saved.value(QStringLiteral("colormap")).toString(), QStringLiteral("viridis"));
        const std::unique_ptr<Figure> g = filledFigure(id, data);
        g->setSettings(saved);
        EXPECT_EQ(g->settings(), saved);
    }
    // One setting, one picture: the gate figure's quantity changes its numbers and caption.
    const std::unique_ptr<Figure> f = filledFigure(QStringLiteral("gate"), data);
    const QString mean = f->caption();
    f->setSettings(QJsonObject{{QStringLiteral("quantity"), QStringLiteral("above_half")}});
    EXPECT_EQ(static_cast<GateFigure&>(*f).quantity(), GateFigure::Quantity::AboveHalf);
    EXPECT_NE(f->caption(), mean);
    EXPECT_EQ(f->dataTables().front().name, QStringLiteral("gate_above_half"));
}

TEST(Figures, GatesFollowTheDataRangeByDefaultAndCanUseZeroToOne) {
    // One prompt's mean gates span a narrow part of (0, 1): on a fixed 0-1 scale every cell had
    // nearly the same colour. The default is the data's range, said in the caption; "unit" keeps
    // the fixed scale for comparing prompts, and the two draw different pictures.
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const std::unique_ptr<Figure> f = filledFigure(QStringLiteral("gate"), data);
    auto& gate = static_cast<GateFigure&>(*f);
    EXPECT_EQ(gate.scale(), GateFigure::Scale::Data);
    EXPECT_TRUE(std::isnan(gate.panel().fixedLow));
    EXPECT_TRUE(f->caption().contains(QStringLiteral("Colour scale: the data's range"))) << f->caption().toStdString();
    FigureOptions o = FigureOptions::oneColumn();
    o.dpi = 72;
    const QImage byData = renderFigureImage(*f, o);
    f->setSettings(QJsonObject{{QStringLiteral("scale"), QStringLiteral("unit")}});
    EXPECT_EQ(gate.scale(), GateFigure::Scale::Unit);
    EXPECT_EQ(gate.panel().fixedLow, 0.0);
    EXPECT_EQ(gate.panel().fixedHigh, 1.0);
    EXPECT_TRUE(f->caption().contains(QStringLiteral("Colour scale: fixed 0 to 1."))) << f->caption().toStdString();
    EXPECT_NE(renderFigureImage(*f, o), byData);
    EXPECT_EQ(f->settings().value(QStringLiteral("scale")).toString(), QStringLiteral("unit"));
    EXPECT_THROW(GateFigure::scaleFromName(QStringLiteral("log")), std::invalid_argument);
}

TEST(Figures, AZoomWindowDrawsThatPartOfTheMatrix) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const std::unique_ptr<Figure> f = filledFigure(QStringLiteral("gate"), data);
    FigureOptions o = FigureOptions::oneColumn();
    o.dpi = 72;
    o.caption = false;
    const QImage whole = renderFigureImage(*f, o);
    f->setPanelWindow(QStringLiteral("matrix"), QRectF(0, 0, 3, 1)); // layer 0, tokens 0..2
    const QImage zoomed = renderFigureImage(*f, o);
    EXPECT_NE(whole, zoomed);
    f->setPanelWindow(QStringLiteral("matrix"), QRectF()); // whole again
    EXPECT_EQ(renderFigureImage(*f, o), whole);
}

TEST(Figures, UnknownIdsAreRefusedByName) {
    synthetic::ensureApp();
    EXPECT_EQ(createFigure(QStringLiteral("nope")), nullptr);
    QTemporaryDir dir;
    const ExportResult r = exportViewFigure(QStringLiteral("nope"), synthetic::makeWorkbenchData(), {}, {},
                                            FigureOptions::oneColumn(), dir.filePath("f.svg"));
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(r.message.contains(QStringLiteral("unknown view 'nope'"))) << r.message.toStdString();
    EXPECT_TRUE(r.message.contains(QStringLiteral("gate, plucker"))) << r.message.toStdString();
    EXPECT_FALSE(QFile::exists(dir.filePath("f.svg")));
}

TEST(Figures, TheLensSaysWhyTheLastTokenHasNoRank) {
    synthetic::ensureApp();
    const WorkbenchData data = synthetic::makeWorkbenchData();
    const std::unique_ptr<Figure> f = createFigure(QStringLiteral("lens"));
    f->setData(data);
    const int last = static_cast<int>(data.tokenCount()) - 1;
    f->setSelection({last - 1, 0, 0, 0});
    auto& lens = static_cast<LensFigure&>(*f);
    EXPECT_TRUE(lens.rankChart().hasData());
    EXPECT_TRUE(lens.rankPlaceholder().isEmpty());
    f->setSelection({last, 0, 0, 0});
    EXPECT_FALSE(lens.rankChart().hasData());
    EXPECT_TRUE(lens.rankPlaceholder().contains(QStringLiteral("no next token")))
        << lens.rankPlaceholder().toStdString();
    QTemporaryDir dir;
    const QStringList words = gwb::test::figureTexts(*f, FigureOptions::twoColumn(), dir.filePath("lens.svg"));
    EXPECT_TRUE(words.join(QLatin1Char(' ')).contains(QStringLiteral("no next token")))
        << words.join(" | ").toStdString();
}

TEST(Figures, APdfIsTheSameFileEachTimeWithSourceDateEpoch) {
    synthetic::ensureApp();
    const std::unique_ptr<Figure> f = filledFigure(QStringLiteral("gate"), synthetic::makeWorkbenchData());
    QTemporaryDir dir;
    auto bytes = [&](const QString& name) {
        EXPECT_TRUE(exportFigure(*f, FigureOptions::oneColumn(), dir.filePath(name)).ok);
        QFile file(dir.filePath(name));
        return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    };
    qputenv("SOURCE_DATE_EPOCH", "1764460800"); // 2025-11-30 00:00:00 UTC
    const QByteArray a = bytes(QStringLiteral("a.pdf"));
    const QByteArray b = bytes(QStringLiteral("b.pdf"));
    qunsetenv("SOURCE_DATE_EPOCH");
    EXPECT_TRUE(a.contains("/CreationDate (D:20251130000000Z)"));
    EXPECT_TRUE(a == b);
    EXPECT_FALSE(bytes(QStringLiteral("c.pdf")).contains("D:20251130000000Z")); // without it: the time of writing
}
