#pragma once
// The prompt editor: text, Run and Cancel, a menu of sample prompts, and a notice line for
// truncation and errors that stays until the next run.

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace gwb::app {

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);
    /// A few lines taller than the minimum: the views get the rest of the window.
    QSize sizeHint() const override;

    QString prompt() const;
    void setPrompt(const QString& text);
    /// Running: Run reads "Run again" semantics are kept, Cancel is enabled.
    void setRunning(bool running);
    /// Notice under the editor; kind: "info", "warning" or "error"; "" text hides it.
    void setNotice(const QString& text, const QString& kind = QStringLiteral("warning"));
    QString notice() const;
    /// The shown notice's kind ("" when none).
    QString noticeKind() const { return m_noticeKind; }
    /// Hides the notice when it is an error (its cause has gone: a model opened, a run started).
    void clearErrorNotice() {
        if (m_noticeKind == QLatin1String("error")) setNotice({});
    }
    QPlainTextEdit* editor() const { return m_editor; }
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }
    QPushButton* continueButton() const { return m_continue; }
    QSpinBox* continueCount() const { return m_continueCount; }
    QCheckBox* sampleBox() const { return m_sample; }
    /// Shows text[from..] as generated (tinted) until the user edits the prompt; -1 clears.
    void markContinuation(int from);
    /// Where the tinted generated text starts, -1 when none is shown.
    int continuationFrom() const { return m_continuationFrom; }

Q_SIGNALS:
    /// The notice appeared or went: the panel's height hint changed.
    void noticeShownChanged(bool shown);
    void runRequested();
    void cancelRequested();
    /// Continue pressed: generate `tokens` more (greedy unless `sample`), then trace.
    void continueRequested(int tokens, bool sample);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    void loadSamples();
    /// The notice as tall as its text at the panel's width (a one-line banner takes one line, not
    /// three), at most three lines; beyond that it scrolls.
    void fitNoticeHeight();

    QPlainTextEdit* m_editor;
    QComboBox* m_samples;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QPushButton* m_continue;
    QSpinBox* m_continueCount;
    QCheckBox* m_sample;
    int m_continuationFrom = -1;
    bool m_marking = false;
    QLabel* m_notice;
    QScrollArea* m_noticeArea;
    QString m_noticeKind; ///< holds m_notice: at most three lines tall, scrolls beyond
    QLabel* m_count;
};

} // namespace gwb::app
