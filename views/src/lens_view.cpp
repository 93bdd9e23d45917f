#include "gwb/views/lens_view.h"

#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/heatmap_painter.h"
#include "gwb/views/selection_policy.h"

#include <QHeaderView>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QPainter>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <functional>

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

// "L2 in" = the input state of layer (block) 2; not "h2", which reads like attention head H2.
QString layerLabel(int64_t l, int64_t N) {
    return l == N ? QStringLiteral("final") : QStringLiteral("L%1 in").arg(l);
}

/// Cell geometry shared by the widget (clicks) and the painter.
struct GridGeometry {
    QRectF cells;
    double labelW = 0, headerH = 0, cw = 0, ch = 0;
};

GridGeometry gridGeometry(const QRectF& rect, const LensGridData& d, const QFontMetricsF& fm) {
    GridGeometry g;
    for (const QString& r : d.rowLabels)
        g.labelW = std::max(g.labelW, fm.horizontalAdvance(r));
    g.labelW += fm.height() * 0.6;
    g.headerH = fm.height() * 1.3;
    g.cells = QRectF(rect.left() + g.labelW, rect.top() + g.headerH, std::max(1.0, rect.width() - g.labelW),
                     std::max(1.0, rect.height() - g.headerH));
    g.cw = d.cols() > 0 ? g.cells.width() / d.cols() : 0;
    g.ch = d.rows() > 0 ? g.cells.height() / d.rows() : 0;
    return g;
}
} // namespace

void paintLensGrid(QPainter& p, const QRectF& rectIn, const LensGridData& d, const FigureStyle& style, ColormapId map) {
    QRectF rect = detail::paintPanelTitle(p, rectIn, d.title, style);
    if (d.rows() == 0 || d.cols() == 0) return;
    p.save();
    p.setFont(style.small);
    const QFontMetricsF fm = style.metrics(style.small);
    const GridGeometry g = gridGeometry(rect, d, fm);
    const ColorScale scale = ColorScale::fromRange(map, 0, 1, false);
    p.setPen(Qt::black);
    // Pieces are never cut below 12 characters (labelText); a piece wider than its cell is drawn
    // in a smaller font, down to 70% (the figure picks a window whose pieces fit; see drawFigure).
    auto fitted = [&](const QString& text, double width, const QFont& base) {
        const double w = style.metrics(base).horizontalAdvance(text);
        return w > width && w > 0 ? detail::scaledFont(base, std::max(0.7, width / w)) : base;
    };
    for (int c = 0; c < d.cols(); ++c) {
        const QString label = detail::labelText(d.colLabels[c]);
        p.setFont(fitted(label, g.cw, style.small));
        p.drawText(QRectF(g.cells.left() + c * g.cw, rect.top(), g.cw, g.headerH), Qt::AlignCenter | Qt::TextDontClip,
                   label);
    }
    p.setFont(style.small);
    for (int r = 0; r < d.rows(); ++r) {
        p.setPen(Qt::black);
        p.drawText(QRectF(rect.left(), g.cells.top() + r * g.ch, g.labelW - 2, g.ch), Qt::AlignRight | Qt::AlignVCenter,
                   d.rowLabels[r]);
        for (int c = 0; c < d.cols(); ++c) {
            const size_t i = static_cast<size_t>(r * d.cols() + c);
            const QRectF cell(g.cells.left() + c * g.cw, g.cells.top() + r * g.ch, g.cw, g.ch);
            const float v = d.prob[i];
            const QColor bg = std::isnan(v) ? QColor::fromRgb(kNanColor) : QColor::fromRgb(scale.color(v));
            p.fillRect(cell, bg);
            const double lum = 0.2126 * bg.redF() + 0.7152 * bg.greenF() + 0.0722 * bg.blueF();
            p.setPen(lum > 0.5 ? Qt::black : Qt::white);
            QFont f = style.small;
            f.setBold(d.hitsNext[i]);
            const QString piece = detail::labelText(d.text[i]);
            p.setFont(fitted(piece, cell.width() - 2, f));
            p.drawText(cell.adjusted(1, 0, -1, 0), Qt::AlignCenter | Qt::TextDontClip, piece);
            p.setFont(style.small);
            if (d.hitsNext[i]) {
                p.setPen(QPen(Qt::white, 1.2));
                p.drawLine(cell.bottomLeft() + QPointF(2, -2), cell.bottomRight() + QPointF(-2, -2));
            }
        }
    }
    if (style.selection && d.markCol >= 0 && d.markCol < d.cols()) {
        p.setPen(QPen(QColor(220, 30, 30), 1.5));
        p.setBrush(Qt::NoBrush);
        p.drawRect(QRectF(g.cells.left() + d.markCol * g.cw, g.cells.top(), g.cw, g.cells.height()));
        if (d.markRow >= 0 && d.markRow < d.rows())
            p.drawRect(QRectF(g.cells.left() + d.markCol * g.cw, g.cells.top() + d.markRow * g.ch, g.cw, g.ch)
                           .adjusted(1.5, 1.5, -1.5, -1.5));
    }
    p.restore();
}

/// On-screen lens grid: paints with paintLensGrid, reports clicked cells.
class LensGrid : public QWidget {
public:
    explicit LensGrid(QWidget* parent) : QWidget(parent) { setMinimumSize(200, 120); }
    void setGrid(const LensGridData& d, ColormapId map) {
        m_data = d;
        m_map = map;
        m_placeholder.clear();
        update();
    }
    void setPlaceholder(const QString& text) {
        m_data = {};
        m_placeholder = text;
        update();
    }
    const LensGridData& grid() const { return m_data; }
    std::function<void(int row, int64_t token)> onClick;
    std::function<void()> onResize; ///< the size changed: the view picks the arrangement and how many tokens fit

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), Qt::white);
        if (!m_placeholder.isEmpty()) {
            p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap, m_placeholder);
            return;
        }
        paintLensGrid(p, QRectF(rect()).adjusted(4, 4, -4, -4), m_data, FigureStyle::forScreen(font()), m_map);
    }
    void resizeEvent(QResizeEvent* e) override {
        QWidget::resizeEvent(e);
        if (onResize) onResize();
    }
    void mousePressEvent(QMouseEvent* e) override {
        if (!onClick || m_data.rows() == 0) return;
        const FigureStyle style = FigureStyle::forScreen(font());
        // Same layout as the painter: the (wrapped) title, then the grid.
        const QRectF inner = QRectF(rect()).adjusted(4, 4, -4, -4);
        const QRectF area = inner.adjusted(0, detail::panelTitleHeight(m_data.title, inner.width(), style), 0, 0);
        const GridGeometry g = gridGeometry(area, m_data, style.metrics(style.small));
        if (!g.cells.contains(e->position()) || g.cw <= 0 || g.ch <= 0) return;
        const int c = static_cast<int>((e->position().x() - g.cells.left()) / g.cw);
        const int r = static_cast<int>((e->position().y() - g.cells.top()) / g.ch);
        onClick(std::clamp(r, 0, m_data.rows() - 1), m_data.firstToken + std::clamp(c, 0, m_data.cols() - 1));
    }

private:
    LensGridData m_data;
    ColormapId m_map = ColormapId::Viridis;
    QString m_placeholder;
};

LensView::LensView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    auto* map = detail::addColormapCombo(bar, this);
    bar->addStretch();
    layout->addLayout(bar);
    auto* vsplit = new QSplitter(Qt::Vertical, this);
    auto* grids = new QSplitter(Qt::Horizontal, vsplit);
    m_grassmannGrid = new LensGrid(grids);
    m_baselineGrid = new LensGrid(grids);
    m_grassmannGrid->onResize = [this] { refreshGrids(); }; // the grids are as wide as each other
    m_baselineGrid->onResize = [this] { refreshGrids(); };
    grids->addWidget(m_grassmannGrid);
    grids->addWidget(m_baselineGrid);
    auto* bottom = new QSplitter(Qt::Horizontal, vsplit);
    m_table = new QTableWidget(bottom);
    m_table->setObjectName(QStringLiteral("lensTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_rank = new ChartWidget(bottom);
    bottom->addWidget(m_table);
    bottom->addWidget(m_rank);
    vsplit->addWidget(grids);
    vsplit->addWidget(bottom);
    vsplit->setSizes({560, 340}); // applied proportionally when shown
    bottom->setSizes({450, 550});
    // Seven lens layers readable; at 1280 x 720 the grids, the top-K and the chart fit together.
    m_grassmannGrid->setMinimumHeight(150);
    m_baselineGrid->setMinimumHeight(150);
    layout->addWidget(vsplit, 1);
    connect(map, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    auto click = [this](int row, int64_t token) {
        setLensLayer(row);
        if (selection()) selection()->setToken(static_cast<int>(token));
    };
    m_grassmannGrid->onClick = click;
    m_baselineGrid->onClick = click;
    refresh();
}

void LensView::setLensLayer(int l) {
    if (l == m_lensLayer) return;
    m_lensLayer = l;
    refresh();
    Q_EMIT settingsChanged();
}

QJsonObject LensView::settings() const {
    QJsonObject o = View::settings();
    o.insert(QStringLiteral("lensLayer"), m_lensLayer);
    return o;
}

void LensView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
    if (s.contains(QStringLiteral("lensLayer"))) setLensLayer(s.value(QStringLiteral("lensLayer")).toInt());
}

QString LensView::missingDataMessage() const {
    if (!m_data.grassmann && !m_data.baseline) return detail::noModelMessage(QString());
    if (m_data.lensPending)
        return QStringLiteral("Computing the logit lens (every layer's state through the head)\u2026");
    return QStringLiteral("No logit lens in these traces (traced with lens top-K = 0).");
}

bool LensView::hasContent() const {
    return lensFor(m_data, m_data.grassmann) || lensFor(m_data, m_data.baseline);
}

int LensView::clampedLensLayer(const LogitLens& lens) const {
    const int64_t rows = lens.topIds.dim(0);
    return m_lensLayer < 0 || m_lensLayer >= rows ? static_cast<int>(rows - 1) : m_lensLayer;
}

LensGridData LensView::gridData(const gwb::engine::TracePtr& trace, int window) const {
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
    d.markRow = clampedLensLayer(*lens);
    return d;
}

ChartData LensView::rankChart() const {
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

QStringList LensView::topKLines(const gwb::engine::TracePtr& trace) const {
    QStringList out;
    const LogitLens* lens = lensFor(m_data, trace);
    if (!lens) return out;
    const auto& t = *trace;
    const int64_t T = t.length(), K = lens->topK();
    const int64_t tok = std::clamp<int64_t>(selToken(), 0, T - 1);
    const int l = clampedLensLayer(*lens);
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

void LensView::refresh() {
    if (!hasContent()) {
        m_grassmannGrid->setPlaceholder(missingDataMessage());
        m_baselineGrid->setPlaceholder(missingDataMessage());
        m_rank->setPlaceholder(missingDataMessage());
        m_table->setRowCount(0);
        return;
    }
    refreshGrids();
    m_rank->setChart(rankChart());
    const QStringList g = topKLines(m_data.grassmann), b = topKLines(m_data.baseline);
    const auto primary = m_data.primary();
    const int64_t T = primary->length();
    const int t = selToken();
    const LogitLens* primaryLens = lensFor(m_data, primary);
    const QString lay =
        layerLabel(primaryLens ? clampedLensLayer(*primaryLens) : 0, primaryLens ? primaryLens->topIds.dim(0) - 1 : 0);
    m_table->setColumnCount(2);
    m_table->setHorizontalHeaderLabels({QStringLiteral("Grassmann top-K (%1, token %2)").arg(lay).arg(t),
                                        QStringLiteral("Transformer top-K (%1, token %2)").arg(lay).arg(t)});
    const int rows = static_cast<int>(std::max(g.size(), b.size()));
    m_table->setRowCount(rows + 1);
    for (int i = 0; i < rows; ++i) {
        m_table->setItem(i, 0, new QTableWidgetItem(i < g.size() ? g[i] : QString()));
        m_table->setItem(i, 1, new QTableWidgetItem(i < b.size() ? b[i] : QString()));
    }
    auto rankText = [&](const gwb::engine::TracePtr& tr) -> QTableWidgetItem* {
        const LogitLens* lens = lensFor(m_data, tr);
        if (!lens || lens->nextRank.rank() != 2 || t >= lens->nextRank.dim(1)) return new QTableWidgetItem();
        const int32_t r = lens->nextRank.at2(clampedLensLayer(*lens), t);
        auto* item = new QTableWidgetItem(r < 0 ? QStringLiteral("next token: \u2014")
                                                : QStringLiteral("next token rank %1").arg(r + 1));
        if (r < 0) item->setToolTip(QStringLiteral("The last token has no next token in the prompt."));
        return item;
    };
    m_table->setItem(rows, 0, rankText(m_data.grassmann));
    m_table->setItem(rows, 1, rankText(m_data.baseline));
    (void)T;
    m_table->resizeColumnsToContents();
}

std::vector<DataTable> LensView::dataTables() const {
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

QString LensView::caption() const {
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

int LensView::figureWindow(double gridWidth, const FigureStyle& style, int maxWindow, double minScale) const {
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

int LensView::screenColumns() const {
    return m_grassmannGrid->grid().cols() > 0 ? m_grassmannGrid->grid().cols() : m_baselineGrid->grid().cols();
}

void LensView::refreshGrids() {
    if (!hasContent()) return;
    const FigureStyle screen = FigureStyle::forScreen(font());
    // As many tokens as each grid's width holds, pieces whole or in a font down to 70% (the
    // painter's own shrink).
    const int window = figureWindow(std::max(200, m_grassmannGrid->width()) - 8.0, screen, kScreenWindow, 0.7);
    for (auto [grid, tr] : {std::pair{m_grassmannGrid, m_data.grassmann}, std::pair{m_baselineGrid, m_data.baseline}})
        if (lensFor(m_data, tr))
            grid->setGrid(gridData(tr, window), colormapId());
        else
            grid->setPlaceholder(tr ? (m_data.lensPending ? QStringLiteral("Computing this trace's logit lens\u2026")
                                                          : QStringLiteral("This trace has no logit lens."))
                                    : detail::noModelMessage(grid == m_grassmannGrid ? QStringLiteral("Grassmann")
                                                                                     : QStringLiteral("Transformer")));
}

void LensView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
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
    const LogitLens* primaryLens = lensFor(m_data, m_data.primary());
    const QString lay =
        primaryLens ? layerLabel(clampedLensLayer(*primaryLens), primaryLens->topIds.dim(0) - 1) : QString();
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
    paintChart(p, chartRect, rankChart(), style);
}

} // namespace gwb::views
