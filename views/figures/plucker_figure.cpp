#include "gwb/views/plucker_figure.h"

#include "figure_common.h"

#include <array>
#include <limits>

namespace gwb::views {
namespace {
// Order of the view's "Show" combo: coherence first, it is the quantity that varies.
constexpr std::array<PluckerFigure::Quantity, 3> kQuantities{
    PluckerFigure::Quantity::Coherence, PluckerFigure::Quantity::Residual, PluckerFigure::Quantity::Planarity};

// Why residual and planarity are not findings: B_t always contains z_t.
QString roundingNote(const QString& planeValue) {
    return QStringLiteral("Rounding check only: B_t = z_t \u2227 w_t is always a plane (every p^(D) contains z_t), so "
                          "this differs "
                          "from its plane value %1 only by floating-point rounding. ")
        .arg(planeValue);
}
} // namespace

QString PluckerFigure::quantityId(Quantity q) {
    switch (q) {
    case Quantity::Residual:
        return QStringLiteral("residual");
    case Quantity::Planarity:
        return QStringLiteral("planarity");
    case Quantity::Coherence:
        return QStringLiteral("coherence");
    }
    return QStringLiteral("coherence");
}

PluckerFigure::Quantity PluckerFigure::quantityFromId(const QString& id) {
    for (Quantity q : kQuantities)
        if (quantityId(q) == id) return q;
    return Quantity::Coherence;
}

QJsonObject PluckerFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("quantity"), quantityId(m_quantity));
    return o;
}

void PluckerFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    if (s.contains(QStringLiteral("quantity")))
        m_quantity = quantityFromId(s.value(QStringLiteral("quantity")).toString());
}

QString PluckerFigure::missingDataMessage() const {
    return detail::grassmannMissingMessage(m_data);
}

bool PluckerFigure::hasContent() const {
    return m_data.grassmann && m_data.grassmannAnalysis && !m_data.grassmannAnalysis->grassmann.empty();
}

ChartData PluckerFigure::pairNormChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Bar;
    const auto* a = detail::grassmannAnalysis(m_data, selLayer());
    const int t = selToken();
    if (!a || a->pairNorm.empty() || t >= a->pairNorm.dim(0)) return c;
    const QString tok = t < m_data.grassmann->length()
                            ? detail::labelTextForTitle(m_data.grassmann->tokens[static_cast<size_t>(t)].text)
                            : QString();
    c.title =
        QStringLiteral("\u2016z_t \u2227 z_{t\u2212D}\u2016, token %1 '%2', layer %3").arg(t).arg(tok).arg(selLayer());
    c.xTitle = QStringLiteral("offset D");
    c.yTitle = QStringLiteral("pair norm");
    c.undefinedReason = QStringLiteral("\u2014: the offset reaches before the prompt (t \u2212 D is negative), so "
                                       "there is no pair plane and its norm is undefined (not 0).");
    ChartSeries s;
    for (int64_t o = 0; o < a->pairNorm.dim(1); ++o) {
        c.categories << QString::number(a->offsets[static_cast<size_t>(o)]); // the axis title says "offset D"
        s.y.push_back(a->pairNorm.at2(t, o));
    }
    c.series.push_back(s);
    return c;
}

QString PluckerFigure::chartPlaceholder() const {
    if (!hasContent()) return missingDataMessage();
    return QStringLiteral("Token %1 has no valid offset in layer %2 (t \u2212 D < 0 for every D).")
        .arg(selToken())
        .arg(selLayer());
}

HeatmapPanel PluckerFigure::panel() const {
    HeatmapPanel empty;
    if (!hasContent()) {
        m_panelKey.clear();
        empty.placeholder = missingDataMessage();
        return empty;
    }
    if (detail::planesThroughMlp(m_data)) {
        m_panelKey.clear();
        empty.placeholder =
            QStringLiteral("B_t is not defined for this model: its mixer sends each offset's plane through an MLP "
                           "and averages the outputs (aggregation per_offset_mlp), so no mean plane is formed and "
                           "coherence, residual and planarity have nothing to describe. The pair norms below are "
                           "defined, and the Compare view shows each offset's influence.");
        return empty;
    }
    const QString key = QStringLiteral("%1/%2")
                            .arg(reinterpret_cast<quintptr>(m_data.grassmannAnalysis.get()))
                            .arg(static_cast<int>(m_quantity));
    if (key != m_panelKey) {
        m_panel = HeatmapPanel::ofTable(
            matrixTable(), m_quantity == Quantity::Residual    ? QStringLiteral("residual \u03c1")
                           : m_quantity == Quantity::Planarity ? QStringLiteral("planarity")
                                                               : QStringLiteral("coherence \u2016B_t\u2016"));
        // Coherence and planarity live in [0, 1]: one scale for every prompt; the residual is tiny
        // (rounding), so its scale follows the data.
        if (m_quantity != Quantity::Residual) {
            m_panel.fixedLow = 0;
            m_panel.fixedHigh = 1;
        }
        m_panelKey = key;
    }
    HeatmapPanel p = m_panel;
    p.marks = HeatmapMarks{selLayer(), selToken()};
    return p;
}

DataTable PluckerFigure::matrixTable() const {
    const auto& layers = m_data.grassmannAnalysis->grassmann;
    const int64_t T = m_data.grassmann->length();
    const int64_t N = static_cast<int64_t>(layers.size());
    std::vector<float> v(static_cast<size_t>(N * T), std::numeric_limits<float>::quiet_NaN());
    for (int64_t l = 0; l < N; ++l) {
        const auto& src = quantityValues(layers[static_cast<size_t>(l)]);
        for (int64_t t = 0; t < T && t < static_cast<int64_t>(src.size()); ++t)
            v[static_cast<size_t>(l * T + t)] = src[static_cast<size_t>(t)];
    }
    const QString id = quantityId(m_quantity);
    const QString quantity =
        m_quantity == Quantity::Coherence  ? QStringLiteral("coherence ||B_t|| of the mean unit bivector B_t")
        : m_quantity == Quantity::Residual ? QStringLiteral("Pl\u00fccker-relation residual of B_t (rounding check)")
                                           : QStringLiteral("planarity of B_t (rounding check)");
    return detail::tableFromMatrix(id, quantity, id, QString(), N, T, std::move(v), QStringLiteral("layer"),
                                   QStringLiteral("token"), layerLabels(N), tokenLabels(*m_data.grassmann));
}

std::vector<DataTable> PluckerFigure::dataTables() const {
    if (!hasContent()) return {};
    std::vector<DataTable> out;
    out.push_back(matrixTable());
    const ChartData c = pairNormChart();
    if (!c.series.empty()) {
        DataTable t;
        t.name = QStringLiteral("pair_norm_token%1_layer%2").arg(selToken()).arg(selLayer());
        t.quantity = QStringLiteral("||z_t ^ z_{t-D}|| per offset D");
        t.definitionKey = QStringLiteral("pairNorm");
        std::vector<float> y;
        for (double d : c.series[0].y)
            y.push_back(static_cast<float>(d));
        t.values = gwb::engine::FloatArray({static_cast<int64_t>(y.size())}, y);
        t.rowAxis = QStringLiteral("offset");
        t.rowLabels = c.categories;
        out.push_back(t);
    }
    return out;
}

const std::vector<float>& PluckerFigure::quantityValues(const gwb::engine::GrassmannLayerAnalysis& a) const {
    switch (m_quantity) {
    case Quantity::Residual:
        return a.residual;
    case Quantity::Planarity:
        return a.planarity;
    case Quantity::Coherence:
        break;
    }
    return a.coherence;
}

QString PluckerFigure::heatmapTitle() const {
    switch (m_quantity) {
    case Quantity::Residual:
        return QStringLiteral("Pl\u00fccker residual \u03c1(B_t), rounding check");
    case Quantity::Planarity:
        return QStringLiteral("Planarity of B_t, rounding check");
    case Quantity::Coherence:
        break;
    }
    return QStringLiteral("Coherence \u2016B_t\u2016 of the offset planes");
}

QString PluckerFigure::caption() const {
    if (detail::planesThroughMlp(m_data))
        return QStringLiteral("B_t is not defined for this model (each offset's plane goes through an MLP and the "
                              "outputs are averaged: no mean plane is formed). Bars: unnormalized pair norms "
                              "\u2016z_t \u2227 z_{t\u2212D}\u2016 of the selected token (t = %1) and layer (%2).")
                   .arg(selToken())
                   .arg(selLayer()) +
               detail::modelPhrase(m_data.grassmann);
    // The quantity's text is the engine's definition, so figures and exported JSON say the same.
    QString q;
    switch (m_quantity) {
    case Quantity::Coherence:
        q = QStringLiteral("Coherence of each Grassmann layer's mean bivector B_t = mean_D p^(D): ") +
            detail::engineDefinition("coherence") + QStringLiteral(".");
        break;
    case Quantity::Residual:
        q = roundingNote(QStringLiteral("0")) + QStringLiteral("Residual: ") + detail::engineDefinition("residual") +
            QStringLiteral(".");
        break;
    case Quantity::Planarity:
        q = roundingNote(QStringLiteral("1")) + QStringLiteral("Planarity: ") + detail::engineDefinition("planarity") +
            QStringLiteral(".");
        break;
    }
    return q +
           QStringLiteral(" Grey = no valid offset. Bars: unnormalized pair norms \u2016z_t \u2227 z_{t\u2212D}\u2016 "
                          "of the selected token (t = %1) and layer (%2).")
               .arg(selToken())
               .arg(selLayer()) +
           detail::modelPhrase(m_data.grassmann);
}

void PluckerFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const bool wide = rect.width() > rect.height() * 1.6;
    const auto [a, b] = detail::splitPanels(rect, wide ? 0.62 : 0.6, wide, style.metrics(style.body).height());
    panel().paint(p, a, style, heatmapTitle(), map, panelWindow(QStringLiteral("matrix")));
    paintChart(p, b, pairNormChart(), style);
}

} // namespace gwb::views
