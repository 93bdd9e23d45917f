#include "gwb/views/attention_figure.h"

#include "figure_common.h"
#include "head_grid_paint.h"
#include "plot_util.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gwb::views {

MatrixSourcePtr attentionSource(const gwb::engine::TracePtr& trace, int layer, int head) {
    if (!trace || layer < 0 || layer >= static_cast<int>(trace->layers.size()) ||
        !trace->layers[static_cast<size_t>(layer)].attention)
        return nullptr;
    const int64_t T = trace->length();
    const auto* at = &*trace->layers[static_cast<size_t>(layer)].attention;
    // The lambda keeps the trace alive; rows are read from attn or recomputed from q and k.
    auto rows = std::make_shared<RowFunctionSource>(T, T, [trace, at, head, T](int64_t r, float* out) {
        const std::vector<float> row = gwb::engine::attentionRow(*at, head, r);
        std::copy(row.begin(), row.end(), out);
        std::fill(out + row.size(), out + T, std::numeric_limits<float>::quiet_NaN());
    });
    if (!at->attn.empty()) return rows;
    // Recomputed rows cost T * d_head each: keep up to ~64 MB of them for repaints while panning.
    return std::make_shared<CachedRowSource>(rows,
                                             std::max<int64_t>(64, (int64_t{16} << 20) / std::max<int64_t>(1, T)));
}

QString AttentionFigure::missingDataMessage() const {
    return QStringLiteral("No baseline (Transformer) trace yet: load a baseline model and run a prompt.");
}

bool AttentionFigure::hasContent() const {
    return m_data.baseline && selLayer() < static_cast<int>(m_data.baseline->layers.size()) &&
           m_data.baseline->layers[static_cast<size_t>(selLayer())].attention.has_value();
}

const gwb::engine::AttentionLayerAnalysis* AttentionFigure::layerAnalysis() const {
    if (!m_data.baselineAnalysis || selLayer() >= static_cast<int>(m_data.baselineAnalysis->attention.size()))
        return nullptr;
    return &m_data.baselineAnalysis->attention[static_cast<size_t>(selLayer())];
}

double AttentionFigure::headMax(int head) const {
    // top1[h, t] is the largest probability of row t. Early rows are nearly one-hot (t = 0 is
    // exactly 1), so the scale ends at the 95th percentile of the rows' maxima: long diffuse
    // rows stay visible, the brightest cells saturate. No T x T scan is needed.
    const auto* a = layerAnalysis();
    std::vector<double> maxima;
    if (a && !a->top1.empty())
        for (int64_t h = 0; h < a->top1.dim(0); ++h) {
            if (head >= 0 && h != head) continue;
            for (int64_t t = 1; t < a->top1.dim(1); ++t)
                if (std::isfinite(a->top1.at2(h, t))) maxima.push_back(a->top1.at2(h, t));
        }
    if (maxima.empty()) return 1.0; // probabilities: 1 without an analysis
    const size_t k = std::min(maxima.size() - 1, static_cast<size_t>(0.95 * static_cast<double>(maxima.size())));
    std::nth_element(maxima.begin(), maxima.begin() + static_cast<std::ptrdiff_t>(k), maxima.end());
    return std::max(1e-6, maxima[k]);
}

ColorScale AttentionFigure::gridScale(ColormapId map) const {
    return ColorScale::fromRange(map, 0, headMax(-1), false);
}

void AttentionFigure::dataChanged() {
    // The caches are kept while the objects they come from stay (the screen keeps its zoom and the
    // thumbnails' levels) and dropped when one is replaced: a new object at a freed one's address
    // is never taken for it.
    const QString trace = QString::number(reinterpret_cast<quintptr>(m_data.baseline.get()));
    const QString analysis = QString::number(reinterpret_cast<quintptr>(m_data.baselineAnalysis.get()));
    if (trace != m_traceData) {
        m_traceData = trace;
        m_pyramidsLayer = -1;
        m_pyramids.clear();
        m_panelKey.clear();
    }
    if (analysis != m_analysisData) {
        m_analysisData = analysis;
        m_panelKey.clear();
    }
}

std::vector<std::shared_ptr<MatrixPyramid>> AttentionFigure::headPyramids() const {
    if (!hasContent()) return {};
    const int layer = selLayer();
    if (layer != m_pyramidsLayer) {
        const auto& at = *m_data.baseline->layers[static_cast<size_t>(layer)].attention;
        m_pyramids.clear();
        for (int64_t h = 0; h < at.nHeads; ++h)
            m_pyramids.push_back(std::make_shared<MatrixPyramid>(
                attentionSource(m_data.baseline, layer, static_cast<int>(h)), DownsampleMode::Max));
        m_pyramidsLayer = layer;
    }
    return m_pyramids;
}

HeatmapPanel AttentionFigure::panel() const {
    const auto pyramids = headPyramids();
    const int head = selHead();
    if (!hasContent() || head < 0 || head >= static_cast<int>(pyramids.size())) {
        HeatmapPanel empty;
        if (!m_data.baseline)
            empty.placeholder = missingDataMessage();
        else if (!hasContent())
            empty.placeholder = QStringLiteral("Layer %1 of the baseline has no attention.").arg(selLayer());
        else // a selection past this layer's heads (the selection's extents are the baseline's)
            empty.placeholder = QStringLiteral("Layer %1 of the baseline has no head %2.").arg(selLayer()).arg(head);
        return empty;
    }
    const QString key = QStringLiteral("%1/%2").arg(selLayer()).arg(head);
    if (key != m_panelKey) {
        m_panel = HeatmapPanel{};
        m_panel.source = pyramids[static_cast<size_t>(head)]->sourcePtr();
        m_panel.axes.rowTitle = QStringLiteral("query");
        m_panel.axes.colTitle = QStringLiteral("key");
        m_panel.axes.rowLabels = tokenLabels(*m_data.baseline);
        m_panel.axes.colLabels = m_panel.axes.rowLabels;
        m_panel.axes.valueName = QStringLiteral("attention");
        // The scale ends at the 95th percentile of the rows' largest probabilities (headMax), from
        // top-1 without a T x T scan: the view's note and the caption say where brighter cells saturate.
        m_panel.fixedLow = 0;
        m_panel.fixedHigh = headMax(head);
        m_panelKey = key;
    }
    HeatmapPanel p = m_panel;
    p.marks = HeatmapMarks{selToken(), -1};
    return p;
}

QStringList AttentionFigure::metricNames() const {
    return {QStringLiteral("H (nats)"), QStringLiteral("H/log(t+1)"), QStringLiteral("S(a)"),
            QStringLiteral("top-1"),    QStringLiteral("exp(H)"),     QStringLiteral("cost \u03a3a\u00b7C")};
}

std::vector<std::vector<double>> AttentionFigure::metricRows() const {
    std::vector<std::vector<double>> rows;
    const auto* a = layerAnalysis();
    if (!a) return rows;
    const int t = selToken();
    const int64_t H = a->entropy.dim(0);
    for (int64_t h = 0; h < H; ++h) {
        std::vector<double> r;
        for (const auto* f : {&a->entropy, &a->normEntropy, &a->sparsity, &a->top1, &a->effSupport, &a->transportCost})
            r.push_back(!f->empty() && t < f->dim(1) ? f->at2(h, t) : std::nan(""));
        rows.push_back(r);
    }
    return rows;
}

std::vector<DataTable> AttentionFigure::dataTables() const {
    if (!hasContent()) return {};
    std::vector<DataTable> out;
    const int t = selToken();
    if (t >= m_data.baseline->length()) return {}; // the baseline tokenized the prompt into fewer tokens
    const auto& at = *m_data.baseline->layers[static_cast<size_t>(selLayer())].attention;
    // The selected query row of every head (never the full T x T).
    const int64_t H = at.nHeads;
    std::vector<float> rowsV(static_cast<size_t>(H * (t + 1)));
    for (int64_t h = 0; h < H; ++h) {
        const auto row = gwb::engine::attentionRow(at, h, t);
        std::copy(row.begin(), row.end(), rowsV.begin() + h * (t + 1));
    }
    QStringList heads;
    for (int64_t h = 0; h < H; ++h)
        heads << QStringLiteral("head%1").arg(h);
    const QStringList toks = tokenLabels(*m_data.baseline).mid(0, t + 1);
    out.push_back(detail::tableFromMatrix(QStringLiteral("attention_rows_layer%1_token%2").arg(selLayer()).arg(t),
                                          QStringLiteral("attention row of the query token over keys j <= t, per head"),
                                          QStringLiteral("attention"), QString(), H, t + 1, std::move(rowsV),
                                          QStringLiteral("head"), QStringLiteral("key token"), heads, toks));
    const auto rows = metricRows();
    if (!rows.empty()) {
        std::vector<float> m;
        for (const auto& r : rows)
            for (double v : r)
                m.push_back(static_cast<float>(v));
        out.push_back(detail::tableFromMatrix(
            QStringLiteral("row_metrics_layer%1_token%2").arg(selLayer()).arg(t),
            QStringLiteral("attention row metrics"), QStringLiteral("entropy"), QString(),
            static_cast<int64_t>(rows.size()), 6, std::move(m), QStringLiteral("head"), QStringLiteral("metric"), heads,
            {QStringLiteral("entropy"), QStringLiteral("normEntropy"), QStringLiteral("sparsity"),
             QStringLiteral("top1"), QStringLiteral("effSupport"), QStringLiteral("transportCost")}));
    }
    return out;
}

QString AttentionFigure::caption() const {
    return QStringLiteral("Attention probabilities softmax(q_t\u00b7k_j/\u221ad_head) of baseline layer %1 "
                          "(thumbnails: every head; large: head %2, query rows x key columns, "
                          "grey = future keys; colour scale from 0 to the 95th percentile of the rows\u2019 largest "
                          "probabilities; brighter cells saturate). Row metrics of query t = %3: entropy H = "
                          "\u2212\u03a3 a log a (nats), H/log(t+1), S(a) = E|a|/\u221a(E a\u00b2), "
                          "top-1 mass, effective support exp(H), transport cost \u03a3 a\u2c7c C\u2c7c with C\u2c7c = "
                          "\u2212q_t\u00b7k_j.")
               .arg(selLayer())
               .arg(selHead())
               .arg(selToken()) +
           detail::modelPhrase(m_data.baseline);
}

void AttentionFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const QFontMetricsF fm = style.metrics(style.small);
    const double gap = fm.height();
    // Metrics table under the panels: header + one line per head.
    const auto rows = metricRows();
    const double tableH = fm.height() * (static_cast<double>(rows.size()) + 1.4);
    const QRectF panels(rect.left(), rect.top(), rect.width(), rect.height() - tableH - gap * 0.5);
    const auto [left, right] = detail::splitPanels(panels, 0.3, true, gap);
    detail::paintHeadGrid(p, left, headPyramids(), selHead(), gridScale(map), style, true, nullptr);
    panel().paint(p, right, style, QStringLiteral("Layer %1, head %2").arg(selLayer()).arg(selHead()), map,
                  panelWindow(QStringLiteral("head")));
    // Table: short headers (the caption defines them), columns as wide as their widest entry.
    p.save();
    p.setFont(style.small);
    p.setPen(Qt::black);
    const QStringList names{QStringLiteral("H"),     QStringLiteral("H/ln(t+1)"), QStringLiteral("S(a)"),
                            QStringLiteral("top-1"), QStringLiteral("exp(H)"),    QStringLiteral("cost")};
    std::vector<QStringList> cells;
    cells.push_back(QStringList{QStringLiteral("t=%1").arg(selToken())} + names);
    for (size_t h = 0; h < rows.size(); ++h) {
        QStringList line{QStringLiteral("head %1").arg(h)};
        for (double v : rows[h])
            line << detail::formatValue(v);
        cells.push_back(line);
    }
    std::vector<double> colW(static_cast<size_t>(names.size() + 1), 0.0);
    for (const auto& line : cells)
        for (int k = 0; k < line.size(); ++k)
            colW[static_cast<size_t>(k)] = std::max(colW[static_cast<size_t>(k)], fm.horizontalAdvance(line[k]));
    double total = 0;
    for (double w : colW)
        total += w;
    const double spare = std::max(0.0, (rect.width() - total) / static_cast<double>(colW.size()));
    double y = rect.bottom() - tableH + fm.ascent();
    for (size_t r = 0; r < cells.size(); ++r) {
        QFont f = style.small;
        f.setBold(r >= 1 && static_cast<int>(r - 1) == selHead());
        p.setFont(f);
        double x = rect.left();
        for (int k = 0; k < cells[r].size(); ++k) {
            p.drawText(QPointF(x, y), cells[r][k]);
            x += colW[static_cast<size_t>(k)] + spare;
        }
        if (r == 0) {
            p.setPen(QPen(Qt::black, style.hairline));
            p.drawLine(QPointF(rect.left(), y + fm.descent()), QPointF(rect.right(), y + fm.descent()));
        }
        y += fm.height();
    }
    p.restore();
}

} // namespace gwb::views
