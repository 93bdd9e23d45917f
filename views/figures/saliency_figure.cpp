#include "gwb/views/saliency_figure.h"

#include "figure_common.h"
#include "plot_util.h"

#include "gwb/views/row_comparison.h"

#include <QPainter>
#include <algorithm>
#include <cmath>
#include <tuple>

namespace gwb::views {

namespace {
constexpr int kMaxBars = 24; ///< past tokens shown in bars and chips (the most recent ones)
} // namespace

QJsonObject SaliencyFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("target"), target());
    return o;
}

void SaliencyFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    if (s.contains(QStringLiteral("target"))) m_target = s.value(QStringLiteral("target")).toString();
}

QString SaliencyFigure::target() const {
    return m_target.trimmed().isEmpty() ? QString() : m_target;
}

QString SaliencyFigure::missingDataMessage() const {
    return detail::noModelMessage(QString());
}

bool SaliencyFigure::hasContent() const {
    return m_data.primary() != nullptr;
}

bool SaliencyFigure::resultCurrent() const {
    return m_result.token == selToken() && QString::fromStdString(m_result.target) == target() &&
           m_resultData == m_data.primary().get() &&
           (!m_result.grassmann.empty() || !m_result.baseline.empty() || !m_result.grassmannError.empty() ||
            !m_result.baselineError.empty());
}

bool SaliencyFigure::setSaliency(const SaliencyResult& result) {
    if (result.token != selToken() || QString::fromStdString(result.target) != target()) return false; // stale
    m_result = result;
    m_resultData = m_data.primary().get();
    return true;
}

std::vector<float> SaliencyFigure::grassmannInfluence(int64_t t) const {
    const auto* a = detail::grassmannAnalysis(m_data, selLayer());
    return a ? influenceRow(*a, t) : std::vector<float>{};
}

std::vector<float> SaliencyFigure::attentionMean(int64_t t) const {
    if (!m_data.baseline || selLayer() >= static_cast<int>(m_data.baseline->layers.size())) return {};
    const auto& L = m_data.baseline->layers[static_cast<size_t>(selLayer())];
    if (!L.attention || t >= m_data.baseline->length()) return {};
    std::vector<float> mean(static_cast<size_t>(t + 1), 0.0f);
    for (int64_t h = 0; h < L.attention->nHeads; ++h) {
        const std::vector<float> row = gwb::engine::attentionRow(*L.attention, h, t);
        for (size_t j = 0; j < row.size() && j < mean.size(); ++j)
            mean[j] += row[j] / static_cast<float>(L.attention->nHeads);
    }
    return mean;
}

std::vector<SaliencyFigure::Comparison> SaliencyFigure::comparisons() const {
    std::vector<Comparison> out;
    if (!resultCurrent()) return out;
    const int64_t t = selToken();
    const std::vector<float> g = saliencyShares(m_result.grassmann, t);
    const std::vector<float> b = saliencyShares(m_result.baseline, t);
    auto add = [&](const QString& name, const std::vector<float>& x, const std::vector<float>& y) {
        if (x.empty() || y.empty()) return;
        const RowComparison r = compareDistributions(x, y);
        out.push_back({name, r.jsDivergence, r.top1Agrees});
    };
    add(QStringLiteral("Grassmann vs influence"), g, grassmannInfluence(t));
    add(QStringLiteral("Transformer vs mean attention"), b, attentionMean(t));
    if (m_data.baseline && selLayer() < static_cast<int>(m_data.baseline->layers.size())) {
        const auto& L = m_data.baseline->layers[static_cast<size_t>(selLayer())];
        if (L.attention && t < m_data.baseline->length())
            for (int64_t h = 0; h < L.attention->nHeads; ++h)
                add(QStringLiteral("Transformer vs head %1").arg(h), b, gwb::engine::attentionRow(*L.attention, h, t));
    }
    add(QStringLiteral("Grassmann vs Transformer"), g, b);
    return out;
}

ChartData SaliencyFigure::barChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Bar;
    const auto primary = m_data.primary();
    if (!primary || !resultCurrent()) return c;
    const int64_t t = std::min<int64_t>(selToken(), primary->length() - 1);
    const int64_t first = std::max<int64_t>(0, t + 1 - kMaxBars);
    const QStringList tokens = tokenLabels(*primary);
    c.title = QStringLiteral("Token %1: saliency share |s_j| / \u03a3|s| vs influence and attention (layer %2)")
                  .arg(t)
                  .arg(selLayer());
    c.xTitle = QStringLiteral("past token j");
    c.yTitle = QStringLiteral("share");
    for (int64_t j = first; j <= t; ++j)
        c.categories << QStringLiteral("%1 %2").arg(j).arg(detail::labelText(tokens[static_cast<int>(j)]));
    auto series = [&](const QString& name, const std::vector<float>& v, int color) {
        if (v.empty()) return;
        ChartSeries s;
        s.name = name;
        s.color = seriesColor(color);
        for (int64_t j = first; j <= t; ++j)
            s.y.push_back(j < static_cast<int64_t>(v.size()) ? v[static_cast<size_t>(j)] : std::nan(""));
        c.series.push_back(s);
    };
    series(QStringLiteral("Grassmann saliency"), saliencyShares(m_result.grassmann, t), 0);
    series(QStringLiteral("Transformer saliency"), saliencyShares(m_result.baseline, t), 1);
    series(QStringLiteral("Grassmann influence"), grassmannInfluence(t), 2);
    series(QStringLiteral("mean attention"), attentionMean(t), 3);
    return c;
}

void SaliencyFigure::paintChips(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const auto primary = m_data.primary();
    p.save();
    p.setFont(style.small);
    const QFontMetricsF fm = style.metrics(style.small);
    if (!primary) {
        p.drawText(rect, Qt::AlignCenter, missingDataMessage());
        p.restore();
        return;
    }
    const int64_t t = std::min<int64_t>(selToken(), primary->length() - 1);
    const QStringList tokens = tokenLabels(*primary);
    const double labelW = fm.horizontalAdvance(QStringLiteral("Transformer ")) + 4;
    const double rowH = std::min(rect.height() / 2, fm.height() * 1.8);
    // As many of the most recent tokens as fit whole, each chip as wide as its piece; the
    // spare width is shared out.
    const double pad = fm.height() * 0.6;
    std::vector<double> natural; // t, t-1, ...
    double used = 0;
    for (int64_t j = t; j >= 0 && t - j < kMaxBars; --j) {
        const double w = fm.horizontalAdvance(detail::labelText(tokens[static_cast<int>(j)])) + pad;
        if (!natural.empty() && used + w > rect.width() - labelW) break;
        natural.push_back(w);
        used += w;
    }
    const int64_t first = t + 1 - static_cast<int64_t>(natural.size());
    const double extra = std::max(0.0, rect.width() - labelW - used) / static_cast<double>(natural.size());
    std::vector<double> chipX; // left edge of chip j - first, then the right end
    double x0 = rect.left() + labelW;
    for (int64_t j = first; j <= t; ++j) {
        chipX.push_back(x0);
        x0 += natural[static_cast<size_t>(t - j)] + extra;
    }
    chipX.push_back(x0);
    const ColorScale scale = ColorScale::fromRange(map, 0, 1, false);
    const bool current = resultCurrent();
    int row = 0;
    for (auto [name, s, err] :
         {std::tuple{QStringLiteral("Grassmann"), &m_result.grassmann, &m_result.grassmannError},
          std::tuple{QStringLiteral("Transformer"), &m_result.baseline, &m_result.baselineError}}) {
        const double y = rect.top() + row * (rowH + 2);
        ++row;
        p.setPen(Qt::black);
        p.drawText(QRectF(rect.left(), y, labelW, rowH), Qt::AlignLeft | Qt::AlignVCenter, name);
        if (!current || s->empty()) {
            const QString why = !current       ? QStringLiteral("computing\u2026")
                                : err->empty() ? QStringLiteral("\u2014 (model not loaded)")
                                               : QStringLiteral("\u2014 ") + QString::fromStdString(*err);
            p.drawText(QRectF(rect.left() + labelW, y, rect.width() - labelW, rowH),
                       Qt::AlignLeft | Qt::AlignVCenter | Qt::TextWordWrap, why);
            continue;
        }
        const std::vector<float> share = saliencyShares(*s, t);
        const float top = share.empty() ? 1.0f : std::max(1e-12f, *std::max_element(share.begin(), share.end()));
        for (int64_t j = first; j <= t; ++j) {
            const size_t k = static_cast<size_t>(j - first);
            const QRectF chip(chipX[k], y, chipX[k + 1] - chipX[k] - 2, rowH);
            const float v = j < static_cast<int64_t>(share.size()) ? share[static_cast<size_t>(j)] / top : 0.0f;
            const QColor bg = QColor::fromRgb(scale.color(v));
            p.setPen(Qt::NoPen);
            p.setBrush(bg);
            p.drawRoundedRect(chip, 3, 3);
            const double lum = 0.2126 * bg.redF() + 0.7152 * bg.greenF() + 0.0722 * bg.blueF();
            p.setPen(lum > 0.5 ? Qt::black : Qt::white);
            p.drawText(chip, Qt::AlignCenter | Qt::TextDontClip, detail::labelText(tokens[static_cast<int>(j)]));
            if (j == t) {
                p.setPen(QPen(QColor(220, 30, 30), 1.5));
                p.setBrush(Qt::NoBrush);
                p.drawRoundedRect(chip, 3, 3);
            }
        }
    }
    p.restore();
}

std::vector<DataTable> SaliencyFigure::dataTables() const {
    std::vector<DataTable> out;
    if (!resultCurrent()) return out;
    const int64_t t = selToken();
    for (auto [name, s] : {std::pair{QStringLiteral("grassmann"), &m_result.grassmann},
                           std::pair{QStringLiteral("transformer"), &m_result.baseline}}) {
        if (s->empty()) continue;
        DataTable tab;
        tab.name = QStringLiteral("saliency_%1_token%2").arg(name).arg(t);
        tab.quantity = QStringLiteral("gradient x input saliency of log p(target | x_<=t) per input token (signed; "
                                      "a contrast 'A - W': of log p(A) - log p(W) = logit[A] - logit[W]), target %1")
                           .arg(target().isEmpty() ? QStringLiteral("actual next token") : target());
        tab.values = gwb::engine::FloatArray({static_cast<int64_t>(s->size())}, *s);
        tab.rowAxis = QStringLiteral("token");
        if (const auto tr = name == QLatin1String("grassmann") ? m_data.grassmann : m_data.baseline)
            tab.rowLabels = tokenLabels(*tr);
        out.push_back(tab);
    }
    const auto comps = comparisons();
    if (!comps.empty()) {
        DataTable tab;
        tab.name = QStringLiteral("saliency_agreement_token%1_layer%2").arg(t).arg(selLayer());
        tab.quantity = QStringLiteral("JS divergence (nats) and top-1 agreement (1/0) of the saliency shares with "
                                      "influence / attention rows");
        tab.definitionKey = QStringLiteral("jsDivergence");
        std::vector<float> v;
        for (const auto& c : comps) {
            v.push_back(static_cast<float>(c.js));
            v.push_back(std::isnan(c.js) ? std::nanf("") : (c.top1 ? 1.0f : 0.0f));
            tab.rowLabels << c.name;
        }
        tab.values = gwb::engine::FloatArray({static_cast<int64_t>(comps.size()), 2}, v);
        tab.rowAxis = QStringLiteral("comparison");
        tab.colAxis = QStringLiteral("metric");
        tab.colLabels = {QStringLiteral("js_nats"), QStringLiteral("top1_agrees")};
        out.push_back(tab);
    }
    return out;
}

QString SaliencyFigure::caption() const {
    return QStringLiteral(
               "Gradient \u00d7 input saliency s_j = \u03a3_d (\u2202 log p(target | x_\u2264t) / \u2202 h0_j,d) "
               "h0_j,d of token t = %1 for target %2, both models, shown as shares |s_j| / \u03a3|s| "
               "(chips: normalized to the largest; a target 'A - W' is the contrast log p(A) \u2212 log p(W) = "
               "logit[A] \u2212 logit[W]), next to the Grassmann influence row and the mean "
               "attention row of layer %3; JS divergence and top-1 agreement as in the Compare view.")
        .arg(selToken())
        .arg(target().isEmpty() ? QStringLiteral("= the actual next token") : QStringLiteral("'%1'").arg(target()))
        .arg(selLayer());
}

void SaliencyFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const double gap = style.metrics(style.body).height();
    const double chipsH = style.metrics(style.small).height() * 4;
    paintChips(p, QRectF(rect.left(), rect.top(), rect.width(), chipsH), style, map);
    const QRectF rest(rect.left(), rect.top() + chipsH + gap * 0.5, rect.width(), rect.height() - chipsH - gap * 0.5);
    const auto [chartRect, listRect] = detail::splitPanels(rest, 0.7, false, gap);
    paintChart(p, chartRect, barChart(), style);
    p.save();
    p.setFont(style.small);
    p.setPen(Qt::black);
    const double lineH = style.metrics(style.small).height() * 1.2;
    double y = listRect.top();
    for (const auto& c : comparisons()) {
        if (y + lineH > listRect.bottom()) break;
        const QString line = QStringLiteral("%1: JS %2, top-1 %3")
                                 .arg(c.name, detail::formatValue(c.js),
                                      std::isnan(c.js) ? QStringLiteral("\u2014")
                                      : c.top1         ? QStringLiteral("yes")
                                                       : QStringLiteral("no"));
        p.drawText(QRectF(listRect.left(), y, listRect.width(), lineH), Qt::AlignLeft | Qt::AlignVCenter, line);
        y += lineH;
    }
    p.restore();
}

} // namespace gwb::views
