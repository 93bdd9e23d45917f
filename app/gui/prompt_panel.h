#pragma once
// The prompt editor: text, Run and Cancel, a menu of sample prompts, and a notice line for
// truncation and errors that stays until the next run.

#include <QWidget>

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace gwb::app {

class PromptPanel : public QWidget {
    Q_OBJECT
public:
    explicit PromptPanel(QWidget* parent = nullptr);

    QString prompt() const;
    void setPrompt(const QString& text);
    /// Running: Run reads "Run again" semantics are kept, Cancel is enabled.
    void setRunning(bool running);
    /// Notice under the editor; kind: "info", "warning" or "error"; "" text hides it.
    void setNotice(const QString& text, const QString& kind = QStringLiteral("warning"));
    QString notice() const;
    QPlainTextEdit* editor() const { return m_editor; }
    QPushButton* runButton() const { return m_run; }
    QPushButton* cancelButton() const { return m_cancel; }

Q_SIGNALS:
    void runRequested();
    void cancelRequested();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void loadSamples();

    QPlainTextEdit* m_editor;
    QComboBox* m_samples;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QLabel* m_notice;
    QLabel* m_count;
};

} // namespace gwb::app
