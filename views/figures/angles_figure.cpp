#include "gwb/views/angles_figure.h"

#include "figure_common.h"

#include <cmath>
#include <numbers>

namespace gwb::views {

QJsonObject AnglesFigure::settings() const {
    QJsonObject o = Figure::settings();
    static const char* names[] = {"grassmann_prompt", "grassmann_reading", "baseline_prompt"};
    o.insert(QStringLiteral("matrix"), QString::fromLatin1(names[static_cast<int>(m_matrix)]));
    return o;
}

void AnglesFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    const QString m = s.value(QStringLiteral("matrix")).toString();
    if (m == QLatin1String("grassmann_reading"))
        m_matrix = Matrix::GrassmannReading;
    else if (m == QLatin1String("baseline_prompt"))
        m_matrix = Matrix::BaselinePrompt;
    else if (m == QLatin1String("grassmann_prompt"))
        m_matrix = Matrix::GrassmannPrompt;
}

bool AnglesFigure::hasContent() const {
    return (m_data.grassmann && m_data.grassmannAnalysis) || (m_data.baseline && m_data.baselineAnalysis);
}

QString AnglesFigure::missingDataMessage() const {
    return (m_data.grassmann || m_data.baseline) ? QStringLiteral("Analysing the traces\u2026")
                                                 : QStringLiteral("No trace yet: load a model and run a prompt.");
}

const gwb::engine::FloatArray* AnglesFigure::distanceArray() const {
    switch (m_matrix) {
    case Matrix::GrassmannPrompt:
        return m_data.grassmannAnalysis ? &m_data.grassmannAnalysis->promptSubspaceDistance : nullptr;
    case Matrix::GrassmannReading:
        return m_data.grassmannAnalysis ? &m_data.grassmannAnalysis->readingSubspaceDistance : nullptr;
    case Matrix::BaselinePrompt:
        return m_data.baselineAnalysis ? &m_data.baselineAnalysis->promptSubspaceDistance : nullptr;
    }
    return nullptr;
}

QString AnglesFigure::matrixName() const {
    switch (m_matrix) {
    case Matrix::GrassmannPrompt:
        return QStringLiteral("Prompt-subspace distance (Grassmann)");
    case Matrix::GrassmannReading:
        return QStringLiteral("Reading-subspace distance (Grassmann)");
    case Matrix::BaselinePrompt:
        return QStringLiteral("Prompt-subspace distance (baseline)");
    }
    return {};
}

ChartData AnglesFigure::angleChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Line;
    if (!m_data.grassmann || !m_data.grassmannAnalysis) return c;
    if (!m_data.grassmannAnalysis->has(gwb::engine::kAnalysisLayerAngles)) return c; // still computing
    const auto& layers = m_data.grassmannAnalysis->grassmann;
    const int t = selToken();
    const int o = selOffsetIndex();
    const auto* a0 = detail::grassmannAnalysis(m_data, 0);
    if (!a0 || o >= static_cast<int>(a0->offsets.size())) return c;
    const int D = a0->offsets[static_cast<size_t>(o)];
    c.title = QStringLiteral("Angles between layers l and l+1, token %1 '%2', D = %3")
                  .arg(t)
                  .arg(t < m_data.grassmann->length()
                           ? detail::labelTextForTitle(m_data.grassmann->tokens[static_cast<size_t>(t)].text)
                           : QString())
                  .arg(D);
    c.xTitle = QStringLiteral("layer transition");
    c.yTitle = QStringLiteral("angle (rad)");
    c.yMin = 0;
    // Angles live in [0, pi/2]; 4% headroom above pi/2 so that a point at pi/2 (orthogonal planes)
    // is drawn whole, not cut in half by the top of the plot.
    c.yMax = std::numbers::pi / 2 * 1.04;
    ChartSeries s1{QStringLiteral("\u03b8\u2081"), {}, {}, QColor()};
    ChartSeries s2{QStringLiteral("\u03b8\u2082"), {}, {}, QColor()};
    for (size_t l = 0; l + 1 < layers.size(); ++l) {
        const auto& a = layers[l];
        // Offsets may differ per layer: find D in this layer.
        int64_t oi = -1;
        for (size_t k = 0; k < a.offsets.size(); ++k)
            if (a.offsets[k] == D) oi = static_cast<int64_t>(k);
        double v1 = std::nan(""), v2 = std::nan("");
        if (oi >= 0 && t < a.anglesNext.dim(0)) {
            v1 = a.anglesNext.at3(t, oi, 0);
            v2 = a.anglesNext.at3(t, oi, 1);
        }
        s1.x.push_back(static_cast<double>(l));
        s1.y.push_back(v1);
        s2.x.push_back(static_cast<double>(l));
        s2.y.push_back(v2);
        c.categories << QStringLiteral("%1\u2192%2").arg(l).arg(l + 1);
    }
    c.series = {s1, s2};
    return c;
}

QString AnglesFigure::chartPlaceholder() const {
    if (!hasContent()) return missingDataMessage();
    if (const QString pending = detail::pendingAnalysisMessage(m_data, gwb::engine::kAnalysisLayerAngles);
        !pending.isEmpty())
        return pending;
    return m_data.grassmann
               ? QStringLiteral("No angles for token %1 at this offset (t \u2212 D < 0, or a single layer).")
                     .arg(selToken())
               : detail::noModelMessage(QStringLiteral("Grassmann"));
}

HeatmapPanel AnglesFigure::panel() const {
    HeatmapPanel empty;
    if (!hasContent()) {
        m_panelKey.clear();
        empty.placeholder = missingDataMessage();
        return empty;
    }
    const QString pending = m_matrix == Matrix::BaselinePrompt
                                ? QString()
                                : detail::pendingAnalysisMessage(m_data, m_matrix == Matrix::GrassmannReading
                                                                             ? gwb::engine::kAnalysisReadingSubspaces
                                                                             : gwb::engine::kAnalysisPromptSubspaces);
    const auto* dist = distanceArray();
    if (!pending.isEmpty() || !dist || dist->empty()) {
        m_panelKey.clear();
        empty.placeholder = !pending.isEmpty() ? pending
                                               : detail::noModelMessage(m_matrix == Matrix::BaselinePrompt
                                                                            ? QStringLiteral("baseline")
                                                                            : QStringLiteral("Grassmann"));
        return empty;
    }
    const QString key = QStringLiteral("%1/%2").arg(reinterpret_cast<quintptr>(dist)).arg(static_cast<int>(m_matrix));
    if (key != m_panelKey) {
        const int64_t N = dist->dim(0);
        m_panel = HeatmapPanel{};
        m_panel.source = makeDenseSource(N, dist->dim(1), dist->data);
        m_panel.axes.rowTitle = QStringLiteral("layer");
        m_panel.axes.colTitle = QStringLiteral("layer");
        m_panel.axes.rowLabels = layerLabels(N);
        m_panel.axes.colLabels = layerLabels(N);
        m_panel.axes.valueName = QStringLiteral("geodesic distance (rad)");
        m_panelKey = key;
    }
    HeatmapPanel p = m_panel;
    p.marks = HeatmapMarks{selLayer(), selLayer()};
    return p;
}

std::vector<DataTable> AnglesFigure::dataTables() const {
    std::vector<DataTable> out;
    const ChartData c = angleChart();
    if (!c.series.empty()) {
        const int64_t L = static_cast<int64_t>(c.series[0].y.size());
        std::vector<float> v;
        for (int64_t i = 0; i < L; ++i)
            for (const auto& s : c.series)
                v.push_back(static_cast<float>(s.y[static_cast<size_t>(i)]));
        out.push_back(detail::tableFromMatrix(
            QStringLiteral("angles_token%1_offsetidx%2").arg(selToken()).arg(selOffsetIndex()),
            QStringLiteral("principal angles between lifted pair planes of layers l and l+1"),
            QStringLiteral("anglesNext"), QStringLiteral("rad"), L, 2, std::move(v), QStringLiteral("layer transition"),
            QStringLiteral("angle"), c.categories, {QStringLiteral("theta1"), QStringLiteral("theta2")}));
    }
    if (const auto* dist = distanceArray(); dist && !dist->empty()) {
        static const char* keys[] = {"promptSubspaceDistance", "readingSubspaceDistance", "promptSubspaceDistance"};
        static const char* names[] = {"prompt_distance_grassmann", "reading_distance_grassmann",
                                      "prompt_distance_baseline"};
        const int i = static_cast<int>(m_matrix);
        const int64_t N = dist->dim(0);
        out.push_back(detail::tableFromMatrix(QString::fromLatin1(names[i]), matrixName(), QString::fromLatin1(keys[i]),
                                              QStringLiteral("rad"), N, dist->dim(1), dist->data,
                                              QStringLiteral("layer"), QStringLiteral("layer"), layerLabels(N),
                                              layerLabels(N)));
    }
    return out;
}

QString AnglesFigure::caption() const {
    const int k = m_data.grassmannAnalysis ? m_data.grassmannAnalysis->promptSubspaceK
                                           : (m_data.baselineAnalysis ? m_data.baselineAnalysis->promptSubspaceK : 4);
    QString m;
    if (m_matrix == Matrix::GrassmannReading)
        m = QStringLiteral("geodesic Grassmann distance \u2016\u03b8\u2016\u2082 between the reading subspaces (row "
                           "spaces of W_red) of every pair of Grassmann layers");
    else
        m = QStringLiteral("geodesic Grassmann distance \u2016\u03b8\u2016\u2082 between the top-%1 principal "
                           "subspaces of the layers' input states h^l over the prompt (%2 model)")
                .arg(k)
                .arg(m_matrix == Matrix::BaselinePrompt ? QStringLiteral("baseline") : QStringLiteral("Grassmann"));
    return QStringLiteral("Line chart: principal angles \u03b8\u2081 \u2264 \u03b8\u2082 (rad) between the lifted pair "
                          "planes span(h_t, h_{t\u2212D}) read by Grassmann layers l and l+1 "
                          "(pseudo-inverse of W_red), token t = %1, offset index %2. Matrix: %3.")
               .arg(selToken())
               .arg(selOffsetIndex())
               .arg(m) +
           detail::modelPhrase(m_data.grassmann ? m_data.grassmann : m_data.baseline);
}

void AnglesFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const bool wide = rect.width() > rect.height() * 1.3;
    const auto [a, b] = detail::splitPanels(rect, 0.5, wide, style.metrics(style.body).height());
    paintChart(p, a, angleChart(), style);
    panel().paint(p, b, style, matrixName(), map, panelWindow(QStringLiteral("matrix")));
}

} // namespace gwb::views
