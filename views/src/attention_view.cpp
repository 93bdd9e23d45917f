#include "gwb/views/attention_view.h"

#include "head_grid_paint.h"
#include "view_common.h"

#include "gwb/views/selection_policy.h"

#include "gwb/views/heatmap_widget.h"

#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <atomic>
#include <functional>
#include <set>

namespace gwb::views {

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

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), palette().base());
        detail::MissingHeadLevels missing;
        const bool small = !m_pyramids.empty() && m_pyramids[0]->source().rows() <= 1024;
        m_cells = detail::paintHeadGrid(p, QRectF(rect()).adjusted(4, 4, -4, -4), m_pyramids, m_selected, m_scale,
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

AttentionView::AttentionView(QWidget* parent) : View(std::make_unique<AttentionFigure>(), parent) {
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

void AttentionView::syncFigure(Figure& figure) const {
    figure.setPanelWindow(QStringLiteral("head"), m_heatmap->hasMatrix() ? m_heatmap->window() : QRectF());
}

void AttentionView::refresh() {
    const AttentionFigure& f = static_cast<const AttentionFigure&>(figure());
    m_heatmap->setColormap(colormapId());
    const HeatmapPanel panel = f.panel();
    m_heatmap->setPanel(panel);
    if (!f.hasContent()) {
        m_grid->setHeads({}, 0, ColorScale{});
        m_table->clear();
        m_table->setRowCount(0);
        return;
    }
    const int head = selHead();
    if (panel.source) {
        const double top = panel.fixedHigh; // the figure's headMax(head)
        m_scaleNote->setText(
            top < 0.999 ? QStringLiteral("Colour scale 0 to %1, the 95th percentile of the rows' largest weights: "
                                         "brighter cells (up to 1) saturate; hover a cell for its value.")
                              .arg(top, 0, 'g', 2)
                        : QString());
    }
    m_grid->setHeads(f.headPyramids(), head, f.gridScale(colormapId()));
    const auto rows = f.metricRows();
    const QStringList names = f.metricNames();
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

} // namespace gwb::views
