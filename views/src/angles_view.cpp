#include "gwb/views/angles_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/heatmap_widget.h"

#include <QFontMetricsF>
#include <QSplitter>
#include <QVBoxLayout>
#include <cmath>
#include <numbers>

namespace gwb::views {

AnglesView::AnglesView(QWidget* parent) : View(parent) {
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
    if (m == m_matrix) return;
    m_matrix = m;
    m_matrixCombo->setCurrentIndex(static_cast<int>(m));
    refresh();
    Q_EMIT settingsChanged();
}

QJsonObject AnglesView::settings() const {
    QJsonObject o = View::settings();
    static const char* names[] = {"grassmann_prompt", "grassmann_reading", "baseline_prompt"};
    o.insert(QStringLiteral("matrix"), QString::fromLatin1(names[static_cast<int>(m_matrix)]));
    return o;
}

void AnglesView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    m_mapCombo->setCurrentText(gwb::views::colormapName(colormapId()));
    const QString m = s.value(QStringLiteral("matrix")).toString();
    if (m == QLatin1String("grassmann_reading"))
        setMatrix(Matrix::GrassmannReading);
    else if (m == QLatin1String("baseline_prompt"))
        setMatrix(Matrix::BaselinePrompt);
    else if (m == QLatin1String("grassmann_prompt"))
        setMatrix(Matrix::GrassmannPrompt);
}

bool AnglesView::hasContent() const {
    return (m_data.grassmann && m_data.grassmannAnalysis) || (m_data.baseline && m_data.baselineAnalysis);
}

const gwb::engine::FloatArray* AnglesView::distanceArray() const {
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

QString AnglesView::matrixName() const {
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

ChartData AnglesView::angleChart() const {
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

void AnglesView::refresh() {
    m_heatmap->setColormap(colormapId());
    if (!hasContent()) {
        m_matrixKey.clear();
        m_heatmap->setPlaceholder(missingDataMessage());
        m_chart->setPlaceholder(missingDataMessage());
        return;
    }
    const auto* dist = distanceArray();
    const QString key = QStringLiteral("%1/%2").arg(reinterpret_cast<quintptr>(dist)).arg(static_cast<int>(m_matrix));
    const QString pendingReading =
        m_matrix == Matrix::BaselinePrompt
            ? QString()
            : detail::pendingAnalysisMessage(m_data, m_matrix == Matrix::GrassmannReading
                                                         ? gwb::engine::kAnalysisReadingSubspaces
                                                         : gwb::engine::kAnalysisPromptSubspaces);
    if (!pendingReading.isEmpty()) {
        m_matrixKey.clear();
        m_heatmap->setPlaceholder(pendingReading);
    } else if (!dist || dist->empty()) {
        m_matrixKey.clear();
        m_heatmap->setPlaceholder(m_matrix == Matrix::BaselinePrompt ? noModelMessageFor(QStringLiteral("baseline"))
                                                                     : noModelMessageFor(QStringLiteral("Grassmann")));
    } else if (key != m_matrixKey) {
        const int64_t N = dist->dim(0);
        HeatmapAxes axes;
        axes.rowTitle = QStringLiteral("layer");
        axes.colTitle = QStringLiteral("layer");
        axes.rowLabels = layerLabels(N);
        axes.colLabels = layerLabels(N);
        axes.valueName = QStringLiteral("geodesic distance (rad)");
        m_heatmap->setMatrix(makeDenseSource(N, dist->dim(1), dist->data), axes);
        m_matrixKey = key;
    }
    m_heatmap->setMarks(HeatmapMarks{selLayer(), selLayer()});
    const ChartData c = angleChart();
    const QString pendingAngles = detail::pendingAnalysisMessage(m_data, gwb::engine::kAnalysisLayerAngles);
    if (c.hasData())
        m_chart->setChart(c);
    else if (!pendingAngles.isEmpty())
        m_chart->setPlaceholder(pendingAngles);
    else
        m_chart->setPlaceholder(
            m_data.grassmann
                ? QStringLiteral("No angles for token %1 at this offset (t \u2212 D < 0, or a single layer).")
                      .arg(selToken())
                : detail::noModelMessage(QStringLiteral("Grassmann")));
}

QString AnglesView::noModelMessageFor(const QString& which) const {
    return detail::noModelMessage(which);
}

std::vector<DataTable> AnglesView::dataTables() const {
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

QString AnglesView::caption() const {
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

void AnglesView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const bool wide = rect.width() > rect.height() * 1.3;
    const auto [a, b] = detail::splitPanels(rect, 0.5, wide, style.metrics(style.body).height());
    paintChart(p, a, angleChart(), style);
    m_heatmap->paintFigure(p, b, style, matrixName(), map);
}

} // namespace gwb::views
