#include "gwb/views/gate_figure.h"

#include "figure_common.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gwb::views {

QJsonObject GateFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("quantity"),
             m_quantity == Quantity::AboveHalf ? QStringLiteral("above_half") : QStringLiteral("mean"));
    o.insert(QStringLiteral("drill_layer"), drillLayer());
    o.insert(QStringLiteral("scale"), scaleName(m_scale));
    return o;
}

QString GateFigure::scaleName(Scale s) {
    return s == Scale::Unit ? QStringLiteral("unit") : QStringLiteral("data");
}

GateFigure::Scale GateFigure::scaleFromName(const QString& name) {
    if (name == QLatin1String("data")) return Scale::Data;
    if (name == QLatin1String("unit")) return Scale::Unit;
    throw std::invalid_argument("the gate scale must be 'data' (the data's range) or 'unit' (fixed 0 to 1), got '" +
                                name.toStdString() + "'");
}

void GateFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    if (s.contains(QStringLiteral("quantity")))
        m_quantity = s.value(QStringLiteral("quantity")).toString() == QLatin1String("above_half") ? Quantity::AboveHalf
                                                                                                   : Quantity::MeanGate;
    if (s.contains(QStringLiteral("drill_layer"))) m_drillLayer = s.value(QStringLiteral("drill_layer")).toInt(-1);
    if (s.contains(QStringLiteral("scale")))
        m_scale = s.value(QStringLiteral("scale")).toString() == QLatin1String("unit") ? Scale::Unit : Scale::Data;
}

int GateFigure::drillLayer() const {
    if (m_drillLayer >= 0 && m_data.grassmann && m_drillLayer >= static_cast<int>(m_data.grassmann->layers.size()))
        return -1;
    return m_drillLayer;
}

QString GateFigure::missingDataMessage() const {
    return detail::grassmannMissingMessage(m_data);
}

bool GateFigure::hasContent() const {
    return m_data.grassmann && m_data.grassmannAnalysis && !m_data.grassmannAnalysis->grassmann.empty();
}

QString GateFigure::matrixTitle() const {
    if (drillLayer() >= 0) return QStringLiteral("Gate a_t per channel, layer %1").arg(drillLayer());
    return m_quantity == Quantity::MeanGate ? QStringLiteral("Mean gate (layer x token)")
                                            : QStringLiteral("Fraction of gate channels > 0.5 (layer x token)");
}

std::vector<DataTable> GateFigure::dataTables() const {
    if (!hasContent()) return {};
    const auto& tr = *m_data.grassmann;
    const int64_t T = tr.length();
    const QStringList tokens = tokenLabels(tr);
    const int drill = drillLayer();
    if (drill >= 0) {
        const auto* gl = detail::grassmannLayer(m_data, drill);
        if (!gl || gl->gate.empty()) return {};
        const int64_t d = gl->gate.dim(1);
        QStringList channels;
        for (int64_t c = 0; c < d; ++c)
            channels << QString::number(c);
        return {detail::tableFromMatrix(
            QStringLiteral("gate_layer%1").arg(drill), QStringLiteral("gate a_t per channel"), QStringLiteral("gate"),
            QString(), T, d, gl->gate.data, QStringLiteral("token"), QStringLiteral("channel"), tokens, channels)};
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

HeatmapPanel GateFigure::panel() const {
    if (!hasContent()) {
        m_panelKey.clear();
        HeatmapPanel empty;
        empty.placeholder = missingDataMessage();
        return empty;
    }
    const int drill = drillLayer();
    const QString key = QStringLiteral("%1/%2/%3/%4")
                            .arg(reinterpret_cast<quintptr>(m_data.grassmann.get()))
                            .arg(static_cast<int>(m_quantity))
                            .arg(drill)
                            .arg(static_cast<int>(m_scale));
    if (key != m_panelKey) {
        const auto tables = dataTables();
        if (tables.empty()) return {};
        m_panel = HeatmapPanel::ofTable(tables.front(), drill >= 0 ? QStringLiteral("gate a")
                                                                   : (m_quantity == Quantity::MeanGate
                                                                          ? QStringLiteral("mean gate")
                                                                          : QStringLiteral("fraction > 0.5")));
        if (m_scale == Scale::Unit) { // gates live in (0, 1): one scale for every layer and prompt
            m_panel.fixedLow = 0;
            m_panel.fixedHigh = 1;
        }
        m_panelKey = key;
    }
    HeatmapPanel p = m_panel;
    p.marks = {};
    if (drill >= 0) {
        p.marks.row = selToken();
    } else {
        p.marks.row = selLayer();
        p.marks.col = selToken();
    }
    return p;
}

QString GateFigure::caption() const {
    QString s;
    const int drill = drillLayer();
    if (drill >= 0)
        s = QStringLiteral("Gate a_t^l in (0,1) of Grassmann layer %1 for every token (rows) and channel (columns).")
                .arg(drill);
    else if (m_quantity == Quantity::MeanGate)
        s = QStringLiteral(
            "Mean gate: the mean over the d channels of the gate a_t^l in (0,1), per Grassmann layer l and token t.");
    else
        s = QStringLiteral("Fraction of the d gate channels with a_t^l > 0.5, per Grassmann layer l and token t.");
    s += QStringLiteral(" Low = the layer replaced the token's state with geometry; high = it kept the state.");
    if (m_scale == Scale::Unit) {
        s += QStringLiteral(" Colour scale: fixed 0 to 1.");
    } else if (const auto tables = dataTables(); !tables.empty()) {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (float v : tables.front().values.data)
            if (std::isfinite(v)) {
                lo = std::min(lo, static_cast<double>(v));
                hi = std::max(hi, static_cast<double>(v));
            }
        if (lo <= hi)
            s += QStringLiteral(" Colour scale: the data's range, %1 to %2 (not 0 to 1).")
                     .arg(lo, 0, 'g', 3)
                     .arg(hi, 0, 'g', 3);
    }
    return s + detail::modelPhrase(m_data.grassmann);
}

void GateFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    panel().paint(p, rect, style, matrixTitle(), map, panelWindow(QStringLiteral("matrix")));
}

} // namespace gwb::views
