#pragma once
// File > Export Figure: file name (format from its suffix), paper preset or width, DPI, font
// size, colormap, colorbar and caption. Produces the FigureSettings that `gwb figure` also uses.

#include "runs/figure_request.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSpinBox;

namespace gwb::app {

class ExportDialog : public QDialog {
    Q_OBJECT
public:
    ExportDialog(const QString& viewTitle, const QString& colormap, QWidget* parent = nullptr);
    QString path() const;
    FigureSettings settings() const;

private:
    void browse();
    void presetChanged(int index);

    QLineEdit* m_path;
    QComboBox* m_preset;
    QDoubleSpinBox* m_width;
    QSpinBox* m_dpi;
    QDoubleSpinBox* m_font;
    QComboBox* m_colormap;
    QCheckBox* m_colorbar;
    QCheckBox* m_caption;
    QCheckBox* m_selection;
};

} // namespace gwb::app
