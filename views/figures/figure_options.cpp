#include "gwb/views/figure_options.h"

#include <QPaintDevice>
#include <algorithm>

namespace gwb::views {

double FigureOptions::resolvedHeight(double viewAspect) const {
    if (heightInches > 0) return heightInches;
    const double a = aspect > 0 ? aspect : (viewAspect > 0 ? viewAspect : 0.75);
    return widthInches * a;
}

namespace {
// A font whose size is `points` logical units on a painter scaled to 1 unit = 1 pt.
QFont scaledFont(const QString& family, double points, int deviceDpi, bool bold) {
    QFont f(family);
    f.setPointSizeF(std::max(1.0, points) * 72.0 / std::max(1, deviceDpi));
    f.setBold(bold);
    f.setStyleStrategy(QFont::PreferAntialias);
    return f;
}
} // namespace

FigureStyle FigureStyle::forFigure(const QPainter& painter, const FigureOptions& options) {
    const int dpi = painter.device() ? painter.device()->logicalDpiY() : 72;
    FigureStyle s;
    s.body = scaledFont(options.fontFamily, options.fontPoints, dpi, false);
    s.small = scaledFont(options.fontFamily, options.fontPoints - 1, dpi, false);
    s.title = scaledFont(options.fontFamily, options.fontPoints + 1, dpi, true);
    s.hairline = 0.5;
    s.colorbar = options.colorbar;
    s.selection = options.selection;
    s.device = painter.device();
    return s;
}

FigureStyle FigureStyle::forScreen(const QFont& widgetFont) {
    FigureStyle s;
    s.body = widgetFont;
    s.small = widgetFont;
    s.small.setPointSizeF(std::max(6.0, widgetFont.pointSizeF() - 1));
    s.title = widgetFont;
    s.title.setBold(true);
    s.hairline = 1;
    s.colorbar = true;
    s.screen = true;
    return s;
}

} // namespace gwb::views
