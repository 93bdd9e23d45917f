#include "gwb/views/angles_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/heatmap_widget.h"

#include <QSplitter>
#include <QVBoxLayout>

namespace gwb::views {

AnglesView::AnglesView(QWidget* parent) : View(std::make_unique<AnglesFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_matrixCombo = detail::addCombo(bar, QStringLiteral("Distance matrix"),
                                     {QStringLiteral("prompt subspaces (Grassmann)"),
                                      QStringLiteral("reading subspaces (Grassmann)"),
                                      QStringLiteral("prompt subspaces (baseline)")},
                                     this);
    bar->addStretch();
    m_mapCombo = detail::addColormapCombo(bar, this);
    layout->addLayout(bar);
    auto* split = new QSplitter(Qt::Horizontal, this);
    m_chart = new ChartWidget(split);
    m_heatmap = new HeatmapWidget(split);
    m_heatmap->setUndefinedReason([](int64_t row, int64_t col) {
        return QStringLiteral("undefined: the selected token has no plane in layer %1 or layer %2 (no valid offset, "
                              "or a zero vector)")
            .arg(row)
            .arg(col);
    });
    split->addWidget(m_chart);
    split->addWidget(m_heatmap);
    layout->addWidget(split, 1);
    connect(m_matrixCombo, &QComboBox::currentIndexChanged, this, [this](int i) { setMatrix(static_cast<Matrix>(i)); });
    connect(m_mapCombo, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    connect(m_heatmap, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64) {
        if (selection()) selection()->setLayer(static_cast<int>(row));
    });
    refresh();
}

void AnglesView::setMatrix(Matrix m) {
    if (m == matrix()) return;
    fig().setMatrix(m);
    m_matrixCombo->setCurrentIndex(static_cast<int>(m));
    refresh();
    Q_EMIT settingsChanged();
}

void AnglesView::setSettings(const QJsonObject& s) {
    const Matrix before = matrix();
    View::setSettings(s); // the figure's matrix, the colormap
    m_mapCombo->setCurrentText(gwb::views::colormapName(colormapId()));
    m_matrixCombo->setCurrentIndex(static_cast<int>(matrix()));
    refresh();
    if (matrix() != before) Q_EMIT settingsChanged();
}

void AnglesView::syncFigure(Figure& figure) const {
    figure.setPanelWindow(QStringLiteral("matrix"), m_heatmap->hasMatrix() ? m_heatmap->window() : QRectF());
}

void AnglesView::refresh() {
    const AnglesFigure& f = static_cast<const AnglesFigure&>(figure());
    m_heatmap->setColormap(colormapId());
    m_heatmap->setPanel(f.panel());
    const ChartData c = f.angleChart();
    if (f.hasContent() && c.hasData())
        m_chart->setChart(c);
    else
        m_chart->setPlaceholder(f.chartPlaceholder());
}

} // namespace gwb::views
