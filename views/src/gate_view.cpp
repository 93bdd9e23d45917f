#include "gwb/views/gate_view.h"

#include "view_common.h"

#include "gwb/views/heatmap_widget.h"

#include <QPushButton>
#include <QVBoxLayout>

namespace gwb::views {

GateView::GateView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_quantityCombo = detail::addCombo(
        bar, QStringLiteral("Show"), {QStringLiteral("mean gate"), QStringLiteral("fraction of channels > 0.5")}, this);
    m_drillButton = new QPushButton(QStringLiteral("Channels of selected layer"), this);
    m_drillButton->setCheckable(true);
    bar->addWidget(m_drillButton);
    bar->addStretch();
    m_mapCombo = detail::addColormapCombo(bar, this);
    layout->addLayout(bar);
    m_heatmap = new HeatmapWidget(this);
    m_heatmap->setFixedRange(0, 1); // gates live in (0, 1): one scale for every layer and prompt
    layout->addWidget(m_heatmap, 1);

    connect(m_quantityCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setQuantity(i == 1 ? Quantity::AboveHalf : Quantity::MeanGate); });
    connect(m_drillButton, &QPushButton::toggled, this, [this](bool on) {
        if (on != (m_drillLayer >= 0)) setDrillLayer(on ? selLayer() : -1); // ignore echoes of setDrillLayer
    });
    connect(m_mapCombo, &QComboBox::currentTextChanged, this,
            [this](const QString& name) { setColormapId(colormapFromName(name)); });
    connect(m_heatmap, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64 col) {
        if (!selection()) return;
        if (m_drillLayer >= 0) {
            selection()->setToken(static_cast<int>(row));
        } else {
            selection()->setLayer(static_cast<int>(row));
            selection()->setToken(static_cast<int>(col));
        }
    });
    refresh();
}

void GateView::setQuantity(Quantity q) {
    if (q == m_quantity) return;
    m_quantity = q;
    m_quantityCombo->setCurrentIndex(q == Quantity::AboveHalf ? 1 : 0);
    refresh();
    Q_EMIT settingsChanged();
}

void GateView::setDrillLayer(int layer) {
    if (layer == m_drillLayer) return;
    m_drillLayer = layer;
    m_drillButton->setChecked(layer >= 0);
    refresh();
    Q_EMIT settingsChanged();
}

QJsonObject GateView::settings() const {
    QJsonObject o = View::settings();
    o.insert(QStringLiteral("quantity"),
             m_quantity == Quantity::AboveHalf ? QStringLiteral("above_half") : QStringLiteral("mean"));
    o.insert(QStringLiteral("drill_layer"), m_drillLayer);
    return o;
}

void GateView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    m_mapCombo->setCurrentText(gwb::views::colormapName(colormapId()));
    if (s.contains(QStringLiteral("quantity")))
        setQuantity(s.value(QStringLiteral("quantity")).toString() == QLatin1String("above_half") ? Quantity::AboveHalf
                                                                                                  : Quantity::MeanGate);
    if (s.contains(QStringLiteral("drill_layer"))) setDrillLayer(s.value(QStringLiteral("drill_layer")).toInt(-1));
}

QString GateView::missingDataMessage() const {
    return detail::grassmannMissingMessage(m_data);
}

bool GateView::hasContent() const {
    return m_data.grassmann && m_data.grassmannAnalysis && !m_data.grassmannAnalysis->grassmann.empty();
}

QString GateView::matrixTitle() const {
    if (m_drillLayer >= 0) return QStringLiteral("Gate a_t per channel, layer %1").arg(m_drillLayer);
    return m_quantity == Quantity::MeanGate ? QStringLiteral("Mean gate (layer x token)")
                                            : QStringLiteral("Fraction of gate channels > 0.5 (layer x token)");
}

void GateView::refresh() {
    m_heatmap->setColormap(colormapId());
    m_quantityCombo->setEnabled(m_drillLayer < 0);
    if (!hasContent()) {
        m_matrixKey.clear();
        m_heatmap->setPlaceholder(missingDataMessage());
        return;
    }
    if (m_drillLayer >= static_cast<int>(m_data.grassmann->layers.size())) m_drillLayer = -1;
    const QString key = QStringLiteral("%1/%2/%3")
                            .arg(reinterpret_cast<quintptr>(m_data.grassmann.get()))
                            .arg(static_cast<int>(m_quantity))
                            .arg(m_drillLayer);
    if (key != m_matrixKey) {
        const auto tables = dataTables();
        const DataTable& t = tables.front();
        const HeatmapAxes axes = detail::axesFromTable(t, m_drillLayer >= 0 ? QStringLiteral("gate a")
                                                                            : (m_quantity == Quantity::MeanGate
                                                                                   ? QStringLiteral("mean gate")
                                                                                   : QStringLiteral("fraction > 0.5")));
        m_heatmap->setMatrix(makeDenseSource(t.values.dim(0), t.values.dim(1), t.values.data), axes);
        m_matrixKey = key;
    }
    HeatmapMarks marks;
    if (m_drillLayer >= 0)
        marks.row = selToken();
    else {
        marks.row = selLayer();
        marks.col = selToken();
    }
    m_heatmap->setMarks(marks);
}

std::vector<DataTable> GateView::dataTables() const {
    if (!hasContent()) return {};
    const auto& tr = *m_data.grassmann;
    const int64_t T = tr.length();
    const QStringList tokens = tokenLabels(tr);
    if (m_drillLayer >= 0) {
        const auto* gl = detail::grassmannLayer(m_data, m_drillLayer);
        if (!gl || gl->gate.empty()) return {};
        const int64_t d = gl->gate.dim(1);
        QStringList channels;
        for (int64_t c = 0; c < d; ++c)
            channels << QString::number(c);
        return {detail::tableFromMatrix(QStringLiteral("gate_layer%1").arg(m_drillLayer),
                                        QStringLiteral("gate a_t per channel"), QStringLiteral("gate"), QString(), T, d,
                                        gl->gate.data, QStringLiteral("token"), QStringLiteral("channel"), tokens,
                                        channels)};
    }
    const auto& layers = m_data.grassmannAnalysis->grassmann;
    const int64_t N = static_cast<int64_t>(layers.size());
    std::vector<float> v(static_cast<size_t>(N * T), std::numeric_limits<float>::quiet_NaN());
    for (int64_t l = 0; l < N; ++l) {
        const auto& src = m_quantity == Quantity::MeanGate ? layers[static_cast<size_t>(l)].meanGate
                                                           : layers[static_cast<size_t>(l)].gateAboveHalf;
        for (int64_t t = 0; t < T && t < static_cast<int64_t>(src.size()); ++t)
            v[static_cast<size_t>(l * T + t)] = src[static_cast<size_t>(t)];
    }
    const bool mean = m_quantity == Quantity::MeanGate;
    return {detail::tableFromMatrix(
        mean ? QStringLiteral("mean_gate") : QStringLiteral("gate_above_half"),
        mean ? QStringLiteral("mean gate over channels") : QStringLiteral("fraction of gate channels above 0.5"),
        mean ? QStringLiteral("meanGate") : QStringLiteral("gateAboveHalf"), QString(), N, T, std::move(v),
        QStringLiteral("layer"), QStringLiteral("token"), layerLabels(N), tokens)};
}

QString GateView::caption() const {
    QString s;
    if (m_drillLayer >= 0)
        s = QStringLiteral("Gate a_t^l in (0,1) of Grassmann layer %1 for every token (rows) and channel (columns).")
                .arg(m_drillLayer);
    else if (m_quantity == Quantity::MeanGate)
        s = QStringLiteral(
            "Mean gate: the mean over the d channels of the gate a_t^l in (0,1), per Grassmann layer l and token t.");
    else
        s = QStringLiteral("Fraction of the d gate channels with a_t^l > 0.5, per Grassmann layer l and token t.");
    return s + QStringLiteral(" Low = the layer replaced the token's state with geometry; high = it kept the state.") +
           detail::modelPhrase(m_data.grassmann);
}

void GateView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    m_heatmap->paintFigure(p, rect, style, matrixTitle(), map);
}

} // namespace gwb::views
