#include "gui/corpus_dialog.h"

#include "gui/recent_files.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace gwb::app {

CorpusDialog::CorpusDialog(const QString& models, const CorpusRequest& initial, QWidget* parent)
    : QDialog(parent), m_base(initial) {
    setWindowTitle(QStringLiteral("Corpus Statistics"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(QStringLiteral("Runs %1 over the text files window by window and accumulates the "
                                            "statistics `gwb stats` makes. Cancel keeps the windows done.")
                                 .arg(models),
                             this);
    intro->setWordWrap(true);
    layout->addWidget(intro);

    auto* form = new QFormLayout();
    auto* filesBox = new QVBoxLayout();
    m_files = new QListWidget(this);
    m_files->setObjectName(QStringLiteral("corpusFiles"));
    m_files->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_files->setMinimumHeight(90);
    filesBox->addWidget(m_files);
    auto* fileButtons = new QHBoxLayout();
    auto* add = new QPushButton(QStringLiteral("Add…"), this);
    auto* remove = new QPushButton(QStringLiteral("Remove"), this);
    fileButtons->addWidget(add);
    fileButtons->addWidget(remove);
    fileButtons->addStretch();
    filesBox->addLayout(fileButtons);
    form->addRow(QStringLiteral("Text files"), filesBox);
    connect(add, &QPushButton::clicked, this, &CorpusDialog::addFiles);
    connect(remove, &QPushButton::clicked, this, [this] { qDeleteAll(m_files->selectedItems()); });

    m_window = new QSpinBox(this);
    m_window->setRange(2, 1 << 20);
    m_window->setSuffix(QStringLiteral(" tokens"));
    m_window->setToolTip(QStringLiteral("Tokens per window; at most the models' context length"));
    form->addRow(QStringLiteral("Window"), m_window);
    m_stride = new QSpinBox(this);
    m_stride->setRange(1, 1 << 20);
    m_stride->setSuffix(QStringLiteral(" tokens"));
    m_stride->setToolTip(QStringLiteral("Tokens between window starts"));
    form->addRow(QStringLiteral("Stride"), m_stride);
    m_maxWindows = new QSpinBox(this);
    m_maxWindows->setRange(0, 1 << 30);
    m_maxWindows->setSpecialValueText(QStringLiteral("all"));
    m_maxWindows->setToolTip(QStringLiteral("Use only the first N windows of all files (0 = all)"));
    form->addRow(QStringLiteral("Max windows"), m_maxWindows);
    auto* outRow = new QHBoxLayout();
    m_out = new QLineEdit(this);
    m_out->setObjectName(QStringLiteral("corpusOut"));
    auto* browse = new QPushButton(QStringLiteral("Browse…"), this);
    outRow->addWidget(m_out, 1);
    outRow->addWidget(browse);
    form->addRow(QStringLiteral("Statistics file"), outRow);
    connect(browse, &QPushButton::clicked, this, &CorpusDialog::browseOut);
    layout->addLayout(form);

    m_error = new QLabel(this);
    m_error->setObjectName(QStringLiteral("corpusError"));
    m_error->setWordWrap(true);
    m_error->setStyleSheet(QStringLiteral("color: #a01010;"));
    m_error->hide();
    layout->addWidget(m_error);
    // A message about the fields goes as soon as a field changes (it may no longer be true).
    auto clearError = [this] { m_error->hide(); };
    connect(m_files->model(), &QAbstractItemModel::rowsInserted, this, clearError);
    connect(m_files->model(), &QAbstractItemModel::rowsRemoved, this, clearError);
    for (QSpinBox* box : {m_window, m_stride, m_maxWindows})
        connect(box, &QSpinBox::valueChanged, this, clearError);
    connect(m_out, &QLineEdit::textChanged, this, clearError);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(QStringLiteral("Run"));
    connect(buttons, &QDialogButtonBox::accepted, this, &CorpusDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
    setRequest(initial);
    resize(560, 420);
}

CorpusRequest CorpusDialog::request() const {
    CorpusRequest r = m_base;
    r.files.clear();
    for (int i = 0; i < m_files->count(); ++i)
        r.files << m_files->item(i)->text();
    r.window = m_window->value();
    r.stride = m_stride->value();
    r.maxWindows = m_maxWindows->value();
    r.outPath = m_out->text().trimmed();
    return r;
}

void CorpusDialog::setRequest(const CorpusRequest& r) {
    m_base = r;
    m_files->clear();
    m_files->addItems(r.files);
    m_window->setValue(static_cast<int>(r.window));
    m_stride->setValue(static_cast<int>(r.stride));
    m_maxWindows->setValue(static_cast<int>(r.maxWindows));
    m_out->setText(r.outPath);
}

void CorpusDialog::accept() {
    const QString problem = validateCorpusRequest(request());
    if (!problem.isEmpty()) {
        m_error->setText(problem);
        m_error->show();
        return;
    }
    QDialog::accept();
}

void CorpusDialog::addFiles() {
    const QStringList files =
        QFileDialog::getOpenFileNames(this, QStringLiteral("Text Files"), dialogFolder(QStringLiteral("corpus")),
                                      QStringLiteral("Text (*.txt);;All files (*)"));
    if (!files.isEmpty()) rememberDialogFolder(files.first(), QStringLiteral("corpus"));
    for (const QString& f : files)
        if (m_files->findItems(f, Qt::MatchExactly).isEmpty()) m_files->addItem(f);
}

void CorpusDialog::browseOut() {
    const QString f = QFileDialog::getSaveFileName(this, QStringLiteral("Statistics File"), m_out->text(),
                                                   QStringLiteral("Statistics (*.npz)"));
    if (!f.isEmpty()) m_out->setText(f.endsWith(QLatin1String(".npz")) ? f : f + QStringLiteral(".npz"));
}

} // namespace gwb::app
