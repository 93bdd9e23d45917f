// The Lens figure with lenses beside the logit lens (LensFigure::setComparison) and with gwb lens
// eval's per-layer summary (LensFigure::setEvalSummaries): grids, charts, caption, data tables.

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
using gwb::engine::LensReadout;

QString modelWord(bool grassmann) {
    return grassmann ? QStringLiteral("Grassmann") : QStringLiteral("Transformer");
}

QString lensWord(const std::string& kind) {
    return kind == "jacobian" ? QStringLiteral("Jacobian") : QString::fromStdString(kind);
}

/// "Grassmann tuned" (+ " *" when fitted on another model): a series name.
QString seriesName(const LensReadout& r) {
    return QStringLiteral("%1 %2%3").arg(modelWord(r.grassmann), lensWord(r.lens),
                                         r.sameModel ? QString() : QStringLiteral(" *"));
}

QString readoutPiece(const LensReadout& r, int32_t id) {
    const auto it = r.pieces.find(id);
    return it != r.pieces.end() ? QString::fromStdString(it->second) : QStringLiteral("#%1").arg(id);
}

/// The readouts drawn, with the trace each belongs to (same token count), Grassmann's first.
std::vector<std::pair<const LensReadout*, gwb::engine::TracePtr>> drawn(const gwb::engine::LensComparison& c,
                                                                        const WorkbenchData& d) {
    std::vector<std::pair<const LensReadout*, gwb::engine::TracePtr>> out;
    for (bool g : {true, false}) {
        const gwb::engine::TracePtr& t = g ? d.grassmann : d.baseline;
        for (const LensReadout& r : c.of(g))
            if (t && r.top1.rank() == 2 && r.top1.dim(1) == t->length() && t->length() > 0) out.emplace_back(&r, t);
    }
    return out;
}

/// Heights, in points of a figure's fonts, that a readout grid and a chart need (for aspect()).
constexpr double kLinePt = 9.5;
} // namespace

QString LensFigure::readoutTitle(const LensReadout& r) {
    // One line where it can: where each lens was fitted is in the caption; the title says so only
    // when it was another model (or the fit stopped early).
    QString t = QStringLiteral("%1 \u00b7 %2 lens").arg(modelWord(r.grassmann), lensWord(r.lens));
    if (r.lens == "logit") return t;
    QStringList notes;
    if (!r.sameModel)
        notes << QStringLiteral("fitted on %1: another model")
                     .arg(QString::fromStdString(r.fittedOn.empty() ? std::string("an unnamed model") : r.fittedOn));
    if (!r.complete) notes << QStringLiteral("stopped early");
    return notes.isEmpty() ? t : t + QStringLiteral(" (%1)").arg(notes.join(QStringLiteral(", ")));
}

LensGridData LensFigure::readoutGrid(const LensReadout& r, int window) const {
    LensGridData d;
    const gwb::engine::TracePtr& tr = r.grassmann ? m_data.grassmann : m_data.baseline;
    if (!tr || r.top1.rank() != 2 || r.top1.dim(1) != tr->length() || tr->length() == 0) return d;
    const int64_t rows = r.top1.dim(0), T = tr->length();
    const int64_t sel = std::clamp<int64_t>(selToken(), 0, T - 1);
    const int64_t w = std::min<int64_t>(std::max(1, window), T);
    d.firstToken = std::clamp<int64_t>(sel - w / 2, 0, T - w);
    d.title = readoutTitle(r);
    for (int64_t s = 0; s < rows; ++s)
        d.rowLabels << layerLabel(s, rows - 1);
    const QStringList tokens = tokenLabels(*tr);
    for (int64_t c = 0; c < w; ++c)
        d.colLabels << tokens[static_cast<int>(d.firstToken + c)];
    for (int64_t s = 0; s < rows; ++s)
        for (int64_t c = 0; c < w; ++c) {
            const int64_t tok = d.firstToken + c;
            const int32_t id = r.top1.at2(s, tok);
            d.text.push_back(id < 0 ? QStringLiteral("\u2014") : readoutPiece(r, id));
            d.prob.push_back(r.kl.at2(s, tok));
            d.hitsNext.push_back(id >= 0 && tok + 1 < T && tr->tokens[static_cast<size_t>(tok + 1)].id == id);
        }
    d.scaleMax = readoutKlMax();
    d.markCol = static_cast<int>(sel - d.firstToken);
    const int l = m_lensLayer;
    d.markRow = l < 0 || l >= rows ? static_cast<int>(rows - 1) : l;
    return d;
}

LensGridData LensFigure::selectedTokenGrid(bool grassmann) const {
    LensGridData d;
    if (!comparing()) return d;
    const gwb::engine::TracePtr& tr = grassmann ? m_data.grassmann : m_data.baseline;
    std::vector<const LensReadout*> lenses;
    for (const auto& [r, t] : drawn(*m_comparison, m_data))
        if (r->grassmann == grassmann) lenses.push_back(r);
    if (lenses.empty()) return d;
    const int64_t T = tr->length(), tok = std::clamp<int64_t>(selToken(), 0, T - 1);
    int64_t rows = 0;
    for (const LensReadout* r : lenses)
        rows = std::max(rows, r->top1.dim(0));
    d.title = QStringLiteral("%1 \u00b7 lenses at token %2 %3")
                  .arg(modelWord(grassmann))
                  .arg(tok)
                  .arg(detail::labelText(tokenLabels(*tr)[static_cast<int>(tok)]));
    for (int64_t s = 0; s < rows; ++s)
        d.rowLabels << layerLabel(s, rows - 1);
    bool other = false;
    for (const LensReadout* r : lenses) {
        d.colLabels << (r->sameModel ? lensWord(r->lens) : lensWord(r->lens) + QStringLiteral("*"));
        other = other || !r->sameModel;
    }
    if (other) d.title += QStringLiteral(" (* fitted on another model)");
    d.firstToken = tok;
    for (int64_t s = 0; s < rows; ++s)
        for (const LensReadout* r : lenses) {
            const int32_t id = s < r->top1.dim(0) ? r->top1.at2(s, tok) : -1;
            d.text.push_back(id < 0 ? QStringLiteral("\u2014") : readoutPiece(*r, id));
            d.prob.push_back(s < r->kl.dim(0) ? r->kl.at2(s, tok) : std::nanf(""));
            d.hitsNext.push_back(id >= 0 && tok + 1 < T && tr->tokens[static_cast<size_t>(tok + 1)].id == id);
        }
    d.scaleMax = readoutKlMax();
    const int l = m_lensLayer;
    d.markRow = l < 0 || l >= rows ? static_cast<int>(rows - 1) : l;
    return d;
}

float LensFigure::readoutKlMax() const {
    float top = 0.01f;
    if (!comparing()) return top;
    for (const auto& [r, tr] : drawn(*m_comparison, m_data))
        for (const float v : r->kl.data)
            if (std::isfinite(v)) top = std::max(top, v);
    return top;
}

ChartData LensFigure::readoutRankChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Line;
    const int t = selToken();
    c.title = QStringLiteral("Rank of the actual next token after token %1 (1 = top-1)").arg(t);
    c.xTitle = QStringLiteral("lens layer");
    c.yTitle = QStringLiteral("rank");
    c.logY = true;
    c.yMin = 1;
    if (!comparing()) return c;
    int idx = 0;
    for (const auto& [r, tr] : drawn(*m_comparison, m_data)) {
        ChartSeries s;
        s.name = seriesName(*r);
        s.color = seriesColor(idx++);
        const int64_t rows = r->nextRank.dim(0);
        if (t + 1 >= tr->length()) continue;
        for (int64_t l = 0; l < rows; ++l) {
            const int32_t k = r->nextRank.at2(l, t);
            s.x.push_back(static_cast<double>(l));
            s.y.push_back(k < 0 ? std::nan("") : static_cast<double>(k) + 1.0);
        }
        if (c.categories.isEmpty())
            for (int64_t l = 0; l < rows; ++l)
                c.categories << layerLabel(l, rows - 1);
        c.series.push_back(s);
    }
    return c;
}

ChartData LensFigure::readoutKlChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Line;
    c.title = QStringLiteral("KL(p_final \u2016 p_lens) per lens layer, mean over the prompt's tokens");
    c.xTitle = QStringLiteral("lens layer");
    c.yTitle = QStringLiteral("KL (nats)");
    c.yMin = 0;
    if (!comparing()) return c;
    int idx = 0;
    for (const auto& [r, tr] : drawn(*m_comparison, m_data)) {
        ChartSeries s;
        s.name = seriesName(*r);
        s.color = seriesColor(idx++);
        const int64_t rows = r->kl.dim(0), T = r->kl.dim(1);
        for (int64_t l = 0; l < rows; ++l) {
            double sum = 0;
            for (int64_t t = 0; t < T; ++t)
                sum += r->kl.at2(l, t);
            s.x.push_back(static_cast<double>(l));
            s.y.push_back(sum / static_cast<double>(T)); // NaN where the lens has no map
        }
        if (c.categories.isEmpty())
            for (int64_t l = 0; l < rows; ++l)
                c.categories << layerLabel(l, rows - 1);
        c.series.push_back(s);
    }
    return c;
}

int LensFigure::readoutWindow(double gridWidth, const FigureStyle& style, int maxWindow) const {
    // The widest window whose pieces fit their cells whole (as figureWindow, over the readouts).
    const QFontMetricsF fm = style.metrics(style.small);
    QFont bold = style.small;
    bold.setBold(true);
    const QFontMetricsF fmBold = style.metrics(bold);
    int64_t T = 0;
    for (const auto& [r, tr] : drawn(*m_comparison, m_data))
        T = std::max(T, tr->length());
    auto fits = [&](int w) {
        double need = 0, labelW = 0;
        for (const auto& [r, tr] : drawn(*m_comparison, m_data)) {
            const LensGridData g = readoutGrid(*r, w);
            for (const QString& s : g.rowLabels)
                labelW = std::max(labelW, fm.horizontalAdvance(s));
            for (const QString& s : g.colLabels)
                need = std::max(need, fm.horizontalAdvance(detail::labelText(s)));
            for (const QString& s : g.text)
                need = std::max(need, fmBold.horizontalAdvance(detail::labelText(s)));
        }
        return (gridWidth - labelW - fm.height() * 0.6) / w >= need + fm.height() * 0.4;
    };
    int lo = 3, hi = static_cast<int>(std::max<int64_t>(3, std::min<int64_t>(maxWindow, T)));
    if (fits(hi)) return hi;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

double LensFigure::aspect(double widthInches) const {
    const bool wide = widthInches >= 5;
    const double width = widthInches * 72;
    const double captionH = kLinePt * std::ceil(captionAt(width).size() * 3.6 / std::max(1.0, width - 8)) + 8;
    if (comparing()) {
        const auto all = drawn(*m_comparison, m_data);
        size_t perModel[2] = {0, 0};
        int64_t rows = 0;
        for (const auto& [r, tr] : all) {
            ++perModel[r->grassmann ? 0 : 1];
            rows = std::max(rows, r->top1.dim(0));
        }
        const double grid = kLinePt * (2.6 + 1.15 * static_cast<double>(rows)) + 10;
        // One column draws a grid per model (its lenses as columns at the selected token).
        const double grids = wide ? grid * static_cast<double>(std::max(perModel[0], perModel[1]))
                                  : grid * static_cast<double>((perModel[0] > 0) + (perModel[1] > 0));
        const double charts = wide ? 180 : 2 * 140;
        return (grids + charts + captionH) / width;
    }
    if (!m_evals.empty()) return ((wide ? 2 * 185 : 4 * 175) + captionH) / width;
    return wide ? 0.8 : 2.3;
}

void LensFigure::drawComparison(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const double gap = style.metrics(style.body).height();
    const bool wide = rect.width() > 5 * 72;
    const ChartData rank = readoutRankChart(), kl = readoutKlChart();
    const double chartW = wide ? (rect.width() - gap) / 2 : rect.width();
    const double needRank = chartHeightFor(rank, chartW, style), needKl = chartHeightFor(kl, chartW, style);
    const double chartsH = wide ? std::max(needRank, needKl) : needRank + gap + needKl;
    const QRectF grids(rect.left(), rect.top(), rect.width(), std::max(10.0, rect.height() - chartsH - gap));
    const QRectF charts(rect.left(), grids.bottom() + gap, rect.width(), rect.bottom() - grids.bottom() - gap);
    // The cells' colour is KL to the final layer, one scale for every grid: a key on the right.
    const QFontMetricsF fmS = style.metrics(style.small);
    const double keyW = style.colorbar ? fmS.height() * 4.2 : 0;
    const QRectF area = grids.adjusted(0, 0, -keyW, 0);
    if (!wide) {
        // One column: a grid per model, its lenses side by side at the selected token.
        std::vector<LensGridData> models;
        for (bool g : {true, false})
            if (LensGridData d = selectedTokenGrid(g); d.rows() > 0) models.push_back(std::move(d));
        double total = 0;
        for (const LensGridData& d : models)
            total += detail::panelTitleHeight(d.title, area.width(), style) + fmS.height() * 1.3 * (d.rows() + 1);
        const double avail = area.height() - gap * static_cast<double>(models.size() > 0 ? models.size() - 1 : 0);
        double y = area.top();
        for (const LensGridData& d : models) {
            const double need =
                detail::panelTitleHeight(d.title, area.width(), style) + fmS.height() * 1.3 * (d.rows() + 1);
            const double h = total > 0 ? avail * need / total : 0;
            paintLensGrid(p, QRectF(area.left(), y, area.width(), h), d, style, map);
            y += h + gap;
        }
    } else {
        // Wide: each model's lenses in a column, a window of tokens each.
        const auto all = drawn(*m_comparison, m_data);
        std::vector<const LensReadout*> cols[2];
        for (const auto& [r, tr] : all)
            cols[r->grassmann ? 0 : 1].push_back(r);
        const int nCols = !cols[1].empty() && !cols[0].empty() ? 2 : 1;
        if (cols[0].empty()) std::swap(cols[0], cols[1]);
        const double colW = (area.width() - (nCols - 1) * gap) / nCols;
        const int window = readoutWindow(colW, style);
        for (int c = 0; c < nCols; ++c) {
            const auto& list = cols[c];
            // Each grid's share of the height: its title (as it wraps) and header, then its rows.
            std::vector<double> need;
            double total = 0;
            for (const LensReadout* r : list) {
                const double h = detail::panelTitleHeight(readoutTitle(*r), colW, style) + fmS.height() * 1.3 +
                                 fmS.height() * 1.3 * static_cast<double>(r->top1.dim(0));
                need.push_back(h);
                total += h;
            }
            const double avail = area.height() - gap * static_cast<double>(list.size() - 1);
            double y = area.top();
            for (size_t i = 0; i < list.size(); ++i) {
                const double h = total > 0 ? avail * need[i] / total : 0;
                paintLensGrid(p, QRectF(area.left() + c * (colW + gap), y, colW, h), readoutGrid(*list[i], window),
                              style, map);
                y += h + gap;
            }
        }
    }
    if (style.colorbar)
        paintColorbar(p,
                      QRectF(grids.right() - keyW + fmS.height() * 0.5, grids.top() + fmS.height() * 1.5,
                             keyW - fmS.height() * 0.5, std::min(grids.height(), 160.0) - fmS.height() * 1.5),
                      ColorScale::fromRange(map, 0, readoutKlMax(), false), QStringLiteral("KL to final (nats)"),
                      style);
    const auto [first, second] = wide ? detail::splitPanels(charts, 0.5, true, gap)
                                      : detail::splitPanels(charts, needRank / (needRank + needKl), false, gap);
    if (rank.hasData()) {
        paintChart(p, first, rank, style);
    } else {
        p.save();
        p.setFont(style.body);
        p.setPen(Qt::darkGray);
        p.drawText(first, Qt::AlignCenter | Qt::TextWordWrap,
                   QStringLiteral("Token %1 is the prompt's last: it has no next token to rank.").arg(selToken()));
        p.restore();
    }
    paintChart(p, second, kl, style);
}

QString LensFigure::comparisonCaption(bool oneColumn) const {
    QStringList lenses;
    for (const auto& [r, tr] : drawn(*m_comparison, m_data)) {
        if (r->lens == "logit") continue;
        QString s = QStringLiteral("%1 lens %2 (%3): fitted on %4")
                        .arg(lensWord(r->lens), QString::fromStdString(r->folder), modelWord(r->grassmann),
                             QString::fromStdString(r->fittedOn));
        if (!r->sameModel)
            s += QStringLiteral(", not the model drawn (%1): read out on other weights, marked *")
                     .arg(QString::fromStdString(r->modelName));
        if (!r->complete) s += QStringLiteral(", a fit stopped before its budget");
        lenses << s;
    }
    QString text =
        QStringLiteral("Logit, tuned and Jacobian lenses: each residual state (rows L0 in..L%1 in, then the model's "
                       "own output, final) through the final LayerNorm and the tied head, after the lens's map "
                       "(tuned: h + A h + b; Jacobian: J h; none at L0 in, \u2014). Cells show the top-1 next token "
                       "coloured by KL(p_final \u2016 p_lens) in nats (0 to %2; bold, underlined: the actual next "
                       "token), %4. Below: the actual next token's rank after token %3 "
                       "(1 = top-1, log axis) and the mean KL over the prompt per layer.")
            .arg(std::max<int64_t>(0, m_data.layerCount() - 1))
            .arg(detail::formatValue(readoutKlMax()))
            .arg(selToken())
            .arg(oneColumn ? QStringLiteral("one column per lens, at token %1 only (the wide figure and the "
                                            "data export have the tokens around it)")
                                 .arg(selToken())
                           : QStringLiteral("tokens around token %1").arg(selToken()));
    if (!lenses.isEmpty())
        text += QStringLiteral(" Lenses: ") + lenses.join(QStringLiteral("; ")) + QStringLiteral(".");
    for (const std::string& n : m_comparison->notes)
        text += QStringLiteral(" Not drawn: %1.").arg(QString::fromStdString(n));
    return text;
}

std::vector<ChartData> LensFigure::evalCharts() const {
    struct Q {
        const char* title;
        const char* y;
        gwb::engine::Array<double> gwb::engine::LensEvalResult::*values;
        bool rank;
    };
    const Q qs[] = {{"KL(p_final \u2016 p_lens) per layer", "KL (nats)", &gwb::engine::LensEvalResult::kl, false},
                    {"Cross-entropy against the next token", "nats", &gwb::engine::LensEvalResult::ce, false},
                    {"Top-1 agreement with the final layer", "fraction", &gwb::engine::LensEvalResult::top1, false},
                    {"Mean rank of the next token (1 = top-1)", "rank", &gwb::engine::LensEvalResult::rank, true}};
    std::vector<ChartData> out;
    for (const Q& q : qs) {
        ChartData c;
        c.kind = ChartData::Kind::Line;
        c.title = QString::fromUtf8(q.title);
        c.xTitle = QStringLiteral("lens layer");
        c.yTitle = QString::fromUtf8(q.y);
        c.logY = q.rank;
        if (q.rank)
            c.yMin = 1;
        else
            c.yMin = 0;
        int idx = 0;
        for (const auto& e : m_evals) {
            const auto& v = (*e).*q.values;
            if (v.rank() != 2) continue;
            for (int64_t l = 0; l < v.dim(0) && l < static_cast<int64_t>(e->lenses.size()); ++l) {
                ChartSeries s;
                const size_t li = static_cast<size_t>(l);
                s.name = QStringLiteral("%1 %2%3").arg(
                    QString::fromStdString(e->modelName), lensWord(e->lenses[li]),
                    li < e->sameModel.size() && !e->sameModel[li] ? QStringLiteral(" *") : QString());
                s.color = seriesColor(idx++);
                for (int64_t st = 0; st < v.dim(1); ++st) {
                    s.x.push_back(static_cast<double>(st));
                    s.y.push_back(v.at2(l, st) + (q.rank ? 1.0 : 0.0));
                }
                c.series.push_back(s);
            }
            if (c.categories.isEmpty())
                for (int64_t st = 0; st < v.dim(1); ++st)
                    c.categories << QStringLiteral("L%1 in").arg(st);
        }
        out.push_back(c);
    }
    return out;
}

void LensFigure::drawEval(QPainter& p, const QRectF& rect, const FigureStyle& style) const {
    const double gap = style.metrics(style.body).height();
    const bool wide = rect.width() > 5 * 72;
    const std::vector<ChartData> charts = evalCharts();
    const int cols = wide ? 2 : 1, rows = (static_cast<int>(charts.size()) + cols - 1) / cols;
    const double w = (rect.width() - (cols - 1) * gap) / cols, h = (rect.height() - (rows - 1) * gap) / rows;
    for (size_t i = 0; i < charts.size(); ++i) {
        const int r = static_cast<int>(i) / cols, c = static_cast<int>(i) % cols;
        paintChart(p, QRectF(rect.left() + c * (w + gap), rect.top() + r * (h + gap), w, h), charts[i], style);
    }
}

QString LensFigure::evalCaption() const {
    QStringList files;
    for (const auto& e : m_evals) {
        QStringList lenses;
        for (size_t i = 1; i < e->lenses.size(); ++i)
            lenses << QStringLiteral("%1 %2 (fitted on %3%4)")
                          .arg(lensWord(e->lenses[i]), QString::fromStdString(e->lensFolders[i]),
                               QString::fromStdString(e->lensModels[i]),
                               e->sameModel[i] ? QString() : QStringLiteral(", another model: *"));
        files << QStringLiteral("%1, %2 prompts, %3 positions%4")
                     .arg(QString::fromStdString(e->modelName))
                     .arg(e->prompts)
                     .arg(e->positions)
                     .arg(lenses.isEmpty() ? QString() : QStringLiteral(": ") + lenses.join(QStringLiteral(", ")));
    }
    return QStringLiteral("gwb lens eval per residual state (L s in, s = 0..N-1), means over every position with a "
                          "next token of held-out text: KL(p_final \u2016 p_lens) in nats, cross-entropy against the "
                          "next token, top-1 agreement with the final layer and the next token's mean rank (log axis). "
                          "The Jacobian lens has no map at L0 in. ") +
           files.join(QStringLiteral("; ")) + QStringLiteral(".");
}

std::vector<DataTable> LensFigure::comparisonTables() const {
    std::vector<DataTable> out;
    if (comparing()) {
        int i = 0;
        for (const auto& [r, tr] : drawn(*m_comparison, m_data)) {
            const QString key = QStringLiteral("%1_%2_%3")
                                    .arg(r->grassmann ? QStringLiteral("grassmann") : QStringLiteral("transformer"),
                                         QString::fromStdString(r->lens))
                                    .arg(i++);
            const int64_t rows = r->kl.dim(0);
            DataTable kl;
            kl.name = QStringLiteral("lens_kl_%1").arg(key);
            kl.quantity = QStringLiteral("KL(p_final || p_lens) per lens layer and token, %1").arg(readoutTitle(*r));
            kl.units = QStringLiteral("nats");
            kl.values = r->kl;
            kl.rowAxis = QStringLiteral("lens layer");
            kl.colAxis = QStringLiteral("token");
            for (int64_t l = 0; l < rows; ++l)
                kl.rowLabels << layerLabel(l, rows - 1);
            kl.colLabels = tokenLabels(*tr);
            DataTable rank = kl;
            rank.name = QStringLiteral("lens_next_rank_%1").arg(key);
            rank.quantity = QStringLiteral("rank (0 = top-1) of the actual next token; NaN at the last token");
            rank.units.clear();
            std::vector<float> v;
            for (int32_t x : r->nextRank.data)
                v.push_back(x < 0 ? std::nanf("") : static_cast<float>(x));
            rank.values = gwb::engine::FloatArray(r->nextRank.shape, v);
            DataTable prob = rank;
            prob.name = QStringLiteral("lens_top1_prob_%1").arg(key);
            prob.quantity = QStringLiteral("probability of the top-1 next token");
            prob.values = r->top1Prob;
            out.push_back(kl);
            out.push_back(rank);
            out.push_back(prob);
        }
    }
    int f = 0;
    for (const auto& e : m_evals) {
        const auto table = [&](const char* name, const gwb::engine::Array<double>& a, const char* units) {
            DataTable t;
            t.name = QStringLiteral("lens_eval_%1_%2").arg(QString::fromUtf8(name)).arg(f);
            t.quantity = QStringLiteral("gwb lens eval %1 per lens and layer, %2")
                             .arg(QString::fromUtf8(name), QString::fromStdString(e->modelName));
            t.units = QString::fromUtf8(units);
            std::vector<float> v(a.data.begin(), a.data.end());
            t.values = gwb::engine::FloatArray(a.shape, v);
            t.rowAxis = QStringLiteral("lens");
            t.colAxis = QStringLiteral("lens layer");
            for (const std::string& l : e->lenses)
                t.rowLabels << lensWord(l);
            for (int64_t s = 0; s < a.dim(1); ++s)
                t.colLabels << QStringLiteral("L%1 in").arg(s);
            out.push_back(t);
        };
        table("kl", e->kl, "nats");
        table("ce", e->ce, "nats");
        table("top1", e->top1, "");
        table("rank", e->rank, "");
        ++f;
    }
    return out;
}

} // namespace gwb::views
