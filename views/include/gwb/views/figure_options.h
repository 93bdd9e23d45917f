#pragma once
// How a view's figure is exported (workbench-spec section 4) and what an export returns.

#include <QFont>
#include <QRectF>
#include <QFontMetricsF>
#include <QPainter>
#include <QString>
#include <QStringList>

namespace gwb::views {

struct FigureOptions {
    double widthInches = 3.5; ///< 3.5 = one-column paper figure, 7 = two-column
    double heightInches = 0;  ///< 0 = widthInches * aspect
    double aspect = 0;        ///< height / width; 0 = the view's own default
    int dpi = 300;            ///< raster resolution (PNG); vector outputs keep exact sizes
    QString fontFamily = QStringLiteral("DejaVu Sans");
    double fontPoints = 8; ///< body text size; titles are +1 pt, tick labels -1 pt
    QString colormap;      ///< "" = the view's current map; else viridis|cividis|magma|RdBu
    bool colorbar = true;
    bool caption = true; ///< caption line naming the quantity and its definition
    /// Outline the on-screen selection (token column, layer row, the lens's cell). Off: a paper
    /// figure shows the data, not where the pointer was.
    bool selection = false;

    static FigureOptions oneColumn() { return FigureOptions{}; }
    static FigureOptions twoColumn() {
        FigureOptions o;
        o.widthInches = 7;
        o.fontPoints = 9;
        return o;
    }
    /// Height in inches given the view's default aspect (used when aspect == 0).
    double resolvedHeight(double viewAspect) const;
};

/// Result of an export: never thrown through Qt; `message` says what failed and where.
struct ExportResult {
    bool ok = false;
    QString message;   ///< error text, or a summary of what was written
    QStringList files; ///< files written (all or none)
};

/// Fonts and pens for drawing a figure with a painter whose logical unit is 1 point (1/72 inch);
/// font sizes are corrected for the device's DPI so that `fontPoints` is what ends on paper.
struct FigureStyle {
    QFont body;
    QFont small; ///< tick and token labels
    QFont title;
    double hairline = 0.5; ///< line width in points for axes and grid
    bool colorbar = true;
    bool selection = true;          ///< outline the selection (the screen always does; figures on request)
    bool screen = false;            ///< painting a widget (labels may be elided; the hover has them whole)
    QPaintDevice* device = nullptr; ///< metrics are taken for this device (null = screen)
    /// On screen, the part of the widget in view when it is taller than its scroll area: the row
    /// title and the colour bar are drawn within it, so that scrolling never cuts them. Empty: all.
    QRectF visible;

    /// Font metrics on the target device (text sizes depend on its DPI).
    QFontMetricsF metrics(const QFont& font) const {
        return device ? QFontMetricsF(font, device) : QFontMetricsF(font);
    }

    static FigureStyle forFigure(const QPainter& painter, const FigureOptions& options);
    /// On-screen style: the widget's font, 1 logical unit = 1 pixel.
    static FigureStyle forScreen(const QFont& widgetFont);
};

} // namespace gwb::views
