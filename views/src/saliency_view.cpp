#include "gwb/views/saliency_view.h"

#include "view_common.h"

#include "gwb/views/chart_widget.h"

#include <QHeaderView>
#include <QLineEdit>
#include <QPainter>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <cmath>
#include <functional>

namespace gwb::views {

namespace {
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

SaliencyView::SaliencyView(QWidget* parent) : View(std::make_unique<SaliencyFigure>(), parent) {
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout();
    bar->addWidget(new QLabel(QStringLiteral("Target"), this));
    m_target = new QLineEdit(this);
    m_target->setObjectName(QStringLiteral("saliencyTarget"));
    m_target->setPlaceholderText(QStringLiteral("actual next token"));
    m_target->setToolTip(QStringLiteral("A vocabulary piece to explain instead of the actual next token, or the "
                                        "contrast \"she - he\" (logit[she] \u2212 logit[he], the metric of the "
                                        "causal tests). Enter to compute; empty = actual next token"));
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
        fig().paintChips(p, r, FigureStyle::forScreen(font()), colormapId());
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
    // The figure's target is the field's text as it is typed (as the caption and tables read it).
    connect(m_target, &QLineEdit::textChanged, this, [this](const QString& text) { fig().setTarget(text); });
    connect(m_target, &QLineEdit::returnPressed, this, [this] { refresh(); });
    connect(m_target, &QLineEdit::textEdited, this, [this] { m_targetNote.clear(); });
    connect(go, &QPushButton::clicked, this, [this] { refresh(); });
    connect(map, &QComboBox::currentTextChanged, this,
            [this](const QString& n) { setColormapId(colormapFromName(n)); });
    refresh();
}

SaliencyFigure& SaliencyView::fig() const {
    (void)figure(); // the view's selection and colormap
    return figureAs<SaliencyFigure>();
}

void SaliencyView::setTarget(const QString& piece) {
    m_target->setText(piece);
    fig().setTarget(m_target->text());
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

void SaliencyView::setSettings(const QJsonObject& s) {
    // The target goes through the field (the figure's target is the field's text).
    QJsonObject rest = s;
    rest.remove(QStringLiteral("target"));
    View::setSettings(rest);
    if (s.contains(QStringLiteral("target"))) setTarget(s.value(QStringLiteral("target")).toString());
}

void SaliencyView::setSaliency(const SaliencyResult& result) {
    if (!fig().setSaliency(result)) return; // stale: another token or target
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
    fig().clearSaliency();
    Q_EMIT saliencyRequested(selToken(), target());
}

void SaliencyView::refresh() {
    m_chips->update();
    const SaliencyFigure& f = fig();
    if (!f.hasContent()) {
        m_chart->setPlaceholder(f.missingDataMessage());
        m_table->setRowCount(0);
        m_status->clear();
        return;
    }
    requestIfNeeded();
    const QString tgt =
        target().isEmpty() ? QStringLiteral("the actual next token") : QStringLiteral("'%1'").arg(target());
    if (!f.resultCurrent()) {
        m_status->setText(QStringLiteral("Computing saliency of %1 at token %2\u2026").arg(tgt).arg(selToken()) +
                          (m_targetNote.isEmpty() ? QString() : QStringLiteral(" \u00b7 ") + m_targetNote));
        m_chart->setPlaceholder(QStringLiteral("Computing gradient \u00d7 input saliency\u2026"));
        m_table->setRowCount(0);
        return;
    }
    const SaliencyResult& result = f.saliency();
    QStringList errs;
    if (!result.grassmannError.empty())
        errs << QStringLiteral("Grassmann: ") + QString::fromStdString(result.grassmannError);
    if (!result.baselineError.empty())
        errs << QStringLiteral("Transformer: ") + QString::fromStdString(result.baselineError);
    QString status = errs.isEmpty() ? QStringLiteral("Target %1 ('%2' / '%3')")
                                          .arg(tgt, QString::fromStdString(result.grassmannTarget),
                                               QString::fromStdString(result.baselineTarget))
                                    : errs.join(QStringLiteral("; "));
    if (!m_targetNote.isEmpty()) status += QStringLiteral(" \u00b7 ") + m_targetNote;
    m_status->setText(status);
    const ChartData c = f.barChart();
    if (c.hasData())
        m_chart->setChart(c);
    else
        m_chart->setPlaceholder(errs.isEmpty() ? QStringLiteral("No saliency") : errs.join(QLatin1Char('\n')));
    const auto comps = f.comparisons();
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

} // namespace gwb::views
