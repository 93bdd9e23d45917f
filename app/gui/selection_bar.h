#pragma once
// Toolbar controls bound to the shared Selection: token, layer, head and offset, plus what colours
// the token strip. Changing a control changes the selection and
// the selection changes the controls (so clicks in views show up here).

#include "gwb/views/selection.h"
#include "gwb/views/view_data.h"

#include <QToolBar>

class QComboBox;
class QLabel;
class QSpinBox;

namespace gwb::app {

class SelectionBar : public QToolBar {
    Q_OBJECT
public:
    SelectionBar(gwb::views::Selection* selection, QWidget* parent = nullptr);

    /// New data: ranges, token texts, the offsets of each layer.
    void setData(const gwb::views::WorkbenchData& data);

    QString tokenScalar() const; ///< id from tokenScalarIds() (the chosen one, also while a custom colouring shows)
    void setTokenScalar(const QString& id);
    /// "Colour tokens by" shows what the strip is coloured by when it is not a scalar (a feature's
    /// activation: TokenStrip::customColouringChanged); "" returns to the chosen scalar.
    void showCustomColouring(const QString& name);

Q_SIGNALS:
    void tokenScalarChanged(const QString& id);

private:
    void syncFromSelection();
    void fillOffsets();

    gwb::views::Selection* m_selection;
    gwb::views::WorkbenchData m_data;
    QSpinBox* m_token;
    QLabel* m_tokenText;
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QComboBox* m_offset;
    QComboBox* m_scalar;
    QString m_chosenScalar = QStringLiteral("surprisal"); ///< the scalar chosen last (id)
    bool m_syncing = false;
};

} // namespace gwb::app
