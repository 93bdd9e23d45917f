#include "gwb/views/lens_figure.h"

#include "figure_common.h"
#include "plot_util.h"

#include "gwb/views/heatmap_painter.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace gwb::views {

namespace {
using gwb::engine::LogitLens;

QString pieceText(const LogitLens& lens, int32_t id) {
    const auto it = lens.pieces.find(id);
    return it != lens.pieces.end() ? QString::fromStdString(it->second) : QStringLiteral("#%1").arg(id);
}

/// The lens of `t` in `data` when it has one that fits it (WorkbenchData::lensOf), else null.
const LogitLens* lensFor(const WorkbenchData& data, const gwb::engine::TracePtr& t) {
    if (!t) return nullptr;
    const gwb::engine::LensPtr lens = data.lensOf(t);
    return lens && lens->topK() > 0 && lens->topIds.dim(1) == t->length() ? lens.get() : nullptr;
}

/// The lens layer shown in the top-K list: the chosen one, the final state when none or past N.
int clampedLensLayer(const LogitLens& lens, int chosen) {
    const int64_t rows = lens.topIds.dim(0);
    return chosen < 0 || chosen >= rows ? static_cast<int>(rows - 1) : chosen;
}
} // namespace

// "L2 in" = the input state of layer (block) 2; not "h2", which reads like attention head H2.
QString LensFigure::layerLabel(int64_t l, int64_t N) {
    return l == N ? QStringLiteral("final") : QStringLiteral("L%1 in").arg(l);
}

QJsonObject LensFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("lensLayer"), m_lensLayer);
    return o;
}

void LensFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    if (s.contains(QStringLiteral("lensLayer"))) m_lensLayer = s.value(QStringLiteral("lensLayer")).toInt();
}

QString LensFigure::missingDataMessage() const {
    if (!m_data.grassmann && !m_data.baseline) return detail::noModelMessage(QString());
    if (m_data.lensPending)
        return QStringLiteral("Computing the logit lens (every layer's state through the head)\u2026");
    return QStringLiteral("No logit lens in these traces (traced with lens top-K = 0).");
}

bool LensFigure::hasContent() const {
    if (comparing() || !m_evals.empty()) return true;
    return lensFor(m_data, m_data.grassmann) || lensFor(m_data, m_data.baseline);
}

LensGridData LensFigure::gridData(const gwb::engine::TracePtr& trace, int window) const {
    LensGridData d;
    const LogitLens* lens = lensFor(m_data, trace);
    if (!lens) return d;
    const auto& t = *trace;
    const int64_t L = lens->topIds.dim(0), T = t.length(), K = lens->topK();
    const int64_t sel = std::clamp<int64_t>(selToken(), 0, T - 1);
    const int64_t w = std::min<int64_t>(std::max(1, window), T);
    d.firstToken = std::clamp<int64_t>(sel - w / 2, 0, T - w);
    d.title = QStringLiteral("%1: top-1 next token per lens layer")
                  .arg(QString::fromStdString(
                      t.modelName.empty() ? std::string(t.isGrassmann() ? "Grassmann" : "Transformer") : t.modelName));
    for (int64_t l = 0; l < L; ++l)
        d.rowLabels << layerLabel(l, L - 1);
    const QStringList tokens = tokenLabels(t);
    for (int64_t c = 0; c < w; ++c)
        d.colLabels << tokens[static_cast<int>(d.firstToken + c)];
    for (int64_t l = 0; l < L; ++l)
        for (int64_t c = 0; c < w; ++c) {
            const int64_t tok = d.firstToken + c;
            const size_t i = static_cast<size_t>((l * T + tok) * K);
            const int32_t id = lens->topIds.data[i];
            d.text.push_back(pieceText(*lens, id));
            d.prob.push_back(std::exp(lens->topLogProbs.data[i]));
            d.hitsNext.push_back(tok + 1 < T && t.tokens[static_cast<size_t>(tok + 1)].id == id);
        }
    d.markCol = static_cast<int>(sel - d.firstToken);
    d.markRow = clampedLensLayer(*lens, m_lensLayer);
    return d;
}

QString LensFigure::gridPlaceholder(bool grassmann) const {
    const gwb::engine::TracePtr& tr = grassmann ? m_data.grassmann : m_data.baseline;
    if (lensFor(m_data, tr)) return {};
    if (!tr) return detail::noModelMessage(grassmann ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"));
    return m_data.lensPending ? QStringLiteral("Computing this trace's logit lens\u2026")
                              : QStringLiteral("This trace has no logit lens.");
}

ChartData LensFigure::rankChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Line;
    const int t = selToken();
    c.title = QStringLiteral("Rank of the actual next token after token %1 (1 = top-1)").arg(t);
    c.xTitle = QStringLiteral("lens layer");
    c.yTitle = QStringLiteral("rank");
    c.logY = true; // ranks run from 1 to thousands: on a linear axis every late layer reads 0
    c.yMin = 1;
    int idx = 0;
    for (const auto& tr : {m_data.grassmann, m_data.baseline}) {
        ++idx;
        const LogitLens* lens = lensFor(m_data, tr);
        if (!lens || lens->nextRank.rank() != 2 || t >= lens->nextRank.dim(1)) continue;
        ChartSeries s;
        s.name = tr->isGrassmann() ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
        s.color = seriesColor(idx - 1);
        const int64_t L = lens->nextRank.dim(0);
        for (int64_t l = 0; l < L; ++l) {
            const int32_t r = lens->nextRank.at2(l, t);
            s.x.push_back(static_cast<double>(l));
            s.y.push_back(r < 0 ? std::nan("") : static_cast<double>(r) + 1.0);
        }
        if (c.categories.isEmpty())
            for (int64_t l = 0; l < L; ++l)
                c.categories << layerLabel(l, L - 1);
        c.series.push_back(s);
    }
    return c;
}

QString LensFigure::rankPlaceholder() const {
    if (rankChart().hasData()) return {};
    return QStringLiteral("Token %1 is the prompt's last: it has no next token to rank (select an earlier one).")
        .arg(selToken());
}

QStringList LensFigure::topKLines(const gwb::engine::TracePtr& trace) const {
    QStringList out;
    const LogitLens* lens = lensFor(m_data, trace);
    if (!lens) return out;
    const auto& t = *trace;
    const int64_t T = t.length(), K = lens->topK();
    const int64_t tok = std::clamp<int64_t>(selToken(), 0, T - 1);
    const int l = clampedLensLayer(*lens, m_lensLayer);
    const int32_t next = tok + 1 < T ? t.tokens[static_cast<size_t>(tok + 1)].id : -1;
    for (int64_t k = 0; k < K; ++k) {
        const size_t i = static_cast<size_t>((l * T + tok) * K + k);
        const int32_t id = lens->topIds.data[i];
        out << QStringLiteral("%1 %2%3").arg(detail::labelText(pieceText(*lens, id)),
                                             detail::formatValue(std::exp(lens->topLogProbs.data[i])),
                                             id == next ? QStringLiteral(" \u2190 next") : QString());
    }
    return out;
}

QString LensFigure::lensLayerLabel() const {
    const LogitLens* lens = lensFor(m_data, m_data.primary());
    return lens ? layerLabel(clampedLensLayer(*lens, m_lensLayer), lens->topIds.dim(0) - 1) : QString();
}

std::optional<int32_t> LensFigure::nextRank(const gwb::engine::TracePtr& trace) const {
    const LogitLens* lens = lensFor(m_data, trace);
    const int t = selToken();
    if (!lens || lens->nextRank.rank() != 2 || t >= lens->nextRank.dim(1)) return std::nullopt;
    return lens->nextRank.at2(clampedLensLayer(*lens, m_lensLayer), t);
}

std::vector<DataTable> LensFigure::dataTables() const {
    if (comparing() || !m_evals.empty()) return comparisonTables();
    std::vector<DataTable> out;
    for (const auto& tr : {m_data.grassmann, m_data.baseline}) {
        const LogitLens* lens = lensFor(m_data, tr);
        if (!lens) continue;
        const auto& t = *tr;
        const QString m = t.isGrassmann() ? QStringLiteral("grassmann") : QStringLiteral("transformer");
        const int64_t L = lens->topIds.dim(0), T = t.length(), K = lens->topK();
        DataTable top;
        top.name = QStringLiteral("lens_top1_prob_%1").arg(m);
        top.quantity = QStringLiteral("probability of the top-1 next token per lens layer and token");
        std::vector<float> v;
        for (int64_t l = 0; l < L; ++l)
            for (int64_t i = 0; i < T; ++i)
                v.push_back(std::exp(lens->topLogProbs.data[static_cast<size_t>((l * T + i) * K)]));
        top.values = gwb::engine::FloatArray({L, T}, v);
        top.rowAxis = QStringLiteral("lens layer");
        top.colAxis = QStringLiteral("token");
        for (int64_t l = 0; l < L; ++l)
            top.rowLabels << layerLabel(l, L - 1);
        top.colLabels = tokenLabels(t);
        out.push_back(top);
        if (lens->nextRank.rank() == 2) {
            DataTable rank = top;
            rank.name = QStringLiteral("lens_next_rank_%1").arg(m);
            rank.quantity = QStringLiteral("lens rank (0 = top-1) of the actual next token; NaN at the last token");
            std::vector<float> r;
            for (int32_t x : lens->nextRank.data)
                r.push_back(x < 0 ? std::nanf("") : static_cast<float>(x));
            rank.values = gwb::engine::FloatArray({L, T}, r);
            out.push_back(rank);
        }
    }
    return out;
}

QString LensFigure::captionAt(double widthPoints) const {
    if (comparing() && widthPoints < 5 * 72) return comparisonCaption(true);
    return caption();
}

QString LensFigure::caption() const {
    if (comparing()) return comparisonCaption();
    if (!m_evals.empty()) return evalCaption();
    return QStringLiteral(
               "Logit lens: each layer's input state h^l (rows L0 in..L%1 in) and the final state "
               "through the final LayerNorm and the tied head; cells show the top-1 next token coloured "
               "by its probability (bold, underlined: it is the actual next token), a window of tokens "
               "around token %2 (the selected cell is outlined in red on screen, and in a figure only "
               "with --show-selection). Below: top-K of the selected cell and the rank of the actual next token per "
               "lens layer (1 = top-1, log axis), both models.")
        .arg(std::max<int64_t>(0, m_data.layerCount() - 1))
        .arg(selToken());
}

int LensFigure::figureWindow(double gridWidth, const FigureStyle& style, int maxWindow, double minScale) const {
    // The widest window (up to maxWindow tokens, at least 3) whose pieces fit their cells (whole, or
    // in a font down to minScale of the size: the on-screen painter's own shrink). A
    // wider window holds the narrower one's pieces and gives each cell less room, so whether it fits
    // only turns false as the window grows: a binary search finds the widest.
    const QFontMetricsF fm = style.metrics(style.small);
    QFont bold = style.small;
    bold.setBold(true);
    const QFontMetricsF fmBold = style.metrics(bold);
    const int64_t T = m_data.primary() ? m_data.primary()->length() : 0;
    auto fits = [&](int w) {
        double need = 0;
        double labelW = 0;
        for (const auto& tr : {m_data.grassmann, m_data.baseline}) {
            const LensGridData g = gridData(tr, w);
            for (const QString& r : g.rowLabels)
                labelW = std::max(labelW, fm.horizontalAdvance(r));
            for (const QString& c : g.colLabels)
                need = std::max(need, fm.horizontalAdvance(detail::labelText(c)));
            for (const QString& c : g.text)
                need = std::max(need, fmBold.horizontalAdvance(detail::labelText(c)));
        }
        const double cellW = (gridWidth - labelW - fm.height() * 0.6) / w;
        return cellW >= need * minScale + fm.height() * 0.4;
    };
    int lo = 3, hi = static_cast<int>(std::max<int64_t>(3, std::min<int64_t>(maxWindow, T)));
    if (fits(hi)) return hi;
    while (hi - lo > 1) { // fits(lo) is taken (3 at least), !fits(hi)
        const int mid = (lo + hi) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

void LensFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    if (comparing()) return drawComparison(p, rect, style, map);
    if (!m_evals.empty()) return drawEval(p, rect, style);
    const double gap = style.metrics(style.body).height();
    // One-column figures stack the two grids (each gets the full width, so whole pieces fit);
    // two-column figures put them side by side.
    const bool wide = rect.width() > 5 * 72;
    const auto [top, bottom] = detail::splitPanels(rect, wide ? 0.6 : 0.62, false, gap);
    // The cells' colour is the top-1 probability: a colour key beside the grids says so.
    const QFontMetricsF fmS = style.metrics(style.small);
    const double keyW = style.colorbar ? fmS.height() * 4.2 : 0;
    const QRectF grids = top.adjusted(0, 0, -keyW, 0);
    const auto [left, right] = detail::splitPanels(grids, 0.5, wide, gap);
    if (style.colorbar)
        paintColorbar(p,
                      QRectF(top.right() - keyW + fmS.height() * 0.5, top.top() + fmS.height() * 1.5,
                             keyW - fmS.height() * 0.5, top.height() - fmS.height() * 1.5),
                      ColorScale::fromRange(map, 0, 1, false), QStringLiteral("top-1 probability"), style);
    const int window = figureWindow(left.width(), style);
    paintLensGrid(p, left, gridData(m_data.grassmann, window), style, map);
    paintLensGrid(p, right, gridData(m_data.baseline, window), style, map);
    // One column stacks the top-K lists over the rank chart, which gets the height it needs to read.
    auto [listRect, chartRect] = detail::splitPanels(bottom, wide ? 0.45 : 0.4, wide, gap);
    if (!wide) {
        const double need = chartHeightFor(rankChart(), bottom.width(), style);
        if (chartRect.height() < need) {
            chartRect.setTop(std::max(bottom.top() + bottom.height() * 0.25, bottom.bottom() - need));
            listRect.setBottom(chartRect.top() - gap);
        }
    }
    const auto [gl, bl] = detail::splitPanels(listRect, 0.5, true, gap * 0.5);
    const QString lay = lensLayerLabel();
    for (auto [r, tr] : {std::pair{gl, m_data.grassmann}, std::pair{bl, m_data.baseline}}) {
        const QString head =
            tr ? QStringLiteral("%1 top-K (%2)")
                     .arg(tr->isGrassmann() ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"), lay)
               : QString();
        const QRectF body = detail::paintPanelTitle(p, r, head, style);
        p.save();
        p.setPen(Qt::black);
        const double lineH = style.metrics(style.small).height() * 1.2;
        double y = body.top();
        for (const QString& line : topKLines(tr)) {
            if (y + lineH > body.bottom() + lineH * 0.2) break;
            // A line wider than its column (a long piece in a narrow figure) is set smaller, not cut.
            const double w = style.metrics(style.small).horizontalAdvance(line);
            p.setFont(w > body.width() && w > 0 ? detail::scaledFont(style.small, std::max(0.6, body.width() / w))
                                                : style.small);
            p.drawText(QRectF(body.left(), y, body.width(), lineH), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
                       line);
            y += lineH;
        }
        p.restore();
    }
    if (const QString why = rankPlaceholder(); !why.isEmpty()) {
        p.save();
        p.setFont(style.body);
        p.setPen(Qt::darkGray);
        p.drawText(chartRect, Qt::AlignCenter | Qt::TextWordWrap, why);
        p.restore();
        return;
    }
    paintChart(p, chartRect, rankChart(), style);
}

} // namespace gwb::views
