#include "gwb/views/plucker_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/heatmap_widget.h"

#include <QFontMetricsF>
#include <QSplitter>
#include <QVBoxLayout>
#include <cmath>

namespace gwb::views {

PluckerView::PluckerView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_quantityCombo = detail::addCombo(bar, QStringLiteral("Show"),
                                       {QStringLiteral("Pl\u00fccker residual \u03c1(B_t)"), QStringLiteral("planarity of B_t")}, this);
    bar->addStretch();
    m_mapCombo = detail::addColormapCombo(bar, this);
    layout->addLayout(bar);
    auto* split = new QSplitter(Qt::Vertical, this);
    m_heatmap = new HeatmapWidget(split);
    m_chart = new ChartWidget(split);
    split->addWidget(m_heatmap);
    split->addWidget(m_chart);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);
    connect(m_quantityCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setQuantity(i == 1 ? Quantity::Planarity : Quantity::Residual); });
    connect(m_mapCombo, &QComboBox::currentTextChanged, this, [this](const QString& n) { setColormapId(colormapFromName(n)); });
    connect(m_heatmap, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64 col) {
        if (!selection()) return;
        selection()->setLayer(static_cast<int>(row));
        selection()->setToken(static_cast<int>(col));
    });
    refresh();
}

void PluckerView::setQuantity(Quantity q) {
    if (q == m_quantity) return;
    m_quantity = q;
    m_quantityCombo->setCurrentIndex(q == Quantity::Planarity ? 1 : 0);
    refresh();
    Q_EMIT settingsChanged();
}

QJsonObject PluckerView::settings() const {
    QJsonObject o = View::settings();
    o.insert(QStringLiteral("quantity"), m_quantity == Quantity::Planarity ? QStringLiteral("planarity") : QStringLiteral("residual"));
    return o;
}

void PluckerView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    m_mapCombo->setCurrentText(gwb::views::colormapName(colormapId()));
    if (s.contains(QStringLiteral("quantity")))
        setQuantity(s.value(QStringLiteral("quantity")).toString() == QLatin1String("planarity") ? Quantity::Planarity : Quantity::Residual);
}

bool PluckerView::hasContent() const {
    return m_data.grassmann && m_data.grassmannAnalysis && !m_data.grassmannAnalysis->grassmann.empty();
}

ChartData PluckerView::pairNormChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Bar;
    const auto* a = detail::grassmannAnalysis(m_data, selLayer());
    const int t = selToken();
    if (!a || a->pairNorm.empty() || t >= a->pairNorm.dim(0)) return c;
    const QString tok = t < m_data.grassmann->length() ? detail::labelTextForTitle(m_data.grassmann->tokens[static_cast<size_t>(t)].text) : QString();
    c.title = QStringLiteral("\u2016z_t \u2227 z_{t\u2212D}\u2016, token %1 '%2', layer %3").arg(t).arg(tok).arg(selLayer());
    c.xTitle = QStringLiteral("offset D");
    c.yTitle = QStringLiteral("pair norm");
    ChartSeries s;
    for (int64_t o = 0; o < a->pairNorm.dim(1); ++o) {
        c.categories << QStringLiteral("D=%1").arg(a->offsets[static_cast<size_t>(o)]);
        s.y.push_back(a->pairNorm.at2(t, o));
    }
    c.series.push_back(s);
    return c;
}

void PluckerView::refresh() {
    m_heatmap->setColormap(colormapId());
    if (!hasContent()) {
        m_matrixKey.clear();
        m_heatmap->setPlaceholder(missingDataMessage());
        m_chart->setPlaceholder(missingDataMessage());
        return;
    }
    const QString key = QStringLiteral("%1/%2").arg(reinterpret_cast<quintptr>(m_data.grassmannAnalysis.get())).arg(static_cast<int>(m_quantity));
    if (key != m_matrixKey) {
        const DataTable t = dataTables().front();
        HeatmapAxes axes;
        axes.rowTitle = t.rowAxis;
        axes.colTitle = t.colAxis;
        axes.rowLabels = t.rowLabels;
        axes.colLabels = t.colLabels;
        axes.valueName = m_quantity == Quantity::Residual ? QStringLiteral("residual \u03c1") : QStringLiteral("planarity");
        m_heatmap->setMatrix(makeDenseSource(t.values.dim(0), t.values.dim(1), t.values.data), axes);
        if (m_quantity == Quantity::Planarity) m_heatmap->setFixedRange(0, 1);
        else m_heatmap->setFixedRange(std::nan(""), std::nan(""));
        m_matrixKey = key;
    }
    m_heatmap->setMarks(HeatmapMarks{selLayer(), selToken()});
    const ChartData c = pairNormChart();
    if (c.hasData()) m_chart->setChart(c);
    else m_chart->setPlaceholder(QStringLiteral("Token %1 has no valid offset in layer %2 (t \u2212 D < 0 for every D).").arg(selToken()).arg(selLayer()));
}

std::vector<DataTable> PluckerView::dataTables() const {
    if (!hasContent()) return {};
    const auto& layers = m_data.grassmannAnalysis->grassmann;
    const int64_t T = m_data.grassmann->length();
    const int64_t N = static_cast<int64_t>(layers.size());
    std::vector<float> v(static_cast<size_t>(N * T), std::numeric_limits<float>::quiet_NaN());
    for (int64_t l = 0; l < N; ++l) {
        const auto& src = m_quantity == Quantity::Residual ? layers[static_cast<size_t>(l)].residual : layers[static_cast<size_t>(l)].planarity;
        for (int64_t t = 0; t < T && t < static_cast<int64_t>(src.size()); ++t) v[static_cast<size_t>(l * T + t)] = src[static_cast<size_t>(t)];
    }
    const bool res = m_quantity == Quantity::Residual;
    std::vector<DataTable> out;
    out.push_back(detail::tableFromMatrix(res ? QStringLiteral("residual") : QStringLiteral("planarity"),
                                          res ? QStringLiteral("Pl\u00fccker-relation residual of B_t") : QStringLiteral("planarity of B_t"),
                                          res ? QStringLiteral("residual") : QStringLiteral("planarity"), QString(), N, T, std::move(v),
                                          QStringLiteral("layer"), QStringLiteral("token"), layerLabels(N), tokenLabels(*m_data.grassmann)));
    const ChartData c = pairNormChart();
    if (!c.series.empty()) {
        DataTable t;
        t.name = QStringLiteral("pair_norm_token%1_layer%2").arg(selToken()).arg(selLayer());
        t.quantity = QStringLiteral("||z_t ^ z_{t-D}|| per offset D");
        t.definitionKey = QStringLiteral("pairNorm");
        std::vector<float> y;
        for (double d : c.series[0].y) y.push_back(static_cast<float>(d));
        t.values = gwb::engine::FloatArray({static_cast<int64_t>(y.size())}, y);
        t.rowAxis = QStringLiteral("offset");
        t.rowLabels = c.categories;
        out.push_back(t);
    }
    return out;
}

QString PluckerView::caption() const {
    const QString q = m_quantity == Quantity::Residual
                          ? QStringLiteral("Pl\u00fccker-relation residual \u03c1(B) = sqrt(\u03a3_{i<j<k<l} R_ijkl(B)^2) / \u2016B\u2016^2 of the mean bivector B_t of each Grassmann layer (0 = B_t is a single plane)")
                          : QStringLiteral("Planarity s1^2 / \u03a3 s_k^2 of the mean bivector B_t of each Grassmann layer, from the singular-value pairs of its antisymmetric matrix (1 = B_t is a single plane)");
    return q + QStringLiteral("; grey = no valid offset. Bars: unnormalized pair norms \u2016z_t \u2227 z_{t\u2212D}\u2016 of the selected token (t = %1) and layer (%2).").arg(selToken()).arg(selLayer()) +
           detail::modelPhrase(m_data.grassmann);
}

void PluckerView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const bool wide = rect.width() > rect.height() * 1.6;
    const auto [a, b] = detail::splitPanels(rect, wide ? 0.62 : 0.6, wide, style.metrics(style.body).height());
    m_heatmap->paintFigure(p, a, style, m_quantity == Quantity::Residual ? QStringLiteral("Pl\u00fccker residual \u03c1(B_t)") : QStringLiteral("Planarity of B_t"), map);
    paintChart(p, b, pairNormChart(), style);
}

} // namespace gwb::views
