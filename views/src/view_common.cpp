#include "view_common.h"

#include "plot_util.h"

#include <QTableWidgetItem>

#include <cmath>

namespace gwb::views::detail {

QComboBox* addCombo(QHBoxLayout* bar, const QString& label, const QStringList& items, QWidget* parent) {
    if (!label.isEmpty()) bar->addWidget(new QLabel(label, parent));
    auto* combo = new QComboBox(parent);
    combo->addItems(items);
    bar->addWidget(combo);
    return combo;
}

QTableWidgetItem* valueItem(double v, const QString& whyUndefined) {
    auto* item = new QTableWidgetItem(formatValue(v));
    if (std::isnan(v)) item->setToolTip(whyUndefined);
    return item;
}

QComboBox* addColormapCombo(QHBoxLayout* bar, QWidget* parent) {
    return addCombo(bar, QStringLiteral("Colormap"),
                    {QStringLiteral("viridis"), QStringLiteral("cividis"), QStringLiteral("magma")}, parent);
}

QLabel* messageLabel(QWidget* parent, const QString& objectName) {
    auto* label = new QLabel(parent);
    label->setObjectName(objectName);
    label->setWordWrap(true);
    label->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Minimum);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setProperty("gwbMessage", true);
    return label;
}

} // namespace gwb::views::detail
