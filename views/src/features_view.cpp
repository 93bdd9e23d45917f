#include "gwb/views/features_view.h"

#include "gwb/views/chart_widget.h"
#include "view_common.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <algorithm>

namespace gwb::views {

FeaturesView::FeaturesView(QWidget* parent) : View(std::make_unique<FeaturesFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_header = new QLabel(this);
    m_header->setObjectName(QStringLiteral("featuresHeader"));
    m_header->setMinimumWidth(100); // a long header is cut at the right, its tooltip has the folder
    bar->addWidget(m_header, 1);
    bar->addWidget(new QLabel(QStringLiteral("Show"), this));
    m_kind = new QComboBox(this);
    m_kind->setObjectName(QStringLiteral("featuresKind"));
    m_kind->addItems({QStringLiteral("all features"), QStringLiteral("first model's only"), QStringLiteral("shared"),
                      QStringLiteral("second model's only")});
    m_kind->setToolTip(QStringLiteral("A crosscoder's features by their relative decoder norm: below 0.3 the first "
                                      "model's, 0.3 to 0.7 shared, above 0.7 the second model's"));
    bar->addWidget(m_kind);
    m_open = new QPushButton(QStringLiteral("Open Dictionary\u2026"), this);
    m_open->setObjectName(QStringLiteral("featuresOpen"));
    m_open->setToolTip(QStringLiteral("A folder written by gwb features train (cfg.json + sae_weights.safetensors)"));
    bar->addWidget(m_open);
    m_corpus = new QPushButton(QStringLiteral("Dashboard Corpus…"), this);
    m_corpus->setObjectName(QStringLiteral("featuresCorpus"));
    m_corpus->setToolTip(QStringLiteral("Text files to draw the dashboards' top contexts from (by default the files "
                                        "the dictionary was trained on)"));
    bar->addWidget(m_corpus);
    layout->addLayout(bar);
    m_message = detail::messageLabel(this, QStringLiteral("featuresMessage"));
    m_message->hide();
    layout->addWidget(m_message);

    auto* split = new QSplitter(Qt::Horizontal, this);
    auto* left = new QSplitter(Qt::Vertical, split);
    m_relative = new ChartWidget(left);
    m_relative->setObjectName(QStringLiteral("featuresRelativeNorms"));
    m_list = new QTableWidget(left);
    m_list->setObjectName(QStringLiteral("featuresList"));
    m_list->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_list->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_list->setSelectionMode(QAbstractItemView::SingleSelection);
    m_list->verticalHeader()->hide();
    m_list->horizontalHeader()->setStretchLastSection(true);
    auto* right = new QSplitter(Qt::Vertical, split);
    m_contexts = new QTextBrowser(right);
    m_contexts->setObjectName(QStringLiteral("featuresDashboard"));
    m_histogram = new ChartWidget(right);
    split->setSizes({380, 620});
    right->setSizes({560, 340});
    layout->addWidget(split, 1);

    connect(m_open, &QPushButton::clicked, this, &FeaturesView::openDictionaryRequested);
    connect(m_corpus, &QPushButton::clicked, this, &FeaturesView::corpusRequested);
    // A bar of the relative-norm histogram lists the features of its kind (0-0.3 the first model's,
    // 0.3-0.7 shared, 0.7-1 the second's); the "Show" box goes back to all.
    connect(m_relative, &ChartWidget::barClicked, this, [this](int bin) {
        setKindFilter(bin < 3   ? QStringLiteral("first")
                      : bin < 7 ? QStringLiteral("shared")
                                : QStringLiteral("second"));
    });
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this](int i) {
        fig().setKindFilter(FeaturesFigure::kindFilters().value(std::clamp(i, 0, 3)));
        requestRefresh();
        Q_EMIT settingsChanged();
    });
    connect(m_list, &QTableWidget::cellClicked, this, [this](int row, int) {
        const auto rows = listedFeatures();
        if (row >= 0 && row < static_cast<int>(rows.size())) chooseFeature(rows[static_cast<size_t>(row)].first);
    });
    refresh();
}

void FeaturesView::setKindFilter(const QString& kind) {
    const int i = static_cast<int>(FeaturesFigure::kindFilters().indexOf(kind));
    if (i >= 0) m_kind->setCurrentIndex(i); // the box's change sets the figure's filter
}

void FeaturesView::setSettings(const QJsonObject& s) {
    View::setSettings(s); // the colormap and the figure's kind filter
    // The "Show" box follows the figure (a change refreshes and says so, as choosing it does).
    m_kind->setCurrentIndex(static_cast<int>(FeaturesFigure::kindFilters().indexOf(fig().kindFilter())));
}

void FeaturesView::setFeatures(FeatureDataPtr features) {
    if (fig().setFeatures(std::move(features))) Q_EMIT featureChosen(-1); // another dictionary: none chosen
    requestRefresh();
}

void FeaturesView::refreshDashboard() {
    if (chosenFeature() >= 0) Q_EMIT dashboardRequested(chosenFeature());
}

void FeaturesView::setDashboard(const FeatureDashboard& dashboard) {
    if (fig().setDashboard(dashboard)) requestRefresh(); // else for a feature no longer chosen
}

void FeaturesView::chooseFeature(int64_t feature) {
    if (!fig().chooseFeature(feature)) return;
    const int64_t chosen = chosenFeature();
    Q_EMIT featureChosen(chosen);
    if (chosen >= 0) Q_EMIT dashboardRequested(chosen);
    requestRefresh();
}

void FeaturesView::refresh() {
    const FeaturesFigure& fg = synced();
    const FeatureData* f = fg.features();
    const bool loaded = f != nullptr;
    m_kind->setEnabled(loaded && f->crosscoder);
    m_corpus->setEnabled(loaded); // a corpus for the dashboards of an open dictionary
    m_relative->setVisible(loaded && f->crosscoder);
    m_header->setText(fg.headerText());
    if (!loaded) {
        m_message->clear();
        m_message->hide();
        m_list->setRowCount(0);
        m_list->setColumnCount(0);
        m_contexts->setHtml(QString());
        m_histogram->setPlaceholder(fg.histogramPlaceholder());
        return;
    }
    m_header->setToolTip(QString::fromStdString(f->path));
    if (f->crosscoder) m_relative->setChart(fg.relativeNormChart());
    const auto rows = fg.listedFeatures();
    const std::vector<QStringList> cells = fg.listCells();
    const QStringList header = fg.listHeader();
    m_list->setColumnCount(static_cast<int>(header.size()));
    m_list->setHorizontalHeaderLabels(header);
    m_list->setRowCount(static_cast<int>(rows.size()));
    for (size_t i = 0; i < rows.size(); ++i) {
        const QStringList& row = cells[i];
        for (qsizetype j = 0; j < row.size(); ++j)
            if (!row[j].isEmpty()) // a crosscoder feature without a known norm has no norm cell
                m_list->setItem(static_cast<int>(i), static_cast<int>(j), new QTableWidgetItem(row[j]));
        if (rows[i].first == fg.chosenFeature()) m_list->selectRow(static_cast<int>(i));
    }
    m_list->resizeColumnsToContents();
    // The last column takes the rest of the width: resizing to contents resets the stretch, so it
    // is set again after it.
    m_list->horizontalHeader()->setSectionResizeMode(m_list->columnCount() - 1, QHeaderView::Stretch);
    // An error (a failed computation, no run yet) on its own row under the controls, wrapped.
    m_message->setText(QString::fromStdString(f->error));
    m_message->setVisible(!f->error.empty());
    m_contexts->setHtml(fg.dashboardPaneHtml());
    const ChartData hist = fg.activationChart();
    if (hist.hasData())
        m_histogram->setChart(hist);
    else
        m_histogram->setPlaceholder(fg.histogramPlaceholder());
}

} // namespace gwb::views
