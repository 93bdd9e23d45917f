#include "gui/prompt_panel.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace gwb::app {

PromptPanel::PromptPanel(QWidget* parent) : QWidget(parent) {
    m_editor = new QPlainTextEdit(this);
    m_editor->setObjectName(QStringLiteral("promptEditor"));
    m_editor->setPlaceholderText(QStringLiteral("Type a prompt, then Run (Ctrl+Enter)"));
    m_editor->setTabChangesFocus(true);
    m_editor->installEventFilter(this);
    // A few lines are enough: the views need the room.
    m_editor->setMinimumHeight(QFontMetrics(m_editor->font()).lineSpacing() * 3 + 12);

    m_samples = new QComboBox(this);
    m_samples->setObjectName(QStringLiteral("samplePrompts"));
    m_samples->setToolTip(QStringLiteral("Sample prompts in the style of the bundled Austen models"));
    loadSamples();
    connect(m_samples, &QComboBox::activated, this, [this](int index) {
        if (index <= 0) return;
        m_editor->setPlainText(m_samples->itemData(index).toString());
        m_samples->setCurrentIndex(0);
    });

    m_run = new QPushButton(QStringLiteral("Run"), this);
    m_run->setObjectName(QStringLiteral("runButton"));
    m_run->setDefault(true);
    m_run->setToolTip(QStringLiteral("Trace the prompt through both models (Ctrl+Enter)"));
    m_cancel = new QPushButton(QStringLiteral("Cancel"), this);
    m_cancel->setObjectName(QStringLiteral("cancelButton"));
    m_cancel->setEnabled(false);
    connect(m_run, &QPushButton::clicked, this, &PromptPanel::runRequested);
    connect(m_cancel, &QPushButton::clicked, this, &PromptPanel::cancelRequested);

    m_count = new QLabel(this);
    m_count->setStyleSheet(QStringLiteral("color: palette(mid);"));
    connect(m_editor, &QPlainTextEdit::textChanged, this,
            [this] { m_count->setText(QStringLiteral("%1 characters").arg(m_editor->toPlainText().size())); });
    m_count->setText(QStringLiteral("0 characters"));

    m_notice = new QLabel(this);
    m_notice->setObjectName(QStringLiteral("promptNotice"));
    m_notice->setWordWrap(true);
    m_notice->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_notice->hide();

    auto* buttons = new QVBoxLayout;
    buttons->addWidget(m_run);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_samples);
    buttons->addWidget(m_count);
    buttons->addStretch();

    auto* row = new QHBoxLayout;
    row->addWidget(m_editor, 1);
    row->addLayout(buttons);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 4);
    layout->addLayout(row, 1);
    layout->addWidget(m_notice);
}

void PromptPanel::loadSamples() {
    m_samples->addItem(QStringLiteral("Sample prompts…"));
    const QDir dir(QStringLiteral(":/gwb/prompts"));
    for (const QString& name : dir.entryList({QStringLiteral("*.txt")}, QDir::Files, QDir::Name)) {
        QFile f(dir.filePath(name));
        if (!f.open(QIODevice::ReadOnly)) continue;
        const QString text = QString::fromUtf8(f.readAll()).trimmed();
        QString label = name.chopped(4);
        label.replace(QLatin1Char('-'), QLatin1Char(' '));
        m_samples->addItem(label, text);
    }
}

QString PromptPanel::prompt() const {
    return m_editor->toPlainText();
}

void PromptPanel::setPrompt(const QString& text) {
    m_editor->setPlainText(text);
}

void PromptPanel::setRunning(bool running) {
    m_cancel->setEnabled(running);
}

void PromptPanel::setNotice(const QString& text, const QString& kind) {
    if (text.isEmpty()) {
        m_notice->clear();
        m_notice->hide();
        return;
    }
    QString style;
    if (kind == QLatin1String("error"))
        style = QStringLiteral("background:#fde2e1; color:#7a1712; border:1px solid #e8a09b;");
    else if (kind == QLatin1String("info"))
        style = QStringLiteral("background:#e6f0fa; color:#173f66; border:1px solid #a9c6e6;");
    else
        style = QStringLiteral("background:#fff4cc; color:#5c4400; border:1px solid #e6cf7a;");
    m_notice->setStyleSheet(style + QStringLiteral(" padding:3px 6px; border-radius:3px;"));
    m_notice->setText(text);
    m_notice->show();
}

QString PromptPanel::notice() const {
    return m_notice->isHidden() ? QString() : m_notice->text();
}

bool PromptPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_editor && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && (key->modifiers() & Qt::ControlModifier)) {
            Q_EMIT runRequested();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace gwb::app
