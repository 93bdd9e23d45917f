#include "gwb/views/patching_pairs.h"

#include <QPaintEvent>
#include <QPainter>

namespace gwb::views {

PairsPlotsWidget::PairsPlotsWidget(QWidget* parent) : QWidget(parent) {
    setMinimumWidth(220);
    setMinimumHeight(kMinimumHeight);
    setObjectName(QStringLiteral("patchingPairsPlots"));
}

void PairsPlotsWidget::setData(const PairsData* data) {
    m_data = data;
    m_model = -1;
    m_row = m_col = -1;
    update();
}

void PairsPlotsWidget::setCell(int model, int64_t r, int64_t c) {
    m_model = model;
    m_row = r;
    m_col = c;
    update();
}

void PairsPlotsWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    p.setRenderHint(QPainter::Antialiasing, true);
    // On screen the panel is narrow: titles in the body font, bold, instead of the title font.
    FigureStyle style = FigureStyle::forScreen(font());
    style.title = style.body;
    style.title.setBold(true);
    paintPairsSide(p, QRectF(rect()).adjusted(6, 6, -6, -6), m_data, m_model, m_row, m_col, style);
}

} // namespace gwb::views
