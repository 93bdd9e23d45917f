#include "gui/export_dialog.h"

#include "gui/recent_files.h"

#include "gwb/views/colormap.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

namespace gwb::app {

ExportDialog::ExportDialog(const QString& viewTitle, const QString& colormap, QWidget* parent) : QDialog(parent) {
    setWindowTitle(QStringLiteral("Export Figure: %1").arg(viewTitle));
    QSettings s;
    m_path = new QLineEdit(
        s.value(QStringLiteral("export/lastPath"), QDir::home().filePath(QStringLiteral("figure.pdf"))).toString(),
        this);
    auto* browse = new QPushButton(QStringLiteral("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, &ExportDialog::browse);
    auto* pathRow = new QHBoxLayout;
    pathRow->addWidget(m_path, 1);
    pathRow->addWidget(browse);

    m_preset = new QComboBox(this);
    m_preset->addItem(QStringLiteral("One column (3.5 in)"), 3.5);
    m_preset->addItem(QStringLiteral("Two columns (7 in)"), 7.0);
    m_preset->addItem(QStringLiteral("Custom width"), 0.0);
    m_width = new QDoubleSpinBox(this);
    m_width->setRange(1, 40);
    m_width->setSuffix(QStringLiteral(" in"));
    m_width->setValue(3.5);
    m_width->setEnabled(false);
    connect(m_preset, &QComboBox::currentIndexChanged, this, &ExportDialog::presetChanged);
    m_dpi = new QSpinBox(this);
    m_dpi->setRange(72, 1200);
    m_dpi->setValue(s.value(QStringLiteral("export/dpi"), 300).toInt());
    m_font = new QDoubleSpinBox(this);
    m_font->setRange(0, 24);
    m_font->setSpecialValueText(QStringLiteral("preset (8 pt / 9 pt)"));
    m_font->setSuffix(QStringLiteral(" pt"));
    m_colormap = new QComboBox(this);
    m_colormap->addItem(QStringLiteral("as on screen"), QString());
    for (const QString& name : gwb::views::colormapNames())
        if (name != QLatin1String("RdBu")) m_colormap->addItem(name, name);
    const int i = m_colormap->findData(colormap);
    if (i >= 0) m_colormap->setCurrentIndex(i);
    m_colorbar = new QCheckBox(QStringLiteral("Colour bar"), this);
    m_colorbar->setChecked(true);
    m_caption = new QCheckBox(QStringLiteral("Caption with the definition"), this);
    m_caption->setChecked(true);
    m_selection = new QCheckBox(QStringLiteral("Outline the selection (token column, layer row)"), this);
    m_selection->setObjectName(QStringLiteral("exportSelection"));
    m_selection->setChecked(false);

    auto* form = new QFormLayout;
    form->addRow(QStringLiteral("File (.png, .svg, .pdf)"), pathRow);
    form->addRow(QStringLiteral("Size"), m_preset);
    form->addRow(QStringLiteral("Width"), m_width);
    form->addRow(QStringLiteral("PNG resolution (DPI)"), m_dpi);
    form->addRow(QStringLiteral("Font size"), m_font);
    form->addRow(QStringLiteral("Colormap"), m_colormap);
    form->addRow(QString(), m_colorbar);
    form->addRow(QString(), m_caption);
    form->addRow(QString(), m_selection);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(QStringLiteral("Export"));
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        QSettings st;
        st.setValue(QStringLiteral("export/lastPath"), path());
        st.setValue(QStringLiteral("export/dpi"), m_dpi->value());
        accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
}

void ExportDialog::browse() {
    const QString p = QFileDialog::getSaveFileName(this, QStringLiteral("Export Figure"), m_path->text(),
                                                   QStringLiteral("PDF (*.pdf);;SVG (*.svg);;PNG (*.png)"));
    rememberDialogFolder(p, QStringLiteral("figures"));
    if (!p.isEmpty()) m_path->setText(p);
}

void ExportDialog::presetChanged(int index) {
    const double w = m_preset->itemData(index).toDouble();
    m_width->setEnabled(w == 0);
    if (w > 0) m_width->setValue(w);
}

QString ExportDialog::path() const {
    return m_path->text().trimmed();
}

FigureSettings ExportDialog::settings() const {
    FigureSettings f;
    f.widthInches = m_width->value();
    f.dpi = m_dpi->value();
    f.colormap = m_colormap->currentData().toString();
    f.fontPoints = m_font->value();
    f.colorbar = m_colorbar->isChecked();
    f.caption = m_caption->isChecked();
    f.selection = m_selection->isChecked();
    return f;
}

} // namespace gwb::app
