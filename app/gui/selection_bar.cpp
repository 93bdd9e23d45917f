#include "gui/selection_bar.h"

#include "gui/token_scalars.h"

#include "gwb/views/view_data.h"

#include <QComboBox>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

namespace gwb::app {

namespace {
const QString kCustom = QStringLiteral("custom"); ///< data of the item that names a custom colouring
} // namespace
namespace {
QLabel* caption(const QString& text, QWidget* parent) {
    auto* l = new QLabel(text, parent);
    l->setContentsMargins(8, 0, 3, 0);
    return l;
}

/// Token text made visible in a label: spaces and line breaks shown as symbols.
QString visibleToken(const QString& text) {
    QString s = gwb::views::displayPiece(text); // the one spelling of a piece (the Views Guide)
    s.replace(QLatin1Char('\n'), QStringLiteral("↵"));
    return s.isEmpty() ? QStringLiteral("∅") : s;
}
} // namespace

SelectionBar::SelectionBar(gwb::views::Selection* selection, QWidget* parent)
    : QToolBar(QStringLiteral("Selection"), parent), m_selection(selection) {
    setObjectName(QStringLiteral("selectionBar"));

    m_token = new QSpinBox(this);
    m_token->setObjectName(QStringLiteral("tokenSpin"));
    m_token->setToolTip(QStringLiteral("Selected token (Left/Right arrows in the token strip and views)"));
    m_tokenText = new QLabel(this);
    m_tokenText->setMinimumWidth(90);
    m_tokenText->setStyleSheet(QStringLiteral("font-weight: bold;"));
    m_layer = new QSpinBox(this);
    m_layer->setObjectName(QStringLiteral("layerSpin"));
    m_layer->setPrefix(QStringLiteral("L"));
    m_head = new QSpinBox(this);
    m_head->setObjectName(QStringLiteral("headSpin"));
    m_head->setPrefix(QStringLiteral("H"));
    m_head->setToolTip(QStringLiteral("Attention head of the Transformer baseline"));
    m_offset = new QComboBox(this);
    m_offset->setObjectName(QStringLiteral("offsetCombo"));
    m_offset->setToolTip(QStringLiteral("Offset D of the selected Grassmann layer (pairs t, t-D)"));
    m_offset->setMinimumContentsLength(6);

    m_scalar = new QComboBox(this);
    m_scalar->setObjectName(QStringLiteral("scalarCombo"));
    m_scalar->setToolTip(QStringLiteral("Per-token quantity that colours the token strip"));
    // Wide enough for what it names, a feature's activation included ("feature.resid.3.5" was
    // shown for feature.resid.3.59 in a box sized for the scalars).
    m_scalar->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_scalar->addItem(QStringLiteral("surprisal"), QStringLiteral("surprisal"));
    m_scalar->addItem(QStringLiteral("mean gate"), QStringLiteral("mean_gate"));
    m_scalar->addItem(QStringLiteral("Plücker residual"), QStringLiteral("residual"));
    m_scalar->addItem(QStringLiteral("planarity"), QStringLiteral("planarity"));
    m_scalar->addItem(QStringLiteral("coherence \u2016B_t\u2016"), QStringLiteral("coherence"));

    addWidget(caption(QStringLiteral("Token"), this));
    addWidget(m_token);
    addWidget(m_tokenText);
    addWidget(caption(QStringLiteral("Layer"), this));
    addWidget(m_layer);
    addWidget(caption(QStringLiteral("Head"), this));
    addWidget(m_head);
    addWidget(caption(QStringLiteral("Offset"), this));
    addWidget(m_offset);
    addSeparator();
    addWidget(caption(QStringLiteral("Colour tokens by"), this));
    addWidget(m_scalar);

    using gwb::views::Selection;
    connect(m_token, &QSpinBox::valueChanged, this, [this](int v) {
        if (!m_syncing) m_selection->setToken(v);
    });
    connect(m_layer, &QSpinBox::valueChanged, this, [this](int v) {
        if (!m_syncing) m_selection->setLayer(v);
    });
    connect(m_head, &QSpinBox::valueChanged, this, [this](int v) {
        if (!m_syncing) m_selection->setHead(v);
    });
    connect(m_offset, &QComboBox::currentIndexChanged, this, [this](int v) {
        if (!m_syncing && v >= 0) m_selection->setOffsetIndex(v);
    });
    connect(m_scalar, &QComboBox::currentIndexChanged, this, [this] {
        if (m_scalar->currentData().toString() == kCustom) return;
        m_chosenScalar = m_scalar->currentData().toString();
        Q_EMIT tokenScalarChanged(m_chosenScalar);
    });
    for (auto signal :
         {&Selection::tokenChanged, &Selection::layerChanged, &Selection::headChanged, &Selection::offsetIndexChanged})
        connect(m_selection, signal, this, [this] { syncFromSelection(); });
    connect(m_selection, &Selection::extentsChanged, this, [this] { syncFromSelection(); });
    syncFromSelection();
}

void SelectionBar::setData(const gwb::views::WorkbenchData& data) {
    m_data = data;
    syncFromSelection();
}

void SelectionBar::fillOffsets() {
    const QSignalBlocker block(m_offset);
    m_offset->clear();
    const int n = m_selection->offsetCount();
    const auto& g = m_data.grassmann;
    const int layer = m_selection->layer();
    const gwb::engine::GrassmannLayerTrace* lt = nullptr;
    if (g && layer < static_cast<int>(g->layers.size()) && g->layers[static_cast<size_t>(layer)].grassmann)
        lt = &*g->layers[static_cast<size_t>(layer)].grassmann;
    for (int i = 0; i < n; ++i) {
        if (lt && i < static_cast<int>(lt->offsets.size()))
            m_offset->addItem(QStringLiteral("D = %1").arg(lt->offsets[static_cast<size_t>(i)]));
        else
            m_offset->addItem(QStringLiteral("#%1 (none here)").arg(i));
    }
    m_offset->setCurrentIndex(m_selection->offsetIndex());
    m_offset->setEnabled(n > 0);
}

void SelectionBar::syncFromSelection() {
    m_syncing = true;
    auto setRange = [](QSpinBox* s, int count, int value) {
        s->setRange(0, std::max(0, count - 1));
        s->setValue(value);
        s->setEnabled(count > 0);
    };
    setRange(m_token, m_selection->tokenCount(), m_selection->token());
    setRange(m_layer, m_selection->layerCount(), m_selection->layer());
    setRange(m_head, m_selection->headCount(), m_selection->head());
    fillOffsets();
    const auto primary = m_data.primary();
    const int t = m_selection->token();
    if (primary && t < primary->length())
        m_tokenText->setText(QStringLiteral("“%1”").arg(
            visibleToken(QString::fromStdString(primary->tokens[static_cast<size_t>(t)].text))));
    else
        m_tokenText->clear();
    m_syncing = false;
}

QString SelectionBar::tokenScalar() const {
    if (m_scalar->currentData().toString() == kCustom) return m_chosenScalar;
    return m_scalar->currentData().toString();
}

void SelectionBar::setTokenScalar(const QString& id) {
    const int i = m_scalar->findData(tokenScalarId(tokenScalarFromId(id)));
    if (i >= 0) m_scalar->setCurrentIndex(i);
}

void SelectionBar::showCustomColouring(const QString& name) {
    const QSignalBlocker quiet(m_scalar); // the strip already shows it: no tokenScalarChanged
    const int custom = m_scalar->findData(kCustom);
    if (name.isEmpty()) {
        if (custom >= 0) m_scalar->removeItem(custom);
        const int i = m_scalar->findData(m_chosenScalar);
        if (i >= 0) m_scalar->setCurrentIndex(i);
        return;
    }
    if (custom >= 0)
        m_scalar->setItemText(custom, name);
    else
        m_scalar->addItem(name, kCustom);
    m_scalar->setCurrentIndex(m_scalar->findData(kCustom));
}

} // namespace gwb::app
