#include "gwb/views/view.h"

#include "plot_util.h"

#include <QFontMetricsF>
#include <QPainter>

namespace gwb::views {

View::View(QWidget* parent) : QWidget(parent) {}

void View::setData(const WorkbenchData& data) {
    m_data = data;
    refresh();
}

void View::setSelection(Selection* selection) {
    if (m_selection) disconnect(m_selection, nullptr, this, nullptr);
    m_selection = selection;
    if (m_selection) {
        auto r = [this] { refresh(); };
        connect(m_selection, &Selection::tokenChanged, this, r);
        connect(m_selection, &Selection::layerChanged, this, r);
        connect(m_selection, &Selection::headChanged, this, r);
        connect(m_selection, &Selection::offsetIndexChanged, this, r);
        connect(m_selection, &Selection::extentsChanged, this, r);
    }
    refresh();
}

QJsonObject View::settings() const {
    QJsonObject o;
    o.insert(QStringLiteral("colormap"), gwb::views::colormapName(m_colormap));
    return o;
}

void View::setSettings(const QJsonObject& settings) {
    if (settings.contains(QStringLiteral("colormap")))
        setColormapId(colormapFromName(settings.value(QStringLiteral("colormap")).toString(), m_colormap));
}

void View::setColormapId(ColormapId map) {
    if (map == m_colormap) return;
    m_colormap = map;
    refresh();
    Q_EMIT settingsChanged();
}

void View::renderFigure(QPainter& painter, const QRectF& rect, const FigureOptions& options) const {
    const FigureStyle style = FigureStyle::forFigure(painter, options);
    const ColormapId map = options.colormap.isEmpty() ? m_colormap : colormapFromName(options.colormap, m_colormap);
    painter.save();
    painter.fillRect(rect, Qt::white);
    painter.setRenderHint(QPainter::Antialiasing, true);
    painter.setRenderHint(QPainter::TextAntialiasing, true);
    painter.setRenderHint(QPainter::SmoothPixmapTransform, false); // cells stay crisp
    const double pad = options.fontPoints * 0.5;
    QRectF body = rect.adjusted(pad, pad, -pad, -pad);
    if (options.caption) {
        painter.setFont(style.small);
        painter.setPen(QColor(40, 40, 40));
        const QString text = caption();
        const double h = detail::drawWrappedText(painter, body, text, false);
        detail::drawWrappedText(painter, QRectF(body.left(), body.bottom() - h, body.width(), h), text, true);
        body.setBottom(body.bottom() - h - pad);
    }
    if (!hasContent()) {
        painter.setFont(style.body);
        painter.setPen(Qt::darkGray);
        painter.drawText(body, Qt::AlignCenter | Qt::TextWordWrap, missingDataMessage());
    } else {
        drawFigure(painter, body, style, map);
    }
    painter.restore();
}

} // namespace gwb::views
