#include "gwb/views/compare_view.h"

#include "view_common.h"

#include "gwb/views/selection_policy.h"

#include "gwb/views/heatmap_widget.h"

#include <QHeaderView>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace gwb::views {

CompareView::CompareView(QWidget* parent) : View(std::make_unique<CompareFigure>(), parent) {
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

CompareView::Rows CompareView::rows() const {
    return synced().rows();
}

void CompareView::syncFigure(Figure& figure) const {
    const std::pair<QString, HeatmapWidget*> panels[] = {{QStringLiteral("rows"), m_rows},
                                                         {QStringLiteral("grassmann"), m_gDist},
                                                         {QStringLiteral("baseline"), m_bDist},
                                                         {QStringLiteral("difference"), m_diff}};
    for (const auto& [name, w] : panels)
        figure.setPanelWindow(name, w->hasMatrix() ? w->window() : QRectF());
}

void CompareView::refresh() {
    for (auto* h : {m_rows, m_gDist, m_bDist})
        h->setColormap(colormapId()); // m_diff stays RdBu (signed)
    const CompareFigure& f = synced();
    const Rows rs = f.rows();
    m_table->clear();
    m_table->setRowCount(0);
    m_rows->setPanel(f.rowsPanel());
    if (!rs.values.empty()) {
        // Every row (influence, each head, the head mean) keeps its label: a line of text each,
        // plus the rotated token labels and the hint line below.
        const int line = fontMetrics().height() + 2;
        m_rows->setMinimumHeight(static_cast<int>(rs.values.size()) * line + line * 5);
        // (the header's hint before the table is first shown can be short: a text line and margins at least)
        const int header = std::max(m_table->horizontalHeader()->sizeHint().height(), fontMetrics().height() + 12);
        m_table->setMinimumHeight(
            header + static_cast<int>(rs.agreement.size()) * m_table->verticalHeader()->defaultSectionSize() + 4);
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
    m_gDist->setPanel(f.distancePanel(CompareFigure::Model::Grassmann));
    m_bDist->setPanel(f.distancePanel(CompareFigure::Model::Baseline));
    m_diff->setPanel(f.differencePanel());
}

} // namespace gwb::views
