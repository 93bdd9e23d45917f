#include "gwb/views/token_strip.h"

#include "plot_util.h"

#include "gwb/views/selection_policy.h"

#include <QAction>
#include <QFontMetricsF>
#include <QHelpEvent>
#include <QToolTip>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <algorithm>
#include <cmath>
#include <limits>

namespace gwb::views {
namespace {
constexpr double kPad = 4;                   // px inside a chip
constexpr double kSpacing = 3;               // px between chips
constexpr QRgb kGeneratedColor = 0xffd95f02; // dashed border of generated tokens (Dark2 orange)
} // namespace

TokenStrip::TokenStrip(QWidget* parent) : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);
    QSizePolicy sp(QSizePolicy::Expanding, QSizePolicy::Preferred);
    sp.setHeightForWidth(true);
    setSizePolicy(sp);
    // Bars of a saliency or an ablation stay until the tokens change, or until cleared here.
    setContextMenuPolicy(Qt::ActionsContextMenu);
    auto* clear = new QAction(QStringLiteral("Clear the bars"), this);
    clear->setObjectName(QStringLiteral("clearStripBars"));
    clear->setShortcut(QKeySequence(Qt::Key_Delete));
    clear->setShortcutContext(Qt::WidgetShortcut);
    clear->setEnabled(false);
    connect(clear, &QAction::triggered, this, &TokenStrip::clearOverlay);
    addAction(clear);
    m_clearAction = clear;
}

QString TokenStrip::scalarName(Scalar s) {
    switch (s) {
    case Scalar::Surprisal:
        return QStringLiteral("surprisal (nats)");
    case Scalar::MeanGate:
        return QStringLiteral("mean gate");
    case Scalar::Residual:
        return QStringLiteral("Pl\u00fccker residual");
    case Scalar::Planarity:
        return QStringLiteral("planarity");
    case Scalar::Coherence:
        return QStringLiteral("coherence \u2016B_t\u2016");
    }
    return {};
}

void TokenStrip::setData(const WorkbenchData& data) {
    const auto t = data.primary();
    const QStringList tokens = t ? tokenLabels(*t) : QStringList();
    // Bars (saliency, an ablation) belong to the tokens they were computed on: new tokens clear
    // them rather than show an old result, and an old legend, over a new prompt.
    if (tokens != m_tokens || data.prompt() != m_data.prompt()) {
        setOverlay({}, QString());
        setCustomColouring({}, {}); // values of the old tokens
    }
    m_data = data;
    m_tokens = tokens;
    updateGeometry();
    update();
}

void TokenStrip::setSelection(Selection* selection) {
    if (m_selection) disconnect(m_selection, nullptr, this, nullptr);
    m_selection = selection;
    if (m_selection) {
        connect(m_selection, &Selection::tokenChanged, this, qOverload<>(&QWidget::update));
        connect(m_selection, &Selection::layerChanged, this, qOverload<>(&QWidget::update));
    }
    update();
}

void TokenStrip::setScalar(Scalar scalar) {
    m_scalar = scalar;
    setCustomColouring({}, {});
    update();
}

void TokenStrip::setCustomColouring(const std::vector<float>& values, const QString& name) {
    const QString before = m_customName;
    m_custom = values;
    m_customName = values.empty() ? QString() : name;
    update();
    if (m_customName != before) Q_EMIT customColouringChanged(m_customName);
}

void TokenStrip::setColormap(ColormapId map) {
    m_map = map;
    update();
}

std::vector<float> TokenStrip::values() const {
    const int64_t T = m_tokens.size();
    std::vector<float> v(static_cast<size_t>(T), std::numeric_limits<float>::quiet_NaN());
    const auto t = m_data.primary();
    if (!t) return v;
    if (!m_customName.isEmpty()) {
        for (int64_t i = 0; i < T && i < static_cast<int64_t>(m_custom.size()); ++i)
            v[static_cast<size_t>(i)] = m_custom[static_cast<size_t>(i)];
        return v;
    }
    const int layer = m_selection ? m_selection->layer() : 0;
    const gwb::engine::GrassmannLayerAnalysis* ga = nullptr;
    if (m_data.grassmannAnalysis && layer < static_cast<int>(m_data.grassmannAnalysis->grassmann.size()))
        ga = &m_data.grassmannAnalysis->grassmann[static_cast<size_t>(layer)];
    const std::vector<float>* src = nullptr;
    switch (m_scalar) {
    case Scalar::Surprisal:
        src = &t->surprisal;
        break;
    case Scalar::MeanGate:
        src = ga ? &ga->meanGate : nullptr;
        break;
    case Scalar::Residual:
        src = ga ? &ga->residual : nullptr;
        break;
    case Scalar::Planarity:
        src = ga ? &ga->planarity : nullptr;
        break;
    case Scalar::Coherence:
        src = ga ? &ga->coherence : nullptr;
        break;
    }
    if (src)
        for (int64_t i = 0; i < T && i < static_cast<int64_t>(src->size()); ++i)
            v[static_cast<size_t>(i)] = (*src)[static_cast<size_t>(i)];
    return v;
}

double TokenStrip::layoutChips(double width, std::vector<QRectF>* out) const {
    const QFontMetricsF fm(font());
    const double h = fm.height() + 2 * kPad;
    const double legendH = fm.height() * 1.4;
    double x = 0, y = legendH;
    if (out) out->clear();
    for (const QString& tok : m_tokens) {
        const double w = std::min(width, fm.horizontalAdvance(detail::labelText(tok, 24)) + 2 * kPad);
        if (x > 0 && x + w > width) {
            x = 0;
            y += h + kSpacing;
        }
        if (out) out->push_back(QRectF(x, y, w, h));
        x += w + kSpacing;
    }
    return y + h + kSpacing;
}

int TokenStrip::heightForWidth(int width) const {
    return static_cast<int>(std::ceil(layoutChips(std::max(40, width), nullptr)));
}

QSize TokenStrip::sizeHint() const {
    return {400, heightForWidth(400)};
}

QString TokenStrip::tokenToolTip(int t) const {
    if (t < 0 || t >= m_tokens.size()) return {};
    const std::vector<float> v = values();
    const double x = t < static_cast<int>(v.size()) ? v[static_cast<size_t>(t)] : std::nan("");
    const QString what = m_customName.isEmpty() ? scalarName(m_scalar) : m_customName;
    QString tip = QStringLiteral("token %1 '%2'\n%3: %4").arg(t).arg(m_tokens[t], what, detail::formatValue(x));
    if (m_data.isGenerated(t)) tip += QStringLiteral("\ngenerated by Continue (not typed)");
    if (m_overlaySigned && t < static_cast<int>(m_overlay.size()))
        tip += QStringLiteral("\n%1: %2").arg(m_overlayLabel, detail::formatValue(m_overlay[static_cast<size_t>(t)]));
    if (std::isnan(x))
        tip += QStringLiteral("\n") + (m_scalar == Scalar::Surprisal && t == 0
                                           ? QStringLiteral("The first token has no prediction (nothing before it).")
                                           : undefinedReason(scalarName(m_scalar), t));
    return tip;
}

bool TokenStrip::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        const auto* he = static_cast<QHelpEvent*>(e);
        for (int i = 0; i < static_cast<int>(m_chips.size()); ++i)
            if (m_chips[static_cast<size_t>(i)].contains(he->pos())) {
                QToolTip::showText(he->globalPos(), tokenToolTip(i), this);
                return true;
            }
        QToolTip::hideText();
        e->ignore();
        return true;
    }
    return QWidget::event(e);
}

void TokenStrip::clearOverlay() {
    const bool had = !m_overlay.empty();
    setOverlay({}, QString());
    if (had) Q_EMIT overlayCleared();
}

void TokenStrip::setOverlay(const std::vector<float>& values, const QString& label) {
    m_overlay = values;
    m_overlayLabel = values.empty() ? QString() : label;
    m_overlaySigned = false;
    if (m_clearAction) m_clearAction->setEnabled(!m_overlay.empty());
    update();
}

void TokenStrip::setSignedOverlay(const std::vector<float>& values, const QString& label) {
    setOverlay(values, label);
    m_overlaySigned = !values.empty();
}

QRectF TokenStrip::chipRect(int t) const {
    std::vector<QRectF> chips;
    layoutChips(width(), &chips);
    return t >= 0 && t < static_cast<int>(chips.size()) ? chips[static_cast<size_t>(t)] : QRectF();
}

void TokenStrip::resizeEvent(QResizeEvent*) {
    layoutChips(width(), &m_chips);
}

void TokenStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetricsF fm(font());
    layoutChips(width(), &m_chips);
    if (m_tokens.isEmpty()) {
        p.setPen(palette().color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, QStringLiteral("No tokens: run a prompt."));
        return;
    }
    const auto v = values();
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (float x : v)
        if (std::isfinite(x)) {
            lo = std::min(lo, static_cast<double>(x));
            hi = std::max(hi, static_cast<double>(x));
        }
    // The mean gates of one prompt span a narrow part of (0, 1): their colours follow the data
    // (the legend gives the range). Coherence reads on its absolute [0, 1] scale, as in the
    // Plücker view; planarity of B_t is 1 up to rounding.
    const bool custom = !m_customName.isEmpty();
    const bool unit = !custom && (m_scalar == Scalar::Planarity || m_scalar == Scalar::Coherence);
    // A custom colouring (a feature's activation) starts at 0, where the feature is silent.
    const ColorScale scale = ColorScale::fromRange(m_map, unit || custom ? 0.0 : lo,
                                                   unit     ? 1.0
                                                   : custom ? std::max(hi, 1e-9)
                                                            : hi,
                                                   false);
    // Legend: name, gradient, range.
    p.setPen(palette().color(QPalette::Text));
    const QString name = custom ? m_customName
                                : scalarName(m_scalar) +
                                      ((m_scalar == Scalar::Surprisal)
                                           ? QString()
                                           : QStringLiteral(", layer %1").arg(m_selection ? m_selection->layer() : 0));
    double lx = 0;
    p.drawText(QPointF(lx, fm.ascent()), name);
    lx += fm.horizontalAdvance(name) + 8;
    const QString loS = std::isfinite(lo) ? detail::formatValue(scale.effectiveLow()) : QStringLiteral("n/a");
    const QString hiS = std::isfinite(hi) ? detail::formatValue(scale.effectiveHigh()) : QStringLiteral("n/a");
    p.drawText(QPointF(lx, fm.ascent()), loS);
    lx += fm.horizontalAdvance(loS) + 4;
    QImage grad(256, 1, QImage::Format_ARGB32);
    for (int i = 0; i < 256; ++i)
        grad.setPixel(i, 0, colormapTable(m_map)[static_cast<size_t>(i)]);
    const QRectF gr(lx, fm.height() * 0.2, 80, fm.height() * 0.7);
    p.drawImage(gr, grad);
    lx += 84;
    p.drawText(QPointF(lx, fm.ascent()), hiS);
    lx += fm.horizontalAdvance(hiS) + 8;
    p.fillRect(QRectF(lx, fm.height() * 0.2, fm.height() * 0.7, fm.height() * 0.7), QColor(kNanColor));
    p.drawText(QPointF(lx + fm.height(), fm.ascent()), QStringLiteral("undefined"));
    lx += fm.height() + fm.horizontalAdvance(QStringLiteral("undefined")) + 12;
    if (!m_overlayLabel.isEmpty()) {
        p.fillRect(QRectF(lx, fm.height() * 0.55, fm.height() * 1.4, 3), QColor(220, 30, 30));
        const QString label = m_overlayLabel + QStringLiteral(" (Del or right-click: clear)");
        p.drawText(QPointF(lx + fm.height() * 1.7, fm.ascent()), label);
        lx += fm.height() * 1.7 + fm.horizontalAdvance(label) + 12;
    }
    const int64_t generated = m_data.generatedCount();
    if (generated > 0) {
        p.setBrush(Qt::NoBrush);
        p.setPen(QPen(QColor(kGeneratedColor), 2, Qt::DashLine));
        p.drawRoundedRect(QRectF(lx, fm.height() * 0.15, fm.height() * 1.4, fm.height() * 0.75), 2, 2);
        p.setPen(palette().color(QPalette::Text));
        p.drawText(QPointF(lx + fm.height() * 1.7, fm.ascent()),
                   QStringLiteral("generated (%1 tokens)").arg(generated));
    }

    const int sel = m_selection ? m_selection->token() : -1;
    for (int i = 0; i < static_cast<int>(m_chips.size()); ++i) {
        const QColor c = QColor::fromRgb(scale.color(v[static_cast<size_t>(i)]));
        p.setBrush(c);
        // Generated tokens (Continue) get a dashed accent border; the selection's border wins.
        if (i == sel)
            p.setPen(QPen(palette().color(QPalette::Highlight), 2.5));
        else if (m_data.isGenerated(i))
            p.setPen(QPen(QColor(kGeneratedColor), 2, Qt::DashLine));
        else
            p.setPen(QPen(QColor(0, 0, 0, 60), 1));
        p.drawRoundedRect(m_chips[static_cast<size_t>(i)], 3, 3);
        // Dark text on light chips and vice versa (relative luminance).
        const double lum = 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF();
        p.setPen(lum > 0.45 ? Qt::black : Qt::white);
        p.drawText(m_chips[static_cast<size_t>(i)], Qt::AlignCenter, detail::labelText(m_tokens[i], 24));
    }
    // Overlay bars (e.g. saliency) along the bottom edge of the chips, scaled to the largest value.
    float top = 0;
    for (float x : m_overlay)
        if (std::isfinite(x)) top = std::max(top, m_overlaySigned ? std::abs(x) : x);
    if (top > 0)
        for (int i = 0; i < static_cast<int>(m_chips.size()) && i < static_cast<int>(m_overlay.size()); ++i) {
            float x = m_overlay[static_cast<size_t>(i)];
            const QColor color = m_overlaySigned && x > 0 ? QColor(30, 90, 220) : QColor(220, 30, 30);
            if (m_overlaySigned) x = std::abs(x);
            if (!std::isfinite(x) || x <= 0) continue;
            const QRectF& r = m_chips[static_cast<size_t>(i)];
            p.fillRect(QRectF(r.left() + 2, r.bottom() - 4, (r.width() - 4) * x / top, 3), color);
        }
}

void TokenStrip::mousePressEvent(QMouseEvent* e) {
    for (int i = 0; i < static_cast<int>(m_chips.size()); ++i)
        if (m_chips[static_cast<size_t>(i)].contains(e->position())) {
            if (m_selection) m_selection->setToken(i);
            setFocus();
            return;
        }
}

void TokenStrip::keyPressEvent(QKeyEvent* e) {
    if (!m_selection) return QWidget::keyPressEvent(e);
    if ((e->key() == Qt::Key_Delete || e->key() == Qt::Key_Backspace) && !m_overlay.empty())
        clearOverlay(); // the action's shortcut when the window is not active (it needs one)
    else if (e->key() == Qt::Key_Left)
        m_selection->setToken(m_selection->token() - 1);
    else if (e->key() == Qt::Key_Right)
        m_selection->setToken(m_selection->token() + 1);
    else
        return QWidget::keyPressEvent(e);
    e->accept();
}

} // namespace gwb::views
