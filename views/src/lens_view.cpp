#include "gwb/views/lens_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QStackedWidget>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QPainter>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

namespace gwb::views {

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
        const QPoint cell = lensGridCellAt(QRectF(rect()).adjusted(4, 4, -4, -4), m_data,
                                           FigureStyle::forScreen(font()), e->position());
        if (cell.x() >= 0) onClick(cell.y(), m_data.firstToken + cell.x());
    }

private:
    LensGridData m_data;
    ColormapId m_map = ColormapId::Viridis;
    QString m_placeholder;
};

/// On-screen lenses side by side: the figure's comparison drawing (LensFigure::draw with lenses),
/// as tall as its width needs, in a scroll area.
class LensComparePane : public QWidget {
public:
    explicit LensComparePane(const LensView* view, QWidget* parent) : QWidget(parent), m_view(view) {}
    void changed() {
        fitHeight();
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), Qt::white);
        p.setRenderHint(QPainter::Antialiasing, true);
        m_view->figure().draw(p, QRectF(rect()).adjusted(6, 6, -6, -6), FigureStyle::forScreen(font()),
                              m_view->figure().colormapId());
    }
    void resizeEvent(QResizeEvent* e) override {
        QWidget::resizeEvent(e);
        fitHeight();
    }

private:
    /// The figure's height for this width, in the screen's larger fonts (the figure's are 8 pt).
    void fitHeight() {
        const double w = std::max(200, width());
        const double scale = QFontMetricsF(font()).height() / 9.5;
        const int h = static_cast<int>(w * m_view->figure().aspect(w / 72.0) * std::max(1.0, scale));
        if (minimumHeight() != h) setMinimumHeight(h);
    }
    const LensView* m_view;
};

LensView::LensView(QWidget* parent) : View(std::make_unique<LensFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    auto* map = detail::addColormapCombo(bar, this);
    m_open = new QPushButton(QStringLiteral("Open lenses\u2026"), this);
    m_open->setToolTip(QStringLiteral("Add a tuned or Jacobian lens folder (gwb lens fit): the lenses are drawn "
                                      "beside the logit lens for both models."));
    m_clear = new QPushButton(QStringLiteral("Logit lens only"), this);
    m_clear->setEnabled(false);
    bar->addWidget(m_open);
    bar->addWidget(m_clear);
    bar->addStretch();
    layout->addLayout(bar);
    m_status = new QLabel(this);
    m_status->setObjectName(QStringLiteral("lensStatus"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->hide();
    layout->addWidget(m_status);
    connect(m_open, &QPushButton::clicked, this, [this] { Q_EMIT lensesRequested(); });
    connect(m_clear, &QPushButton::clicked, this, [this] { setLensFolders({}); });
    m_stack = new QStackedWidget(this);
    auto* scroll = new QScrollArea(m_stack);
    scroll->setWidgetResizable(true);
    m_pane = new LensComparePane(this, scroll);
    scroll->setWidget(m_pane);
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
    m_stack->addWidget(vsplit);
    m_stack->addWidget(scroll);
    layout->addWidget(m_stack, 1);
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
    if (l == lensLayer()) return;
    figureAs<LensFigure>().setLensLayer(l);
    refresh();
    Q_EMIT settingsChanged();
}

void LensView::setSettings(const QJsonObject& s) {
    const int before = lensLayer();
    View::setSettings(s); // the colormap, and the figure's lens layer
    if (lensLayer() == before) return;
    refresh();
    Q_EMIT settingsChanged();
}

LensGridData LensView::gridData(const gwb::engine::TracePtr& trace, int window) const {
    return synced().gridData(trace, window);
}

ChartData LensView::rankChart() const {
    return synced().rankChart();
}

void LensView::setLensFolders(const QStringList& folders) {
    QStringList unique;
    for (const QString& f : folders)
        if (!f.isEmpty() && !unique.contains(f)) unique << f;
    m_folders = unique;
    m_requestedFor[0] = m_requestedFor[1] = nullptr;
    m_clear->setEnabled(!m_folders.isEmpty());
    if (m_folders.isEmpty()) {
        figureAs<LensFigure>().setComparison(nullptr);
        setLensMessage({});
        refresh();
        return;
    }
    requestComparisonIfStale();
}

void LensView::requestComparisonIfStale() {
    if (m_folders.isEmpty() || (!m_data.grassmann && !m_data.baseline)) return;
    if (m_requestedFor[0] == m_data.grassmann.get() && m_requestedFor[1] == m_data.baseline.get()) return;
    m_requestedFor[0] = m_data.grassmann.get();
    m_requestedFor[1] = m_data.baseline.get();
    Q_EMIT comparisonRequested(m_folders);
}

void LensView::setComparison(const gwb::engine::LensComparisonPtr& comparison) {
    figureAs<LensFigure>().setComparison(m_folders.isEmpty() ? nullptr : comparison);
    QStringList lines;
    if (comparison && !m_folders.isEmpty()) {
        for (bool g : {true, false})
            for (const gwb::engine::LensReadout& r : comparison->of(g)) {
                if (r.lens == "logit") continue;
                lines << QStringLiteral("%1: %2 lens %3, fitted on %4%5.")
                             .arg(g ? QStringLiteral("Grassmann") : QStringLiteral("Transformer"),
                                  QString::fromStdString(r.lens), QString::fromStdString(r.folder),
                                  QString::fromStdString(r.fittedOn),
                                  r.sameModel ? QString()
                                              : QStringLiteral(" \u2014 another model than the one drawn (%1)")
                                                    .arg(QString::fromStdString(r.modelName)));
            }
        for (const std::string& n : comparison->notes)
            lines << QStringLiteral("Not drawn: %1.").arg(QString::fromStdString(n));
    }
    setLensMessage(lines.join(QLatin1Char('\n')));
    refresh();
}

bool LensView::comparing() const {
    return synced().comparing();
}

void LensView::setLensRunning(bool running) {
    m_open->setEnabled(!running);
    if (running) setLensMessage(QStringLiteral("Reading out the lenses on both models\u2026"));
}

void LensView::setLensMessage(const QString& text) {
    m_status->setText(text);
    m_status->setVisible(!text.isEmpty());
}

QString LensView::lensMessage() const {
    return m_status->text();
}

void LensView::refresh() {
    requestComparisonIfStale();
    const LensFigure& f = synced();
    m_stack->setCurrentIndex(f.comparing() ? 1 : 0);
    if (f.comparing()) {
        m_pane->changed();
        return;
    }
    if (!f.hasContent()) {
        m_grassmannGrid->setPlaceholder(f.missingDataMessage());
        m_baselineGrid->setPlaceholder(f.missingDataMessage());
        m_rank->setPlaceholder(f.missingDataMessage());
        m_table->setRowCount(0);
        return;
    }
    refreshGrids();
    if (const QString why = f.rankPlaceholder(); !why.isEmpty())
        m_rank->setPlaceholder(why);
    else
        m_rank->setChart(f.rankChart());
    const QStringList g = f.topKLines(m_data.grassmann), b = f.topKLines(m_data.baseline);
    const int t = selToken();
    // Without the primary trace's lens the headers name the final state (its label for N = 0).
    const QString lay = f.lensLayerLabel().isEmpty() ? LensFigure::layerLabel(0, 0) : f.lensLayerLabel();
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
        const std::optional<int32_t> r = f.nextRank(tr);
        if (!r) return new QTableWidgetItem();
        auto* item = new QTableWidgetItem(*r < 0 ? QStringLiteral("next token: \u2014")
                                                 : QStringLiteral("next token rank %1").arg(*r + 1));
        if (*r < 0) item->setToolTip(QStringLiteral("The last token has no next token in the prompt."));
        return item;
    };
    m_table->setItem(rows, 0, rankText(m_data.grassmann));
    m_table->setItem(rows, 1, rankText(m_data.baseline));
    m_table->resizeColumnsToContents();
}

int LensView::screenColumns() const {
    return m_grassmannGrid->grid().cols() > 0 ? m_grassmannGrid->grid().cols() : m_baselineGrid->grid().cols();
}

void LensView::refreshGrids() {
    const LensFigure& f = synced();
    if (!f.hasContent()) return;
    const FigureStyle screen = FigureStyle::forScreen(font());
    // As many tokens as each grid's width holds, pieces whole or in a font down to 70% (the
    // painter's own shrink).
    const int window = f.figureWindow(std::max(200, m_grassmannGrid->width()) - 8.0, screen, kScreenWindow, 0.7);
    for (auto [grid, grassmann] : {std::pair{m_grassmannGrid, true}, std::pair{m_baselineGrid, false}}) {
        const QString placeholder = f.gridPlaceholder(grassmann);
        if (placeholder.isEmpty())
            grid->setGrid(f.gridData(grassmann ? m_data.grassmann : m_data.baseline, window), colormapId());
        else
            grid->setPlaceholder(placeholder);
    }
}

} // namespace gwb::views
