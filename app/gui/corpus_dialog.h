#pragma once
// Run > Corpus: asks for the text files, window, stride, maximum number of windows and the
// statistics file to write. request()/setRequest() fill it without exec() (tests).

#include "gui/corpus_job.h"

#include <QDialog>

class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace gwb::app {

class CorpusDialog : public QDialog {
    Q_OBJECT
public:
    /// `models`: one line naming the models that will run (shown at the top).
    explicit CorpusDialog(const QString& models, const CorpusRequest& initial = {}, QWidget* parent = nullptr);

    /// The files, window, stride, max windows and output path (model paths and device untouched).
    CorpusRequest request() const;
    void setRequest(const CorpusRequest& request);

    void accept() override; ///< checks the fields first; a problem is shown and the dialog stays

private:
    void addFiles();
    void browseOut();

    QListWidget* m_files;
    QSpinBox* m_window;
    QSpinBox* m_stride;
    QSpinBox* m_maxWindows;
    QLineEdit* m_out;
    QLabel* m_error;
    CorpusRequest m_base;
};

} // namespace gwb::app
