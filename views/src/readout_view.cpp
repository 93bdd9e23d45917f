#include "gwb/views/readout_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"
#include "gwb/views/selection_policy.h"

#include <QHeaderView>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace gwb::views {

ReadoutView::ReadoutView(QWidget* parent) : View(std::make_unique<ReadoutFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    m_rankCombo = detail::addCombo(bar, QStringLiteral("Rank channels by"),
                                   {QStringLiteral("planarity of A_c (least planar first)"),
                                    QStringLiteral("residual \u03c1(A_c) (largest first)")},
                                   this);
    bar->addWidget(new QLabel(QStringLiteral("Channel"), this));
    m_channelSpin = new QSpinBox(this);
    m_channelSpin->setObjectName(QStringLiteral("readoutChannelSpin"));
    m_channelSpin->setToolTip(QStringLiteral("Channel whose spectrum is shown (default: the token's top channel)"));
    bar->addWidget(m_channelSpin);
    bar->addStretch();
    layout->addLayout(bar);
    auto* vsplit = new QSplitter(Qt::Vertical, this);
    auto* top = new QSplitter(Qt::Horizontal, vsplit);
    m_ranked = new ChartWidget(top);
    m_spectrum = new ChartWidget(top);
    top->addWidget(m_ranked);
    top->addWidget(m_spectrum);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    auto* bottom = new QSplitter(Qt::Horizontal, vsplit);
    m_table = new QTableWidget(bottom);
    m_table->setObjectName(QStringLiteral("readoutTable"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_sphere = new SphereWidget(bottom);
    bottom->addWidget(m_table);
    bottom->addWidget(m_sphere);
    vsplit->addWidget(top);
    vsplit->addWidget(bottom);
    // The sphere below needs a square: the charts above settle for a shorter readable height.
    for (ChartWidget* c : {m_ranked, m_spectrum})
        c->setMinimumHeight(150);
    vsplit->setSizes({400, 500}); // applied proportionally when shown
    top->setSizes({600, 400});
    bottom->setSizes({450, 550});
    layout->addWidget(vsplit, 1);

    connect(m_rankCombo, &QComboBox::currentIndexChanged, this,
            [this](int i) { setRank(i == 1 ? Rank::Residual : Rank::Planarity); });
    connect(m_channelSpin, &QSpinBox::valueChanged, this, [this](int c) {
        if (c != channel()) pinChannel(c);
    });
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (const auto* item = m_table->item(row, 0)) pinChannel(item->text().toInt());
    });
    connect(m_sphere, &SphereWidget::rotationChanged, this, [this] {
        fig().setRotation(m_sphere->rotation()); // as SubspaceView: the figure follows each rotation
        Q_EMIT settingsChanged();
    });
    refresh();
}

void ReadoutView::pinChannel(int c) {
    fig().setChannelPinned(true);
    setChannel(c);
}

void ReadoutView::setChannel(int c) {
    if (c == channel()) return;
    fig().setChannel(c);
    refresh();
    Q_EMIT settingsChanged();
}

void ReadoutView::setRank(Rank r) {
    if (r == rank()) return;
    fig().setRank(r);
    m_rankCombo->setCurrentIndex(r == Rank::Residual ? 1 : 0);
    refresh();
    Q_EMIT settingsChanged();
}

void ReadoutView::setSettings(const QJsonObject& s) {
    // The figure follows the view's selection first, so that a channel given here stays.
    QJsonObject before = synced().settings();
    View::setSettings(s); // the figure's rank and channel, the colormap
    m_rankCombo->setCurrentIndex(rank() == Rank::Residual ? 1 : 0);
    refresh();
    QJsonObject after = fig().settings();
    before.remove(QStringLiteral("colormap")); // a new colormap was announced by setColormapId
    after.remove(QStringLiteral("colormap"));
    if (after != before) Q_EMIT settingsChanged();
}

void ReadoutView::refresh() {
    const ReadoutFigure& f = synced();
    if (!f.hasContent()) {
        m_ranked->setPlaceholder(f.chartPlaceholder());
        m_spectrum->setPlaceholder(f.chartPlaceholder());
        m_sphere->setPlaceholder(f.missingDataMessage());
        m_table->setRowCount(0);
        return;
    }
    const int channel = f.channel();
    {
        const QSignalBlocker block(m_channelSpin);
        m_channelSpin->setRange(0, f.channelCount() - 1);
        m_channelSpin->setValue(channel);
    }
    m_ranked->setChart(f.rankedChart());
    m_spectrum->setChart(f.spectrumChart());
    m_sphere->setSphere(f.spherePicture());

    const int t = selToken();
    const QStringList header{QStringLiteral("channel"),
                             QStringLiteral("z\u209c\u1d40A_c y\u209c"),
                             QStringLiteral("planarity"),
                             QStringLiteral("\u03c1(A_c)"),
                             QStringLiteral("\u03b8\u2081 (rad)"),
                             QStringLiteral("\u03b8\u2082 (rad)")};
    m_table->setColumnCount(header.size());
    m_table->setHorizontalHeaderLabels(header);
    const std::vector<ReadoutFigure::ChannelRow> rows = f.topChannelRows();
    m_table->setRowCount(static_cast<int>(rows.size()));
    const QString why = undefinedReason(QStringLiteral("The read-out"), t);
    for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
        const ReadoutFigure::ChannelRow& r = rows[static_cast<size_t>(i)];
        m_table->setItem(i, 0, new QTableWidgetItem(QString::number(r.channel)));
        m_table->setItem(i, 1, detail::valueItem(r.contribution, why));
        m_table->setItem(i, 2, detail::valueItem(r.planarity, QStringLiteral("zero channel")));
        m_table->setItem(i, 3, detail::valueItem(r.residual, QStringLiteral("zero channel")));
        m_table->setItem(i, 4, detail::valueItem(r.theta1, why));
        m_table->setItem(i, 5, detail::valueItem(r.theta2, why));
        if (r.channel == channel) m_table->selectRow(i);
    }
    if (rows.empty())
        m_table->setToolTip(undefinedReason(QStringLiteral("The token's read-out"), t));
    else
        m_table->setToolTip(QStringLiteral("Token %1's channels with the largest |z_t^T A_c y_t|; click to show one's "
                                           "spectrum")
                                .arg(t));
    m_table->resizeColumnsToContents();
}

} // namespace gwb::views
