#include "gwb/views/compare_view.h"

#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/selection_policy.h"

#include "gwb/views/heatmap_widget.h"

#include <QFontMetricsF>
#include <QHeaderView>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

namespace gwb::views {

CompareView::CompareView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    auto* mapCombo = detail::addColormapCombo(bar, this);
    bar->addStretch();
    layout->addLayout(bar);
    auto* vsplit = new QSplitter(Qt::Vertical, this);
    auto* top = new QSplitter(Qt::Horizontal, vsplit);
    m_rows = new HeatmapWidget(top);
    m_table = new QTableWidget(top);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    // Compact rows: the influence row, every head and the head mean fit without a scroll bar.
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    top->addWidget(m_rows);
    top->addWidget(m_table);
    top->setStretchFactor(0, 4);
    top->setStretchFactor(1, 1);
    // The table's three short columns need about a fifth of the width; the past tokens need the rest
    // (at 1280 px their labels then lie flat and whole after a Continue too).
    top->setSizes({800, 200});
    auto* bottom = new QSplitter(Qt::Horizontal, vsplit);
    m_gDist = new HeatmapWidget(bottom);
    m_bDist = new HeatmapWidget(bottom);
    m_diff = new HeatmapWidget(bottom);
    m_diff->setColormap(ColormapId::RdBu);
    m_diff->setDiverging(true);
    bottom->addWidget(m_gDist);
    bottom->addWidget(m_bDist);
    bottom->addWidget(m_diff);
    vsplit->addWidget(top);
    vsplit->addWidget(bottom);
    // The three layer x layer matrices are square: they get the larger share of the height.
    vsplit->setSizes({470, 430}); // applied proportionally when shown
    for (auto* h : {m_gDist, m_bDist, m_diff})
        h->setMinimumHeight(150);
    layout->addWidget(vsplit, 1);
    connect(mapCombo, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    connect(m_rows, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64 col) {
        if (!selection()) return;
        selection()->setToken(static_cast<int>(col));
        const int heads = selection()->headCount();
        if (row >= 1 && row <= heads) selection()->setHead(static_cast<int>(row - 1));
    });
    for (auto* h : {m_gDist, m_bDist, m_diff})
        connect(h, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64) {
            if (selection()) selection()->setLayer(static_cast<int>(row));
        });
    refresh();
}

bool CompareView::hasContent() const {
    return m_data.grassmann && m_data.baseline;
}

CompareView::Rows CompareView::rows() const {
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

void CompareView::refresh() {
    for (auto* h : {m_rows, m_gDist, m_bDist})
        h->setColormap(colormapId()); // m_diff stays RdBu (signed)
    const Rows rs = rows();
    m_table->clear();
    m_table->setRowCount(0);
    if (rs.values.empty()) {
        m_rows->setPlaceholder(rs.problem);
    } else {
        const int64_t n = static_cast<int64_t>(rs.values[0].size());
        std::vector<float> flat;
        for (const auto& v : rs.values)
            flat.insert(flat.end(), v.begin(), v.end());
        HeatmapAxes axes;
        axes.rowTitle = QString();
        axes.colTitle = QStringLiteral("past token");
        axes.rowLabels = rs.names;
        axes.colLabels = tokenLabels(*m_data.grassmann).mid(0, static_cast<int>(n));
        axes.valueName = QStringLiteral("share of row"); // short enough to run along the bar
        m_rows->setMatrix(makeDenseSource(static_cast<int64_t>(rs.values.size()), n, std::move(flat)), axes);
        // Every row (influence, each head, the head mean) keeps its label: a line of text each,
        // plus the rotated token labels and the hint line below.
        const int line = fontMetrics().height() + 2;
        m_rows->setMinimumHeight(static_cast<int>(rs.values.size()) * line + line * 5);
        // (the header's hint before the table is first shown can be short: a text line and margins at least)
        const int header = std::max(m_table->horizontalHeader()->sizeHint().height(), fontMetrics().height() + 12);
        m_table->setMinimumHeight(
            header + static_cast<int>(rs.agreement.size()) * m_table->verticalHeader()->defaultSectionSize() + 4);
        m_rows->setFixedRange(0, 1);
        m_rows->setMarks(HeatmapMarks{selHead() + 1, -1});
        m_table->setColumnCount(3);
        m_table->setHorizontalHeaderLabels(
            {QStringLiteral("row"), QStringLiteral("JS (nats)"), QStringLiteral("top-1 agrees")});
        m_table->setRowCount(static_cast<int>(rs.agreement.size()));
        for (int i = 0; i < static_cast<int>(rs.agreement.size()); ++i) {
            m_table->setItem(i, 0, new QTableWidgetItem(rs.names[i + 1]));
            m_table->setItem(i, 1,
                             detail::valueItem(rs.agreement[static_cast<size_t>(i)].jsDivergence,
                                               undefinedReason(QStringLiteral("JS"), selToken())));
            const auto& agr = rs.agreement[static_cast<size_t>(i)];
            auto* top1 = new QTableWidgetItem(std::isnan(agr.jsDivergence) ? QStringLiteral("\u2014")
                                              : agr.top1Agrees             ? QStringLiteral("yes")
                                                                           : QStringLiteral("no"));
            if (std::isnan(agr.jsDivergence))
                top1->setToolTip(undefinedReason(QStringLiteral("Top-1 agreement"), selToken()));
            m_table->setItem(i, 2, top1);
        }
        m_table->resizeColumnsToContents();
    }
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
    auto setDist = [&](HeatmapWidget* w, const gwb::engine::FloatArray* a, const QString& who) {
        if (a == g && !pending.isEmpty()) {
            w->setPlaceholder(pending);
            return;
        }
        if (!a || a->empty()) {
            w->setPlaceholder(QStringLiteral("No %1 prompt-subspace distances yet.").arg(who));
            return;
        }
        HeatmapAxes axes;
        axes.title = QStringLiteral("%1").arg(who);
        axes.rowTitle = QStringLiteral("layer");
        axes.colTitle = QStringLiteral("layer");
        axes.rowLabels = layerLabels(a->dim(0));
        axes.colLabels = layerLabels(a->dim(1));
        axes.valueName = QStringLiteral("distance (rad)"); // geodesic; the caption says so
        w->setMatrix(makeDenseSource(a->dim(0), a->dim(1), a->data), axes);
        w->setFixedRange(0, hi > 0 ? hi : 1);
        w->setMarks(HeatmapMarks{selLayer(), selLayer()});
    };
    setDist(m_gDist, g, QStringLiteral("Grassmann"));
    setDist(m_bDist, b, QStringLiteral("baseline"));
    if (g && b && !g->empty() && g->shape == b->shape) {
        std::vector<float> diff(g->data.size());
        for (size_t i = 0; i < diff.size(); ++i)
            diff[i] = g->data[i] - b->data[i];
        HeatmapAxes axes;
        axes.title = QStringLiteral("Grassmann − baseline");
        axes.rowTitle = QStringLiteral("layer");
        axes.colTitle = QStringLiteral("layer");
        axes.rowLabels = layerLabels(g->dim(0));
        axes.colLabels = layerLabels(g->dim(1));
        axes.valueName = QStringLiteral("difference (rad)");
        m_diff->setMatrix(makeDenseSource(g->dim(0), g->dim(1), std::move(diff)), axes);
        m_diff->setMarks(HeatmapMarks{selLayer(), selLayer()});
    } else {
        m_diff->setPlaceholder(
            QStringLiteral("The difference needs both models' distances with the same number of layers."));
    }
}

std::vector<DataTable> CompareView::dataTables() const {
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

QString CompareView::caption() const {
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

void CompareView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
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
    m_rows->paintFigure(p, rowsRect, style,
                        QStringLiteral("Token %1, layer %2: influence vs attention").arg(selToken()).arg(selLayer()),
                        map);
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
    m_gDist->paintFigure(p, bl, shared, QStringLiteral("Grassmann"), map);
    m_bDist->paintFigure(p, bm, style, QStringLiteral("Baseline"), map);
    m_diff->paintFigure(p, br, style, QStringLiteral("Grassmann − baseline"), map);
}

} // namespace gwb::views
