#pragma once
// Small drawing helpers shared by the figure painters (ticks, number text, label fitting).

#include "gwb/views/figure_options.h"

#include <QFont>
#include <QFontMetricsF>
#include <QPainter>
#include <QString>
#include <functional>
#include <vector>

namespace gwb::views::detail {

/// 1-2-5 ticks covering [lo, hi] with at most about maxCount ticks inside the range.
std::vector<double> niceTicks(double lo, double hi, int maxCount);
/// Compact number text: 3 significant digits, scientific for tiny or huge values; NaN (undefined) is "—".
QString formatValue(double v);
/// Elides long token text for axis labels and makes whitespace visible. The default keeps whole
/// every piece of up to 16 characters (a word-boundary marker and a 15-letter word), so the
/// vocabularies' ordinary words are never cut in a figure; the data exports keep every piece whole.
QString labelText(const QString& text, int maxChars = 16);
/// The font scaled by factor (point or pixel sized, as the font is).
QFont scaledFont(const QFont& font, double factor);
/// Draws text rotated by -90 degrees with its baseline box's right end at `anchor` (for axis labels).
void drawRotatedText(QPainter& p, const QPointF& anchor, const QString& text, Qt::Alignment align);
/// Draws a panel title (title font, wrapped onto as many lines as the width needs, never elided)
/// at the top of rect and returns the rest of rect below it; an empty title leaves rect as it is.
/// Height paintPanelTitle takes for a title at this width (0 for an empty title).
double panelTitleHeight(const QString& title, double width, const FigureStyle& style);
QRectF paintPanelTitle(QPainter& p, const QRectF& rect, const QString& title, const FigureStyle& style);
/// Horizontal grid lines, tick marks and labels of a value axis on the left of plot: tick t at
/// height y(t), labelled label(t); ticks outside the plot are skipped. Uses the small font.
void paintYTicks(QPainter& p, const QRectF& plot, const std::vector<double>& ticks,
                 const std::function<double(double)>& y, const std::function<QString(double)>& label, double tick,
                 const FigureStyle& style);
/// The axis titles in the body font: yTitle rotated at the left edge of panel, xTitle centred below
/// the x labels (xLabelHeight tall, tick * 2 below the plot). Empty titles are not drawn.
void paintAxisTitles(QPainter& p, const QRectF& panel, const QRectF& plot, const QString& yTitle, const QString& xTitle,
                     double tick, double xLabelHeight, const FigureStyle& style);
/// The plot's left and bottom axis lines.
void paintAxisLines(QPainter& p, const QRectF& plot, const FigureStyle& style);
/// Text wrapped to width, returns the height used (drawing when `draw`).
double drawWrappedText(QPainter& p, const QRectF& rect, const QString& text, bool draw);

} // namespace gwb::views::detail
