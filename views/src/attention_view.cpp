#include "gwb/views/attention_view.h"

#include "plot_util.h"
#include "view_common.h"

#include "gwb/views/selection_policy.h"

#include "gwb/views/heatmap_widget.h"

#include <QFontMetricsF>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <cmath>
#include <algorithm>
#include <atomic>
#include <functional>
#include <set>
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

/// Thumbnails of all heads; clicking one selects it.
class HeadGrid : public QWidget {
public:
    explicit HeadGrid(QWidget* parent) : QWidget(parent), m_cancel(std::make_shared<std::atomic<bool>>(false)) {
        setMinimumSize(120, 120);
    }
    ~HeadGrid() override { m_cancel->store(true); }
    void setHeads(std::vector<std::shared_ptr<MatrixPyramid>> pyramids, int selected, ColorScale scale) {
        if (pyramids != m_pyramids) {
            m_cancel->store(true);
            m_cancel = std::make_shared<std::atomic<bool>>(false);
        }
        m_pyramids = std::move(pyramids);
        m_selected = selected;
        m_scale = scale;
        update();
    }
    std::function<void(int)> onClicked;

    /// Grid of thumbnails into rect; returns the cell rects. computeMissing: synchronous levels.
    static std::vector<QRectF> paintGrid(QPainter& p, const QRectF& rect,
                                         const std::vector<std::shared_ptr<MatrixPyramid>>& pyramids, int selected,
                                         const ColorScale& scale, const FigureStyle& style, bool computeMissing,
                                         std::vector<std::pair<int, std::pair<int, int>>>* missing) {
        std::vector<QRectF> cells;
        const int H = static_cast<int>(pyramids.size());
        if (H == 0) return cells;
        const QFontMetricsF fm = style.metrics(style.small);
        int cols = 1;
        double best = 0;
        for (int c = 1; c <= H; ++c) { // choose the column count giving the largest square thumbnails
            const int rows = (H + c - 1) / c;
            const double side = std::min(rect.width() / c, rect.height() / rows - fm.height());
            if (side > best) {
                best = side;
                cols = c;
            }
        }
        const double gap = fm.height() * 0.3;
        const double side = std::max(4.0, best - gap);
        p.save();
        p.setFont(style.small);
        for (int h = 0; h < H; ++h) {
            const int r = h / cols, c = h % cols;
            const QRectF cell(rect.left() + c * (side + gap), rect.top() + r * (side + gap + fm.height()) + fm.height(),
                              side, side);
            cells.push_back(cell);
            const auto& pyr = *pyramids[static_cast<size_t>(h)];
            const QTransform dt = p.deviceTransform();
            const QSize px(std::max(1, static_cast<int>(side * std::hypot(dt.m11(), dt.m12()))),
                           std::max(1, static_cast<int>(side * std::hypot(dt.m21(), dt.m22()))));
            const QRectF window(0, 0, static_cast<double>(pyr.source().cols()),
                                static_cast<double>(pyr.source().rows()));
            HeatmapImage img = colorizeWindow(const_cast<MatrixPyramid&>(pyr), window, px, scale, computeMissing);
            if (!img.image.isNull())
                p.drawImage(cell, img.image);
            else
                p.fillRect(cell, QColor(230, 230, 230));
            if ((img.image.isNull() || img.preview) && missing) missing->push_back({h, {img.levelRows, img.levelCols}});
            p.setPen(QPen(h == selected ? QColor(213, 94, 0) : QColor(80, 80, 80),
                          h == selected ? style.hairline * 4 : style.hairline));
            p.setBrush(Qt::NoBrush);
            p.drawRect(cell);
            p.setPen(Qt::black);
            p.drawText(QRectF(cell.left(), cell.top() - fm.height(), cell.width(), fm.height()),
                       Qt::AlignLeft | Qt::AlignVCenter, QStringLiteral("head %1").arg(h));
        }
        p.restore();
        return cells;
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), palette().base());
        std::vector<std::pair<int, std::pair<int, int>>> missing;
        const bool small = !m_pyramids.empty() && m_pyramids[0]->source().rows() <= 1024;
        m_cells = paintGrid(p, QRectF(rect()).adjusted(4, 4, -4, -4), m_pyramids, m_selected, m_scale,
                            FigureStyle::forScreen(font()), small, &missing);
        for (const auto& [h, lv] : missing)
            request(h, lv.first, lv.second);
    }
    void mousePressEvent(QMouseEvent* e) override {
        for (size_t i = 0; i < m_cells.size(); ++i)
            if (m_cells[i].contains(e->position()) && onClicked) onClicked(static_cast<int>(i));
    }

private:
    void request(int h, int ly, int lx) {
        auto key = std::make_pair(h, std::make_pair(ly, lx));
        if (m_requested.count(key)) return;
        m_requested.insert(key);
        auto pyr = m_pyramids[static_cast<size_t>(h)];
        auto cancel = m_cancel;
        QPointer<HeadGrid> self(this);
        QtConcurrent::run([pyr, cancel, ly, lx] { pyr->level(ly, lx, cancel.get()); }).then(this, [self, cancel] {
            if (self && !cancel->load()) self->update();
        });
    }
    std::vector<std::shared_ptr<MatrixPyramid>> m_pyramids;
    std::vector<QRectF> m_cells;
    std::set<std::pair<int, std::pair<int, int>>> m_requested;
    int m_selected = 0;
    ColorScale m_scale;
    std::shared_ptr<std::atomic<bool>> m_cancel;
};

AttentionView::AttentionView(QWidget* parent) : View(parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    auto* mapCombo = detail::addColormapCombo(bar, this);
    m_scaleNote = new QLabel(this);
    m_scaleNote->setObjectName(QStringLiteral("attentionScaleNote"));
    bar->addWidget(m_scaleNote, 1);
    bar->addStretch();
    layout->addLayout(bar);
    auto* split = new QSplitter(Qt::Horizontal, this);
    m_grid = new HeadGrid(split);
    m_grid->setObjectName(QStringLiteral("attentionHeadGrid")); // the window adds "Ablate head" to it
    m_heatmap = new HeatmapWidget(split);
    // Grey cells of an attention map are the causal mask, not a missing offset.
    m_heatmap->setUndefinedReason([](int64_t row, int64_t col) {
        return col > row
                   ? QStringLiteral("masked: key %1 comes after query %2, and attention is causal").arg(col).arg(row)
                   : QStringLiteral("undefined here");
    });
    m_table = new QTableWidget(split);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->setVisible(false);
    split->addWidget(m_grid);
    split->addWidget(m_heatmap);
    split->addWidget(m_table);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 2);
    layout->addWidget(split, 1);
    m_grid->onClicked = [this](int h) {
        if (selection()) selection()->setHead(h);
    };
    connect(mapCombo, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    connect(m_heatmap, &HeatmapWidget::cellClicked, this, [this](qint64 row, qint64) {
        if (selection()) selection()->setToken(static_cast<int>(row));
    });
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (selection()) selection()->setHead(row);
    });
    refresh();
}

AttentionView::~AttentionView() = default;

QJsonObject AttentionView::settings() const {
    return View::settings();
}
void AttentionView::setSettings(const QJsonObject& s) {
    View::setSettings(s);
}

bool AttentionView::hasContent() const {
    return m_data.baseline && selLayer() < static_cast<int>(m_data.baseline->layers.size()) &&
           m_data.baseline->layers[static_cast<size_t>(selLayer())].attention.has_value();
}

const gwb::engine::AttentionLayerAnalysis* AttentionView::layerAnalysis() const {
    if (!m_data.baselineAnalysis || selLayer() >= static_cast<int>(m_data.baselineAnalysis->attention.size()))
        return nullptr;
    return &m_data.baselineAnalysis->attention[static_cast<size_t>(selLayer())];
}

double AttentionView::headMax(int head) const {
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

QStringList AttentionView::metricNames() const {
    return {QStringLiteral("H (nats)"), QStringLiteral("H/log(t+1)"), QStringLiteral("S(a)"),
            QStringLiteral("top-1"),    QStringLiteral("exp(H)"),     QStringLiteral("cost \u03a3a\u00b7C")};
}

std::vector<std::vector<double>> AttentionView::metricRows() const {
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

void AttentionView::refresh() {
    m_heatmap->setColormap(colormapId());
    if (!hasContent()) {
        m_key.clear();
        m_pyramids.clear();
        m_heatmap->setPlaceholder(m_data.baseline
                                      ? QStringLiteral("Layer %1 of the baseline has no attention.").arg(selLayer())
                                      : missingDataMessage());
        m_grid->setHeads({}, 0, ColorScale{});
        m_table->clear();
        m_table->setRowCount(0);
        return;
    }
    const int layer = selLayer();
    const int head = selHead();
    const auto& at = *m_data.baseline->layers[static_cast<size_t>(layer)].attention;
    const QString layerKey = QStringLiteral("%1/%2").arg(reinterpret_cast<quintptr>(m_data.baseline.get())).arg(layer);
    if (!m_key.startsWith(layerKey + QLatin1Char('/'))) {
        m_pyramids.clear();
        for (int64_t h = 0; h < at.nHeads; ++h)
            m_pyramids.push_back(std::make_shared<MatrixPyramid>(
                attentionSource(m_data.baseline, layer, static_cast<int>(h)), DownsampleMode::Max));
    }
    const QString key = layerKey + QStringLiteral("/%1").arg(head);
    if (key != m_key && head < static_cast<int>(m_pyramids.size())) {
        HeatmapAxes axes;
        axes.rowTitle = QStringLiteral("query");
        axes.colTitle = QStringLiteral("key");
        axes.rowLabels = tokenLabels(*m_data.baseline);
        axes.colLabels = axes.rowLabels;
        // The scale ends at the 95th percentile of the rows' largest probabilities (headMax): the
        // colour bar's title says where brighter cells saturate, as the figure's caption does.
        const double top = headMax(head);
        axes.valueName = QStringLiteral("attention");
        m_scaleNote->setText(
            top < 0.999 ? QStringLiteral("Colour scale 0 to %1, the 95th percentile of the rows' largest weights: "
                                         "brighter cells (up to 1) saturate; hover a cell for its value.")
                              .arg(top, 0, 'g', 2)
                        : QString());
        m_heatmap->setMatrix(m_pyramids[static_cast<size_t>(head)]->sourcePtr(), axes);
        m_heatmap->setFixedRange(0, top); // the largest probability in the head (from top-1), no T x T scan
        m_key = key;
    }
    m_heatmap->setMarks(HeatmapMarks{selToken(), -1});
    m_grid->setHeads(m_pyramids, head, ColorScale::fromRange(colormapId(), 0, headMax(-1), false));
    const auto rows = metricRows();
    const QStringList names = metricNames();
    m_table->setColumnCount(names.size() + 1);
    QStringList header{QStringLiteral("head")};
    header << names;
    m_table->setHorizontalHeaderLabels(header);
    // Every column says what it is; the caption has the formulas too.
    const QStringList tips{
        QStringLiteral("Head index (click a row to select the head)"),
        QStringLiteral("Entropy H = \u2212\u03a3\u2c7c a\u2c7c log a\u2c7c of query %1's attention row, in nats"),
        QStringLiteral("H / log(t+1): entropy relative to a uniform row over the t+1 visible keys (0 = one key, "
                       "1 = uniform)"),
        QStringLiteral("Sparsity S(a) = E|a| / \u221a(E a\u00b2) over the t+1 visible keys: 1 for a uniform row, "
                       "1/\u221a(t+1) for a row on one key"),
        QStringLiteral("Top-1 mass: the largest attention probability of the row"),
        QStringLiteral("Effective support exp(H): the number of keys a uniform row of the same entropy would "
                       "spread over"),
        QStringLiteral("Transport cost \u03a3\u2c7c a\u2c7c C\u2c7c with C\u2c7c = \u2212q_t\u00b7k\u2c7c: "
                       "the attention-weighted negative query-key score. It is negative when the head attends to "
                       "keys whose scores q_t\u00b7k\u2c7c are positive (the usual case): lower = the row sits on "
                       "better-matching keys; it is not a probability and has no lower bound of 0.")};
    for (int k = 0; k < header.size() && k < tips.size(); ++k)
        if (QTableWidgetItem* item = m_table->horizontalHeaderItem(k))
            item->setToolTip(tips[k].contains(QLatin1String("%1")) ? tips[k].arg(selToken()) : tips[k]);
    m_table->setRowCount(static_cast<int>(rows.size()));
    for (int h = 0; h < static_cast<int>(rows.size()); ++h) {
        m_table->setItem(h, 0, new QTableWidgetItem(QString::number(h)));
        for (int k = 0; k < names.size(); ++k)
            m_table->setItem(h, k + 1,
                             detail::valueItem(rows[static_cast<size_t>(h)][static_cast<size_t>(k)],
                                               undefinedReason(names[k], selToken())));
    }
    if (head < m_table->rowCount()) m_table->selectRow(head);
    m_table->resizeColumnsToContents();
}

std::vector<DataTable> AttentionView::dataTables() const {
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

QString AttentionView::caption() const {
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

void AttentionView::drawFigure(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    const QFontMetricsF fm = style.metrics(style.small);
    const double gap = fm.height();
    // Metrics table under the panels: header + one line per head.
    const auto rows = metricRows();
    const double tableH = fm.height() * (static_cast<double>(rows.size()) + 1.4);
    const QRectF panels(rect.left(), rect.top(), rect.width(), rect.height() - tableH - gap * 0.5);
    const auto [left, right] = detail::splitPanels(panels, 0.3, true, gap);
    HeadGrid::paintGrid(p, left, m_pyramids, selHead(), ColorScale::fromRange(map, 0, headMax(-1), false), style, true,
                        nullptr);
    m_heatmap->paintFigure(p, right, style, QStringLiteral("Layer %1, head %2").arg(selLayer()).arg(selHead()), map);
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
