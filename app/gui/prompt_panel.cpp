#include "gui/prompt_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QGridLayout>
#include <QScrollArea>
#include <QFile>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QResizeEvent>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTextBlock>
#include <QTextCursor>
#include <QVBoxLayout>

#include <algorithm>

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
        clearErrorNotice(); // a new prompt: an error about the last one (a file that was not text) has gone
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

    m_continue = new QPushButton(QStringLiteral("Continue"), this);
    m_continue->setObjectName(QStringLiteral("continueButton"));
    m_continue->setToolTip(QStringLiteral(
        "Let the Grassmann model write the next tokens (incremental decoding), append them to the prompt, "
        "marked, and trace prompt + continuation through both models (Ctrl+Shift+Enter)"));
    m_continueCount = new QSpinBox(this);
    m_continueCount->setObjectName(QStringLiteral("continueCount"));
    m_continueCount->setRange(1, 4096);
    m_continueCount->setValue(16);
    m_continueCount->setPrefix(QStringLiteral("+"));
    m_continueCount->setSuffix(QStringLiteral(" tokens"));
    m_continueCount->setToolTip(QStringLiteral("How many tokens Continue generates"));
    m_sample = new QCheckBox(QStringLiteral("sample"), this);
    m_sample->setObjectName(QStringLiteral("continueSample"));
    m_sample->setToolTip(QStringLiteral("Sample the continuation (temperature 1, top-p 0.9, seed 0: the same text "
                                        "every time) instead of always taking the likeliest token (greedy), which "
                                        "makes the bundled models write white space"));
    m_sample->setChecked(true);
    connect(m_continue, &QPushButton::clicked, this,
            [this] { Q_EMIT continueRequested(m_continueCount->value(), m_sample->isChecked()); });
    // Editing the text makes the mark meaningless: the typed and generated parts mix.
    connect(m_editor, &QPlainTextEdit::textChanged, this, [this] {
        if (m_continuationFrom >= 0 && !m_marking) markContinuation(-1);
    });

    m_count = new QLabel(this);
    m_count->setStyleSheet(QStringLiteral("color: palette(mid);"));
    connect(m_editor, &QPlainTextEdit::textChanged, this,
            [this] { m_count->setText(QStringLiteral("%1 characters").arg(m_editor->toPlainText().size())); });
    m_count->setText(QStringLiteral("0 characters"));

    m_notice = new QLabel(this);
    m_notice->setObjectName(QStringLiteral("promptNotice"));
    m_notice->setWordWrap(true);
    m_notice->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // A long notice scrolls inside a few lines instead of making the window taller.
    m_noticeArea = new QScrollArea(this);
    m_noticeArea->setWidget(m_notice);
    m_noticeArea->setWidgetResizable(true);
    m_noticeArea->setFrameShape(QFrame::NoFrame);
    m_noticeArea->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_noticeArea->hide();

    // Two rows of buttons beside the editor, so the panel stays a few lines tall and the views
    // keep the window's height (1280 x 720 laptops).
    auto* buttons = new QGridLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->setVerticalSpacing(2);
    buttons->addWidget(m_run, 0, 0);
    buttons->addWidget(m_cancel, 0, 1);
    buttons->addWidget(m_samples, 0, 2, 1, 2);
    buttons->addWidget(m_continue, 1, 0);
    buttons->addWidget(m_continueCount, 1, 1);
    buttons->addWidget(m_sample, 1, 2);
    buttons->addWidget(m_count, 1, 3);
    buttons->setRowStretch(2, 1);

    auto* row = new QHBoxLayout;
    row->addWidget(m_editor, 1);
    row->addLayout(buttons);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 2, 6, 2);
    layout->setSpacing(2);
    layout->addLayout(row, 1);
    layout->addWidget(m_noticeArea);
    // Spare height goes to the views, not to the editor.
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
}

QSize PromptPanel::sizeHint() const {
    QSize s = QWidget::sizeHint();
    s.setHeight(std::min(s.height(), minimumSizeHint().height() + QFontMetrics(font()).lineSpacing() * 2));
    return s;
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

void PromptPanel::markContinuation(int from) {
    const int length = m_editor->document()->characterCount() - 1;
    m_continuationFrom = (from >= 0 && from < length) ? from : -1;
    QList<QTextEdit::ExtraSelection> marks;
    if (m_continuationFrom >= 0) {
        QTextEdit::ExtraSelection mark;
        mark.cursor = QTextCursor(m_editor->document());
        mark.cursor.setPosition(m_continuationFrom);
        mark.cursor.setPosition(length, QTextCursor::KeepAnchor);
        mark.format.setBackground(QColor(0xfd, 0xe0, 0xc5)); // light orange, as the strip's dashed border
        mark.format.setToolTip(QStringLiteral("generated by Continue"));
        marks << mark;
    }
    m_marking = true;
    m_editor->setExtraSelections(marks);
    m_marking = false;
}

void PromptPanel::setNotice(const QString& text, const QString& kind) {
    if (text.isEmpty()) {
        m_notice->clear();
        m_noticeKind.clear();
        const bool had = !m_noticeArea->isHidden();
        m_noticeArea->hide();
        if (had) Q_EMIT noticeShownChanged(false);
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
    m_noticeKind = kind;
    const bool had = !m_noticeArea->isHidden();
    m_noticeArea->show();
    fitNoticeHeight();
    if (!had) Q_EMIT noticeShownChanged(true);
}

void PromptPanel::fitNoticeHeight() {
    if (m_noticeArea->isHidden()) return;
    const int maxHeight = QFontMetrics(m_notice->font()).lineSpacing() * 3 + 14;
    const int width = std::max(100, m_noticeArea->width() - 2);
    const int need = m_notice->heightForWidth(width);
    m_noticeArea->setFixedHeight(std::clamp(need > 0 ? need + 2 : maxHeight, 8, maxHeight));
}

void PromptPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitNoticeHeight();
}

QString PromptPanel::notice() const {
    return m_noticeArea->isHidden() ? QString() : m_notice->text();
}

bool PromptPanel::eventFilter(QObject* watched, QEvent* event) {
    // The editor claims Ctrl+E (move to the end of the line on X11) before the window's Export
    // Figure shortcut sees it: leave it to the window, as the menu promises.
    if (watched == m_editor && event->type() == QEvent::ShortcutOverride) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_E && (key->modifiers() & ~Qt::KeypadModifier) == Qt::ControlModifier) return true;
    }
    if (watched == m_editor && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) && (key->modifiers() & Qt::ControlModifier)) {
            if (key->modifiers() & Qt::ShiftModifier)
                Q_EMIT continueRequested(m_continueCount->value(), m_sample->isChecked());
            else
                Q_EMIT runRequested();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace gwb::app
