#include "plot_util.h"

#include "gwb/views/view_data.h"

#include <QTextLayout>
#include <algorithm>
#include <cmath>

namespace gwb::views::detail {

namespace {
// Word wrap; a word wider than the panel breaks anywhere rather than running out of it.
int titleFlags(const QString& title, double width, const QFontMetricsF& fm) {
    for (const QString& word : title.split(QLatin1Char(' '), Qt::SkipEmptyParts))
        if (fm.horizontalAdvance(word) > width) return Qt::AlignLeft | Qt::TextWrapAnywhere;
    return Qt::AlignLeft | Qt::TextWordWrap;
}
} // namespace

std::vector<double> niceTicks(double lo, double hi, int maxCount) {
    std::vector<double> ticks;
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || maxCount < 2) return ticks;
    const double raw = (hi - lo) / (maxCount - 1);
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * mag >= raw) {
            step = m * mag;
            break;
        }
    // Narrow ranges away from 0 can fall between two ticks: refine the step until two fit.
    for (int refine = 0; refine < 6; ++refine) {
        ticks.clear();
        const double first = std::ceil(lo / step - 1e-9) * step;
        for (double t = first; t <= hi + step * 1e-9; t += step)
            ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
        if (ticks.size() >= 2) break;
        const double m = step / std::pow(10.0, std::floor(std::log10(step) + 1e-12));
        step = m > 4.9 ? step * 0.4 : (m > 1.9 ? step * 0.5 : step * 0.5); // 5 -> 2 -> 1 -> 0.5
    }
    return ticks;
}

QString formatValue(double v) {
    if (std::isnan(v)) return QStringLiteral("\u2014"); // undefined: callers give the reason in a tooltip
    const double a = std::abs(v);
    if (a != 0 && (a < 1e-3 || a >= 1e5)) return QString::number(v, 'e', 2);
    return QString::number(v, 'g', 3);
}

QString labelText(const QString& text, int maxChars) {
    QString t = displayPiece(text);
    t.replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    t.replace(QLatin1Char('\t'), QStringLiteral("\\t"));
    if (t.trimmed().isEmpty()) t = QStringLiteral("\u2423"); // visible space for blank pieces
    if (t.size() > maxChars) t = t.left(maxChars - 1) + QChar(0x2026);
    return t;
}

QFont scaledFont(const QFont& font, double factor) {
    QFont f = font;
    if (font.pointSizeF() > 0)
        f.setPointSizeF(font.pointSizeF() * factor);
    else if (font.pixelSize() > 0)
        f.setPixelSize(std::max(1, static_cast<int>(std::lround(font.pixelSize() * factor))));
    return f;
}

void drawRotatedText(QPainter& p, const QPointF& anchor, const QString& rawText, Qt::Alignment align) {
    // SentencePiece's word-start mark U+2581 reads as a middle dot, as everywhere (displayPiece);
    // here also for a raw piece handed in without labelText.
    QString text = rawText;
    text.replace(QChar(0x2581), QChar(0x00B7));
    p.save();
    p.translate(anchor);
    p.rotate(-90);
    const QFontMetricsF fm(p.font(), p.device());
    const double w = fm.horizontalAdvance(text);
    double x = 0;
    if (align & Qt::AlignRight)
        x = -w;
    else if (align & Qt::AlignHCenter)
        x = -w / 2;
    double y = fm.ascent() / 2 - fm.descent() / 2; // vertically centred on the anchor
    if (align & Qt::AlignTop)
        y = fm.ascent();
    else if (align & Qt::AlignBottom)
        y = -fm.descent();
    p.drawText(QPointF(x, y), text);
    p.restore();
}

double drawWrappedText(QPainter& p, const QRectF& rect, const QString& text, bool draw) {
    const QFontMetricsF fm(p.font(), p.device());
    const QRectF need = fm.boundingRect(QRectF(0, 0, rect.width(), 1e6), Qt::TextWordWrap, text);
    if (draw) p.drawText(QRectF(rect.left(), rect.top(), rect.width(), need.height()), Qt::TextWordWrap, text);
    return need.height();
}

void paintYTicks(QPainter& p, const QRectF& plot, const std::vector<double>& ticks,
                 const std::function<double(double)>& y, const std::function<QString(double)>& label, double tick,
                 const FigureStyle& style) {
    const QFontMetricsF fmS = style.metrics(style.small);
    p.setFont(style.small);
    for (double t : ticks) {
        const double at = y(t);
        if (at < plot.top() - 1 || at > plot.bottom() + 1) continue;
        p.setPen(QPen(QColor(225, 225, 225), style.hairline));
        p.drawLine(QPointF(plot.left(), at), QPointF(plot.right(), at));
        p.setPen(QPen(Qt::black, style.hairline));
        p.drawLine(QPointF(plot.left() - tick, at), QPointF(plot.left(), at));
        const QString s = label(t);
        p.drawText(
            QPointF(plot.left() - tick * 2 - fmS.horizontalAdvance(s), at + fmS.ascent() / 2 - fmS.descent() / 2), s);
    }
}

void paintAxisTitles(QPainter& p, const QRectF& panel, const QRectF& plot, const QString& yTitle, const QString& xTitle,
                     double tick, double xLabelHeight, const FigureStyle& style) {
    const QFontMetricsF fmB = style.metrics(style.body);
    p.setFont(style.body);
    if (!yTitle.isEmpty())
        drawRotatedText(p, QPointF(panel.left() + fmB.height() * 0.5, plot.center().y()), yTitle, Qt::AlignHCenter);
    if (!xTitle.isEmpty())
        p.drawText(QRectF(plot.left(), plot.bottom() + tick * 2 + xLabelHeight, plot.width(), fmB.height() * 1.2),
                   Qt::AlignHCenter | Qt::AlignVCenter, xTitle);
}

void paintAxisLines(QPainter& p, const QRectF& plot, const FigureStyle& style) {
    p.setPen(QPen(Qt::black, style.hairline));
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    p.drawLine(plot.bottomLeft(), plot.topLeft());
}

double panelTitleHeight(const QString& title, double width, const FigureStyle& style) {
    if (title.isEmpty()) return 0;
    const QFontMetricsF fmT = style.metrics(style.title);
    // Wrapped, never elided: a figure's title is part of what a paper's reader sees.
    const QRectF need = fmT.boundingRect(QRectF(0, 0, std::max(1.0, width), 1e6), titleFlags(title, width, fmT), title);
    return std::max(fmT.height(), need.height()) + fmT.height() * 0.25;
}

QRectF paintPanelTitle(QPainter& p, const QRectF& rect, const QString& title, const FigureStyle& style) {
    if (title.isEmpty()) return rect;
    const QFontMetricsF fmT = style.metrics(style.title);
    const double h = panelTitleHeight(title, rect.width(), style);
    p.save();
    p.setFont(style.title);
    p.setPen(Qt::black);
    p.drawText(QRectF(rect.left(), rect.top(), rect.width(), h), titleFlags(title, rect.width(), fmT) | Qt::AlignTop,
               title);
    p.restore();
    QRectF rest = rect;
    rest.setTop(std::min(rect.bottom(), rect.top() + h));
    return rest;
}

} // namespace gwb::views::detail
