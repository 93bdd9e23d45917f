#include "gwb/views/compare_figure.h"

#include "figure_common.h"
#include "plot_util.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace gwb::views {

namespace {
QString address(const void* p) {
    return QString::number(reinterpret_cast<quintptr>(p));
}
} // namespace

void CompareFigure::dataChanged() {
    // The caches are kept while the objects they come from stay (the screen keeps its zoom) and
    // dropped when one is replaced: a new object at a freed one's address is never taken for it.
    const QString rowsData = QStringLiteral("%1/%2/%3")
                                 .arg(address(m_data.grassmann.get()), address(m_data.baseline.get()),
                                      address(m_data.grassmannAnalysis.get()));
    if (rowsData != m_rowsData) {
        m_rowsData = rowsData;
        m_rowsKey.clear();
    }
    const QString distanceData =
        QStringLiteral("%1/%2").arg(address(m_data.grassmannAnalysis.get()), address(m_data.baselineAnalysis.get()));
    if (distanceData != m_distanceData) {
        m_distanceData = distanceData;
        m_distanceValid = false;
    }
}

QString CompareFigure::missingDataMessage() const {
    return QStringLiteral("Compare needs both a Grassmann and a baseline trace of the same prompt: run a prompt "
                          "with both models loaded.");
}

bool CompareFigure::hasContent() const {
    return m_data.grassmann && m_data.baseline;
}

CompareFigure::Rows CompareFigure::rows() const {
    Rows r;
    if (!hasContent()) {
        r.problem = missingDataMessage();
        return r;
    }
    const int t = selToken();
    const int l = selLayer();
    if (m_data.grassmann->length() != m_data.baseline->length()) {
        r.problem = QStringLiteral(
                        "The two traces tokenized the prompt differently (%1 vs %2 tokens): rows cannot be compared.")
                        .arg(m_data.grassmann->length())
                        .arg(m_data.baseline->length());
        return r;
    }
    const auto* ga = detail::grassmannAnalysis(m_data, l);
    if (!ga) {
        r.problem = QStringLiteral("No Grassmann analysis for layer %1 yet.").arg(l);
        return r;
    }
    if (l >= static_cast<int>(m_data.baseline->layers.size()) ||
        !m_data.baseline->layers[static_cast<size_t>(l)].attention) {
        r.problem = QStringLiteral("The baseline has no attention layer %1.").arg(l);
        return r;
    }
    const auto& at = *m_data.baseline->layers[static_cast<size_t>(l)].attention;
    r.names << QStringLiteral("influence");
    r.values.push_back(influenceRow(*ga, t));
    std::vector<float> mean(static_cast<size_t>(t + 1), 0.0f);
    for (int64_t h = 0; h < at.nHeads; ++h) {
        auto row = gwb::engine::attentionRow(at, h, t);
        for (size_t j = 0; j < row.size(); ++j)
            mean[j] += row[j] / static_cast<float>(at.nHeads);
        r.names << QStringLiteral("head %1").arg(h);
        r.values.push_back(std::move(row));
    }
    r.names << QStringLiteral("head mean");
    r.values.push_back(mean);
    for (size_t i = 1; i < r.values.size(); ++i)
        r.agreement.push_back(compareDistributions(r.values[0], r.values[i]));
    return r;
}

HeatmapPanel CompareFigure::rowsPanel() const {
    const QString key = QStringLiteral("%1/%2").arg(selToken()).arg(selLayer());
    if (key != m_rowsKey) {
        const Rows rs = rows();
        m_rowsPanel = HeatmapPanel{};
        if (rs.values.empty()) {
            m_rowsPanel.placeholder = rs.problem;
        } else {
            const int64_t n = static_cast<int64_t>(rs.values[0].size());
            std::vector<float> flat;
            for (const auto& v : rs.values)
                flat.insert(flat.end(), v.begin(), v.end());
            m_rowsPanel.source = makeDenseSource(static_cast<int64_t>(rs.values.size()), n, std::move(flat));
            m_rowsPanel.axes.colTitle = QStringLiteral("past token");
            m_rowsPanel.axes.rowLabels = rs.names;
            m_rowsPanel.axes.colLabels = tokenLabels(*m_data.grassmann).mid(0, static_cast<int>(n));
            m_rowsPanel.axes.valueName = QStringLiteral("share of row"); // short enough to run along the bar
            m_rowsPanel.fixedLow = 0;
            m_rowsPanel.fixedHigh = 1;
        }
        m_rowsKey = key;
    }
    HeatmapPanel p = m_rowsPanel;
    p.marks = HeatmapMarks{selHead() + 1, -1};
    return p;
}

void CompareFigure::updateDistancePanels() const {
    if (m_distanceValid) return;
    // Distance matrices on a shared scale so that the two models can be compared by colour.
    const gwb::engine::FloatArray* g =
        m_data.grassmannAnalysis ? &m_data.grassmannAnalysis->promptSubspaceDistance : nullptr;
    const gwb::engine::FloatArray* b =
        m_data.baselineAnalysis ? &m_data.baselineAnalysis->promptSubspaceDistance : nullptr;
    double hi = 0;
    for (const auto* a : {g, b})
        if (a)
            for (float v : a->data)
                if (std::isfinite(v)) hi = std::max(hi, static_cast<double>(v));
    const QString pending = detail::pendingAnalysisMessage(m_data, gwb::engine::kAnalysisPromptSubspaces);
    auto distance = [&](const gwb::engine::FloatArray* a, const QString& who) {
        HeatmapPanel panel;
        if (a == g && !pending.isEmpty()) {
            panel.placeholder = pending;
            return panel;
        }
        if (!a || a->empty()) {
            panel.placeholder = QStringLiteral("No %1 prompt-subspace distances yet.").arg(who);
            return panel;
        }
        panel.source = makeDenseSource(a->dim(0), a->dim(1), a->data);
        panel.axes.title = who;
        panel.axes.rowTitle = QStringLiteral("layer");
        panel.axes.colTitle = QStringLiteral("layer");
        panel.axes.rowLabels = layerLabels(a->dim(0));
        panel.axes.colLabels = layerLabels(a->dim(1));
        panel.axes.valueName = QStringLiteral("distance (rad)"); // geodesic; the caption says so
        panel.fixedLow = 0;
        panel.fixedHigh = hi > 0 ? hi : 1;
        return panel;
    };
    m_distance[0] = distance(g, QStringLiteral("Grassmann"));
    m_distance[1] = distance(b, QStringLiteral("baseline"));
    m_difference = HeatmapPanel{};
    if (g && b && !g->empty() && g->shape == b->shape) {
        std::vector<float> diff(g->data.size());
        for (size_t i = 0; i < diff.size(); ++i)
            diff[i] = g->data[i] - b->data[i];
        m_difference.source = makeDenseSource(g->dim(0), g->dim(1), std::move(diff));
        m_difference.axes.title = QStringLiteral("Grassmann − baseline");
        m_difference.axes.rowTitle = QStringLiteral("layer");
        m_difference.axes.colTitle = QStringLiteral("layer");
        m_difference.axes.rowLabels = layerLabels(g->dim(0));
        m_difference.axes.colLabels = layerLabels(g->dim(1));
        m_difference.axes.valueName = QStringLiteral("difference (rad)");
        m_difference.diverging = true; // signed: RdBu centred at 0
    } else {
        m_difference.placeholder =
            QStringLiteral("The difference needs both models' distances with the same number of layers.");
    }
    m_distanceValid = true;
}

HeatmapPanel CompareFigure::distancePanel(Model model) const {
    updateDistancePanels();
    HeatmapPanel p = m_distance[model == Model::Grassmann ? 0 : 1];
    p.marks = HeatmapMarks{selLayer(), selLayer()};
    return p;
}

HeatmapPanel CompareFigure::differencePanel() const {
    updateDistancePanels();
    HeatmapPanel p = m_difference;
    p.marks = HeatmapMarks{selLayer(), selLayer()};
    return p;
}

std::vector<DataTable> CompareFigure::dataTables() const {
    std::vector<DataTable> out;
    const Rows rs = rows();
    if (!rs.values.empty()) {
        const int64_t n = static_cast<int64_t>(rs.values[0].size());
        std::vector<float> flat;
        for (const auto& v : rs.values)
            flat.insert(flat.end(), v.begin(), v.end());
        out.push_back(detail::tableFromMatrix(
            QStringLiteral("rows_layer%1_token%2").arg(selLayer()).arg(selToken()),
            QStringLiteral("Grassmann influence row and baseline attention rows over past tokens"),
            QStringLiteral("influence"), QString(), static_cast<int64_t>(rs.values.size()), n, std::move(flat),
            QStringLiteral("row"), QStringLiteral("past token"), rs.names,
            tokenLabels(*m_data.grassmann).mid(0, static_cast<int>(n))));
        std::vector<float> agr;
        for (const auto& a : rs.agreement) {
            agr.push_back(static_cast<float>(a.jsDivergence));
            agr.push_back(a.top1Agrees ? 1.0f : 0.0f);
        }
        out.push_back(
            detail::tableFromMatrix(QStringLiteral("agreement_layer%1_token%2").arg(selLayer()).arg(selToken()),
                                    QStringLiteral("JS divergence (nats) and top-1 agreement vs the influence row"),
                                    QString(), QString(), static_cast<int64_t>(rs.agreement.size()), 2, std::move(agr),
                                    QStringLiteral("row"), QStringLiteral("measure"), rs.names.mid(1),
                                    {QStringLiteral("js_divergence"), QStringLiteral("top1_agrees")}));
    }
    auto dist = [&](const AnalysisPtr& a, const QString& name) {
        if (!a || a->promptSubspaceDistance.empty()) return;
        const auto& d = a->promptSubspaceDistance;
        out.push_back(detail::tableFromMatrix(
            name, QStringLiteral("geodesic distance between layers' prompt subspaces"),
            QStringLiteral("promptSubspaceDistance"), QStringLiteral("rad"), d.dim(0), d.dim(1), d.data,
            QStringLiteral("layer"), QStringLiteral("layer"), layerLabels(d.dim(0)), layerLabels(d.dim(1))));
    };
    dist(m_data.grassmannAnalysis, QStringLiteral("prompt_distance_grassmann"));
    dist(m_data.baselineAnalysis, QStringLiteral("prompt_distance_baseline"));
    if (m_data.grassmannAnalysis && m_data.baselineAnalysis) {
        const auto& g = m_data.grassmannAnalysis->promptSubspaceDistance;
        const auto& b = m_data.baselineAnalysis->promptSubspaceDistance;
        if (!g.empty() && g.shape == b.shape) {
            std::vector<float> diff(g.data.size());
            for (size_t i = 0; i < diff.size(); ++i)
                diff[i] = g.data[i] - b.data[i];
            out.push_back(detail::tableFromMatrix(QStringLiteral("prompt_distance_difference"),
                                                  QStringLiteral("Grassmann minus baseline prompt-subspace distance"),
                                                  QString(), QStringLiteral("rad"), g.dim(0), g.dim(1), std::move(diff),
                                                  QStringLiteral("layer"), QStringLiteral("layer"),
                                                  layerLabels(g.dim(0)), layerLabels(g.dim(1))));
        }
    }
    return out;
}

QString CompareFigure::caption() const {
    const int k = m_data.grassmannAnalysis ? m_data.grassmannAnalysis->promptSubspaceK : 4;
    return QStringLiteral(
               "Top: for token t = %1 and layer %2, the Grassmann influence row c(t, t\u2212D) = "
               "\u2016(1\u2212a_t)\u2299W_plu p^(D)\u2016/|W_t| (normalized to sum 1) "
               "over past tokens, next to the baseline's attention rows (each head, and their mean); JS = "
               "Jensen\u2013Shannon divergence (nats) to the influence row, "
               "top-1 = same argmax. Bottom: geodesic distances between the layers' top-%3 prompt subspaces, Grassmann "
               "and baseline, on one colour scale, and their difference (diverging scale centred at 0).")
        .arg(selToken())
        .arg(selLayer())
        .arg(k);
}

void CompareFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const QFontMetricsF fm = style.metrics(style.small);
    const double gap = fm.height();
    const Rows rs = rows();
    const auto [top, bottom] = detail::splitPanels(rect, 0.58, false, gap);
    // Rows heatmap with the agreement list beside it (wide) or under it (narrow).
    QStringList lines;
    double listW = 0;
    for (int i = 0; i < static_cast<int>(rs.agreement.size()); ++i) {
        const auto& a = rs.agreement[static_cast<size_t>(i)];
        lines << QStringLiteral("%1: JS %2, top-1 %3")
                     .arg(rs.names[i + 1], detail::formatValue(a.jsDivergence),
                          std::isnan(a.jsDivergence) ? QStringLiteral("\u2014")
                          : a.top1Agrees             ? QStringLiteral("yes")
                                                     : QStringLiteral("no"));
        listW = std::max(listW, fm.horizontalAdvance(lines.back()));
    }
    const bool beside = top.width() - listW - gap > top.width() * 0.6;
    const double lineH = fm.height() * 1.15;
    const QRectF rowsRect = beside ? QRectF(top.left(), top.top(), top.width() - listW - gap, top.height())
                                   : QRectF(top.left(), top.top(), top.width(),
                                            top.height() - lineH * ((lines.size() + 1) / 2) - gap * 0.3);
    rowsPanel().paint(p, rowsRect, style,
                      QStringLiteral("Token %1, layer %2: influence vs attention").arg(selToken()).arg(selLayer()), map,
                      panelWindow(QStringLiteral("rows")));
    p.save();
    p.setFont(style.small);
    p.setPen(Qt::black);
    for (int i = 0; i < lines.size(); ++i) {
        const QPointF at = beside ? QPointF(top.right() - listW, top.top() + fm.height() * 2 + i * lineH)
                                  : QPointF(top.left() + (i % 2) * top.width() / 2,
                                            rowsRect.bottom() + gap * 0.3 + fm.ascent() + (i / 2) * lineH);
        p.drawText(at, lines[i]);
    }
    p.restore();
    const auto [bl, rest] = detail::splitPanels(bottom, 0.28, true, gap);
    const auto [bm, br] = detail::splitPanels(rest, 0.5, true, gap * 0.5);
    FigureStyle shared = style;
    shared.colorbar = false; // same scale as the baseline panel, whose colorbar serves both
    distancePanel(Model::Grassmann)
        .paint(p, bl, shared, QStringLiteral("Grassmann"), map, panelWindow(QStringLiteral("grassmann")));
    distancePanel(Model::Baseline)
        .paint(p, bm, style, QStringLiteral("Baseline"), map, panelWindow(QStringLiteral("baseline")));
    differencePanel().paint(p, br, style, QStringLiteral("Grassmann − baseline"), map,
                            panelWindow(QStringLiteral("difference")));
}

} // namespace gwb::views
