#include "gui/import_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace gwb::app {

ImportDialog::ImportDialog(const QString& path, const QString& message, const ImportChoice& initial, QWidget* parent)
    : QDialog(parent), m_path(path), m_error(new QLabel(message, this)), m_layout(new QComboBox(this)),
      m_vocab(new QLineEdit(this)), m_offsets(new QLineEdit(this)) {
    setWindowTitle(QStringLiteral("Open %1").arg(QFileInfo(path).fileName()));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("color: #a01010;"));
    m_layout->addItems(importLayoutNames());
    m_layout->setToolTip(
        QStringLiteral("Which PyTorch implementation saved the checkpoint (auto: guess from the key names)"));
    m_vocab->setPlaceholderText(QStringLiteral("vocab.txt (WordPiece) or vocab.json (GPT-2, with merges.txt)"));
    m_offsets->setPlaceholderText(QStringLiteral("the layout's schedule, e.g. 1,2,4,8,12,16 or per_layer:1,2,4"));
    auto* browse = new QPushButton(QStringLiteral("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, &ImportDialog::browseVocabulary);
    auto* vocabRow = new QHBoxLayout;
    vocabRow->addWidget(m_vocab, 1);
    vocabRow->addWidget(browse);

    auto* form = new QFormLayout;
    form->addRow(QStringLiteral("Layout:"), m_layout);
    form->addRow(QStringLiteral("Vocabulary:"), vocabRow);
    form->addRow(QStringLiteral("Offsets (optional):"), m_offsets);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(
        new QLabel(QStringLiteral("<b>%1</b> could not be opened on its own:").arg(path.toHtmlEscaped()), this));
    layout->addWidget(m_error);
    layout->addLayout(form);
    layout->addWidget(buttons);
    setChoice(initial);
}

ImportChoice ImportDialog::choice() const {
    ImportChoice c;
    c.layout = m_layout->currentText();
    c.vocabPath = m_vocab->text().trimmed();
    c.offsets = m_offsets->text().trimmed();
    return c;
}

void ImportDialog::setChoice(const ImportChoice& choice) {
    const int i = m_layout->findText(choice.layout, Qt::MatchFixedString);
    m_layout->setCurrentIndex(i >= 0 ? i : 0);
    m_vocab->setText(choice.vocabPath);
    m_offsets->setText(choice.offsets);
}

QString ImportDialog::errorText() const {
    return m_error->text();
}

void ImportDialog::browseVocabulary() {
    const QString start = m_vocab->text().isEmpty() ? QFileInfo(m_path).absolutePath() : m_vocab->text();
    const QString file =
        QFileDialog::getOpenFileName(this, QStringLiteral("Choose Vocabulary"), start,
                                     QStringLiteral("Vocabularies (vocab.txt vocab.json *.txt *.json);;All files (*)"));
    if (!file.isEmpty()) m_vocab->setText(file);
}

} // namespace gwb::app
