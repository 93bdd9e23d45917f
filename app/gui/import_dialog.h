#pragma once
// Asks for the layout, the vocabulary and (optionally) the offset schedule of a PyTorch
// checkpoint that could not be opened on its own, showing why. The fields are reachable through
// choice()/setChoice() so that tests fill it without exec().

#include "runs/import_choice.h"

#include <QDialog>

class QComboBox;
class QLabel;
class QLineEdit;

namespace gwb::app {

class ImportDialog : public QDialog {
    Q_OBJECT
public:
    /// `path`: the checkpoint; `message`: the error that made asking necessary.
    ImportDialog(const QString& path, const QString& message, const ImportChoice& initial = {},
                 QWidget* parent = nullptr);

    ImportChoice choice() const;
    void setChoice(const ImportChoice& choice);
    QString errorText() const;

private:
    void browseVocabulary();

    QString m_path;
    QLabel* m_error;
    QComboBox* m_layout;
    QLineEdit* m_vocab;
    QLineEdit* m_offsets;
};

} // namespace gwb::app
