#include "gwb/views/saliency_view.h"

#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/compare_view.h"
#include "gwb/views/selection_policy.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <functional>

namespace gwb::views {

namespace {
constexpr int kMaxBars = 24; ///< past tokens shown in bars and chips (the most recent ones)

/// Paints through a callback (the chip rows), so the widget and the figure share one painter.
class PaintBox : public QWidget {
public:
    explicit PaintBox(QWidget* parent) : QWidget(parent) { setMinimumHeight(70); }
    std::function<void(QPainter&, const QRectF&)> paint;

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), Qt::white);
        if (paint) paint(p, QRectF(rect()).adjusted(4, 4, -4, -4));
    }
};
} // namespace

SaliencyView::SaliencyView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    bar->addWidget(new QLabel(QStringLiteral("Target"), this));
    m_target = new QLineEdit(this);
    m_target->setObjectName(QStringLiteral("saliencyTarget"));
    m_target->setPlaceholderText(QStringLiteral("actual next token"));
    m_target->setToolTip(QStringLiteral("A vocabulary piece to explain instead of the actual next token "
                                        "(Enter to compute; empty = actual next token)"));
    bar->addWidget(m_target);
    auto* go = new QPushButton(QStringLiteral("Compute"), this);
    bar->addWidget(go);
    bar->addStretch(1);
    auto* map = detail::addColormapCombo(bar, this);
    layout->addLayout(bar);
    // Errors and states on a row of their own: a long one wraps instead of squeezing the Target field.
    m_status = detail::messageLabel(this, QStringLiteral("saliencyStatus"));
    layout->addWidget(m_status);
    auto* chips = new PaintBox(this);
    chips->paint = [this](QPainter& p, const QRectF& r) {
        paintChips(p, r, FigureStyle::forScreen(font()), colormapId());
    };
    m_chips = chips;
    layout->addWidget(m_chips);
    auto* split = new QSplitter(Qt::Horizontal, this);
    m_chart = new ChartWidget(split);
    m_table = new QTableWidget(split);
    m_table->setObjectName(QStringLiteral("saliencyTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    // The row names take what the numbers leave (elided, whole in the tooltip): the last column
    // is never cut off at 1280 x 720.
    m_table->setWordWrap(false);
    m_table->setTextElideMode(Qt::ElideRight);
    split->addWidget(m_chart);
    split->addWidget(m_table);
    split->setSizes({650, 350}); // applied proportionally when shown
    layout->addWidget(split, 1);
    connect(m_target, &QLineEdit::returnPressed, this, [this] { refresh(); });
    connect(m_target, &QLineEdit::textEdited, this, [this] { m_targetNote.clear(); });
    connect(go, &QPushButton::clicked, this, [this] { refresh(); });
    connect(map, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    refresh();
}

QString SaliencyView::target() const {
    return m_target->text().trimmed().isEmpty() ? QString() : m_target->text();
}

void SaliencyView::setTarget(const QString& piece) {
    m_target->setText(piece);
    m_targetNote.clear();
    refresh();
    Q_EMIT settingsChanged();
}

void SaliencyView::releaseTarget(const QString& reason) {
    if (target().isEmpty()) return;
    const QString note = QStringLiteral("target '%1' cleared: %2").arg(target(), reason);
    setTarget({});
    m_targetNote = note;
    refresh();
}

QJsonObject SaliencyView::settings() const {
    QJsonObject o = View::settings();
    o.insert(QStringLiteral("target"), target());
    return o;
}

void SaliencyView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    if (s.contains(QStringLiteral("target"))) setTarget(s.value(QStringLiteral("target")).toString());
}

QString SaliencyView::missingDataMessage() const {
    return detail::noModelMessage(QString());
}

bool SaliencyView::hasContent() const {
    return m_data.primary() != nullptr;
}

bool SaliencyView::resultCurrent() const {
    return m_result.token == selToken() && QString::fromStdString(m_result.target) == target() &&
           m_requestedData == m_data.primary().get() &&
           (!m_result.grassmann.empty() || !m_result.baseline.empty() || !m_result.grassmannError.empty() ||
            !m_result.baselineError.empty());
}

void SaliencyView::setSaliency(const SaliencyResult& result) {
    if (result.token != selToken() || QString::fromStdString(result.target) != target()) return; // stale
    m_result = result;
    m_requestedData = m_data.primary().get();
    m_requestedToken = result.token;
    m_requestedTarget = QString::fromStdString(result.target);
    requestRefresh();
}

void SaliencyView::requestIfNeeded() {
    const void* data = m_data.primary().get();
    if (m_requestedToken == selToken() && m_requestedTarget == target() && m_requestedData == data) return;
    m_requestedToken = selToken();
    m_requestedTarget = target();
    m_requestedData = data;
    m_result = SaliencyResult{};
    Q_EMIT saliencyRequested(selToken(), target());
}

std::vector<float> SaliencyView::grassmannInfluence(int64_t t) const {
    const auto* a = detail::grassmannAnalysis(m_data, selLayer());
    return a ? influenceRow(*a, t) : std::vector<float>{};
}

std::vector<float> SaliencyView::attentionMean(int64_t t) const {
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

std::vector<SaliencyView::Comparison> SaliencyView::comparisons() const {
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

ChartData SaliencyView::barChart() const {
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

void SaliencyView::paintChips(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
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
    int row = 0;
    for (auto [name, s, err] :
         {std::tuple{QStringLiteral("Grassmann"), &m_result.grassmann, &m_result.grassmannError},
          std::tuple{QStringLiteral("Transformer"), &m_result.baseline, &m_result.baselineError}}) {
        const double y = rect.top() + row * (rowH + 2);
        ++row;
        p.setPen(Qt::black);
        p.drawText(QRectF(rect.left(), y, labelW, rowH), Qt::AlignLeft | Qt::AlignVCenter, name);
        if (!resultCurrent() || s->empty()) {
            const QString why = !resultCurrent() ? QStringLiteral("computing\u2026")
                                : err->empty()   ? QStringLiteral("\u2014 (model not loaded)")
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

void SaliencyView::refresh() {
    m_chips->update();
    if (!hasContent()) {
        m_chart->setPlaceholder(missingDataMessage());
        m_table->setRowCount(0);
        m_status->clear();
        return;
    }
    requestIfNeeded();
    const QString tgt =
        target().isEmpty() ? QStringLiteral("the actual next token") : QStringLiteral("'%1'").arg(target());
    if (!resultCurrent()) {
        m_status->setText(QStringLiteral("Computing saliency of %1 at token %2\u2026").arg(tgt).arg(selToken()) +
                          (m_targetNote.isEmpty() ? QString() : QStringLiteral(" \u00b7 ") + m_targetNote));
        m_chart->setPlaceholder(QStringLiteral("Computing gradient \u00d7 input saliency\u2026"));
        m_table->setRowCount(0);
        return;
    }
    QStringList errs;
    if (!m_result.grassmannError.empty())
        errs << QStringLiteral("Grassmann: ") + QString::fromStdString(m_result.grassmannError);
    if (!m_result.baselineError.empty())
        errs << QStringLiteral("Transformer: ") + QString::fromStdString(m_result.baselineError);
    QString status = errs.isEmpty() ? QStringLiteral("Target %1 ('%2' / '%3')")
                                          .arg(tgt, QString::fromStdString(m_result.grassmannTarget),
                                               QString::fromStdString(m_result.baselineTarget))
                                    : errs.join(QStringLiteral("; "));
    if (!m_targetNote.isEmpty()) status += QStringLiteral(" \u00b7 ") + m_targetNote;
    m_status->setText(status);
    const ChartData c = barChart();
    if (c.hasData())
        m_chart->setChart(c);
    else
        m_chart->setPlaceholder(errs.isEmpty() ? QStringLiteral("No saliency") : errs.join(QLatin1Char('\n')));
    const auto comps = comparisons();
    m_table->setColumnCount(3);
    m_table->setHorizontalHeaderLabels({QStringLiteral("saliency vs (layer %1)").arg(selLayer()),
                                        QStringLiteral("JS (nats)"), QStringLiteral("top-1 agrees")});
    m_table->setRowCount(static_cast<int>(comps.size()));
    for (int i = 0; i < static_cast<int>(comps.size()); ++i) {
        const auto& cmp = comps[static_cast<size_t>(i)];
        const QString why =
            QStringLiteral("Undefined: one of the rows is all zero (e.g. no valid offset at token %1)").arg(selToken());
        auto* name = new QTableWidgetItem(cmp.name);
        name->setToolTip(cmp.name);
        m_table->setItem(i, 0, name);
        m_table->setItem(i, 1, detail::valueItem(cmp.js, why));
        auto* top1 = new QTableWidgetItem(std::isnan(cmp.js) ? QStringLiteral("\u2014")
                                          : cmp.top1         ? QStringLiteral("yes")
                                                             : QStringLiteral("no"));
        if (std::isnan(cmp.js)) top1->setToolTip(why);
        m_table->setItem(i, 2, top1);
    }
    m_table->resizeColumnsToContents();
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_table->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setMinimumSectionSize(40);
}

std::vector<DataTable> SaliencyView::dataTables() const {
    std::vector<DataTable> out;
    if (!resultCurrent()) return out;
    const int64_t t = selToken();
    for (auto [name, s] : {std::pair{QStringLiteral("grassmann"), &m_result.grassmann},
                           std::pair{QStringLiteral("transformer"), &m_result.baseline}}) {
        if (s->empty()) continue;
        DataTable tab;
        tab.name = QStringLiteral("saliency_%1_token%2").arg(name).arg(t);
        tab.quantity = QStringLiteral("gradient x input saliency of log p(target | x_<=t) per input token (signed), "
                                      "target %1")
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

QString SaliencyView::caption() const {
    return QStringLiteral(
               "Gradient \u00d7 input saliency s_j = \u03a3_d (\u2202 log p(target | x_\u2264t) / \u2202 h0_j,d) "
               "h0_j,d of token t = %1 for target %2, both models, shown as shares |s_j| / \u03a3|s| "
               "(chips: normalized to the largest), next to the Grassmann influence row and the mean "
               "attention row of layer %3; JS divergence and top-1 agreement as in the Compare view.")
        .arg(selToken())
        .arg(target().isEmpty() ? QStringLiteral("= the actual next token") : QStringLiteral("'%1'").arg(target()))
        .arg(selLayer());
}

void SaliencyView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
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
