#include "causal_common.h"

#include "view_common.h"

#include "gwb/views/view_data.h"

#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPainter>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace gwb::views::detail {

MetricFields addMetricFields(QVBoxLayout* layout, const QString& prefix, const QString& corruptPlaceholder,
                             const QString& corruptTip, QWidget* parent) {
    MetricFields f;
    auto* fields = new QHBoxLayout();
    fields->addWidget(new QLabel(QStringLiteral("Corrupted"), parent));
    f.corrupt = new QLineEdit(parent);
    f.corrupt->setObjectName(prefix + QStringLiteral("Corrupt"));
    f.corrupt->setPlaceholderText(corruptPlaceholder);
    f.corrupt->setToolTip(corruptTip);
    fields->addWidget(f.corrupt, 3);
    fields->addWidget(new QLabel(QStringLiteral("Answer"), parent));
    f.answer = new QLineEdit(parent);
    f.answer->setObjectName(prefix + QStringLiteral("Answer"));
    f.answer->setPlaceholderText(QStringLiteral("piece"));
    f.answer->setToolTip(QStringLiteral("One vocabulary piece: the metric is logit[answer] - logit[wrong] at the "
                                        "last token"));
    fields->addWidget(f.answer, 1);
    fields->addWidget(new QLabel(QStringLiteral("Wrong"), parent));
    f.wrong = new QLineEdit(parent);
    f.wrong->setObjectName(prefix + QStringLiteral("Wrong"));
    f.wrong->setPlaceholderText(QStringLiteral("piece"));
    fields->addWidget(f.wrong, 1);
    layout->addLayout(fields);
    return f;
}

QDoubleSpinBox* addMinDifference(QHBoxLayout* bar, const QString& prefix, QWidget* parent) {
    auto* label = new QLabel(QStringLiteral("min |c\u2212k|"), parent);
    auto* box = new QDoubleSpinBox(parent);
    box->setObjectName(prefix + QStringLiteral("MinDifference"));
    box->setRange(0.0, 100.0);
    box->setDecimals(4);
    box->setSingleStep(0.01);
    box->setValue(gwb::engine::kDefaultMinDifference);
    box->setSuffix(QStringLiteral(" logits"));
    const QString tip = QStringLiteral(
        "The least |clean \u2212 corrupted| metric difference for a normalised effect (p \u2212 k) / (c \u2212 k). "
        "Below it the quotient would divide by rounding noise: the cells show the raw effect p \u2212 k in logits "
        "on their own scale, and the status says why. Over pairs: the pairs' mean difference must reach it for an "
        "effect to localise, and the mean of per-pair ratios leaves out the pairs below it.");
    label->setToolTip(tip);
    box->setToolTip(tip);
    bar->addWidget(label);
    bar->addWidget(box);
    return box;
}

QString choosePairsFile(QWidget* parent, const std::string& lastFile) {
    return QFileDialog::getOpenFileName(parent, QStringLiteral("Pairs file"),
                                        QFileInfo(QString::fromStdString(lastFile)).absolutePath(),
                                        QStringLiteral("Pairs (*.jsonl *.json *.csv);;All files (*)"));
}

RunControls addRunControls(QHBoxLayout* bar, const QString& prefix, QWidget* parent) {
    RunControls c;
    c.run = new QPushButton(QStringLiteral("Run"), parent);
    c.run->setObjectName(prefix + QStringLiteral("Run"));
    bar->addWidget(c.run);
    c.cancel = new QPushButton(QStringLiteral("Cancel"), parent);
    c.cancel->setObjectName(prefix + QStringLiteral("Cancel"));
    c.cancel->setVisible(false);
    bar->addWidget(c.cancel);
    c.progress = new QProgressBar(parent);
    c.progress->setRange(0, 1000);
    c.progress->setMaximumWidth(160);
    c.progress->setVisible(false);
    bar->addWidget(c.progress);
    // The status goes on a row of its own below the bar (the caller adds it): a long message wraps
    // there instead of squeezing the bar's controls.
    c.status = messageLabel(parent, prefix + QStringLiteral("Status"));
    bar->addStretch(1);
    return c;
}

void showRunning(const RunControls& c, bool running, const QString& what) {
    c.run->setEnabled(!running);
    c.cancel->setVisible(running);
    c.progress->setVisible(running);
    if (running) {
        c.progress->setValue(0);
        c.status->setText(what);
    }
}

namespace {
/// A table that says, while it is empty, how it gets filled (an empty frame told nobody).
class PlaceholderTable final : public QTableWidget {
public:
    PlaceholderTable(QWidget* parent, const QString& placeholder) : QTableWidget(parent), m_placeholder(placeholder) {}

protected:
    void paintEvent(QPaintEvent* event) override {
        QTableWidget::paintEvent(event);
        if (rowCount() > 0 || m_placeholder.isEmpty()) return;
        QPainter p(viewport());
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(viewport()->rect().adjusted(8, 8, -8, -8), Qt::AlignTop | Qt::AlignHCenter | Qt::TextWordWrap,
                   m_placeholder);
    }

private:
    QString m_placeholder;
};
} // namespace

QTableWidget* makeTopKTable(QWidget* parent, const QString& objectName, const QString& tip) {
    auto* t = new PlaceholderTable(parent, tip + QLatin1Char('.'));
    t->setObjectName(objectName);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->verticalHeader()->hide();
    t->setColumnCount(3);
    t->setHorizontalHeaderLabels({QStringLiteral("next piece"), QStringLiteral("p"), QStringLiteral("logit")});
    t->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    t->horizontalHeader()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
    t->horizontalHeader()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
    t->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    t->setToolTip(tip);
    return t;
}

void showTopK(QTableWidget* table, const gwb::engine::PatchingTopK& k, const QString& tip) {
    table->setRowCount(0);
    table->setHorizontalHeaderLabels({QStringLiteral("next piece"), QStringLiteral("p"), QStringLiteral("logit")});
    if (!k.error.empty()) return;
    table->setToolTip(tip);
    table->setRowCount(static_cast<int>(k.pieces.size()));
    for (int i = 0; i < static_cast<int>(k.pieces.size()); ++i) {
        auto* piece = new QTableWidgetItem(displayPiece(qs(k.pieces[static_cast<size_t>(i)])));
        piece->setToolTip(qs(k.pieces[static_cast<size_t>(i)])); // the piece as the tokenizer writes it
        table->setItem(i, 0, piece);
        table->setItem(i, 1, valueItem(k.probs[static_cast<size_t>(i)], QString()));
        table->setItem(i, 2, valueItem(k.logits[static_cast<size_t>(i)], QString()));
    }
}

} // namespace gwb::views::detail
