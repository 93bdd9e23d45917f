#pragma once
// The prompt's tokens as chips in a wrapping flow layout, coloured by a per-token scalar
// (surprisal, or the mean gate, coherence, residual or planarity of the selected layer) with a
// small legend. Residual and planarity only check rounding (B_t is always a plane).
// Clicking a chip selects the token everywhere; Left/Right move the selection.

#include "gwb/views/colormap.h"
#include "gwb/views/selection.h"
#include "gwb/views/view_data.h"

#include <QAction>
#include <QPointer>
#include <QWidget>
#include <vector>

namespace gwb::views {

class TokenStrip : public QWidget {
    Q_OBJECT
public:
    /// Coherence is last so that the indices of the older scalars stay what callers stored.
    enum class Scalar { Surprisal, MeanGate, Residual, Planarity, Coherence };

    explicit TokenStrip(QWidget* parent = nullptr);
    void setData(const WorkbenchData& data);
    void setSelection(Selection* selection);
    void setScalar(Scalar scalar);
    Scalar scalar() const { return m_scalar; }
    /// Colours the chips by values of the application's (e.g. a feature's activation at each
    /// token, >= 0, on [0, max]) instead of the scalar, named `name` in the legend; empty values:
    /// back to the scalar. New tokens and setScalar() end it.
    void setCustomColouring(const std::vector<float>& values, const QString& name);
    const QString& customColouring() const { return m_customName; }
    static QString scalarName(Scalar s);
    void setColormap(ColormapId map);
    /// Bars drawn over the chips (e.g. saliency shares of the selected token), one value >= 0 per
    /// token from 0, scaled to the largest; `label` goes into the legend. Empty values: none.
    void setOverlay(const std::vector<float>& values, const QString& label);
    /// Signed bars (e.g. a quick ablation's delta log p of the next token at every position):
    /// length |value| scaled to the largest |value|, red below 0, blue above; NaN: no bar. The
    /// value is also in the token's tooltip. setOverlay() replaces it.
    void setSignedOverlay(const std::vector<float>& values, const QString& label);
    const std::vector<float>& overlay() const { return m_overlay; }
    const QString& overlayLabel() const { return m_overlayLabel; }
    /// Removes the bars and their legend (Delete on the strip, or its context menu).
    void clearOverlay();
    bool overlaySigned() const { return m_overlaySigned; }

    /// Per-token values currently used for colouring (NaN = undefined), T entries.
    std::vector<float> values() const;
    /// Chip rectangles of the last layout (widget coordinates), T entries.
    const std::vector<QRectF>& chipRects() const { return m_chips; }
    /// Tooltip of token t: its text and value, or "—" and why the value is undefined.
    QString tokenToolTip(int t) const;
    /// Chip rectangle of token t laid out at the current width (empty rect when out of range).
    QRectF chipRect(int t) const;

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;

Q_SIGNALS:
    void overlayCleared();
    /// The custom colouring began (its name) or ended (""): by setCustomColouring, setScalar or
    /// new tokens. The window's "Colour tokens by" box follows it.
    void customColouringChanged(const QString& name);

protected:
    bool event(QEvent* e) override;
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void keyPressEvent(QKeyEvent*) override;
    void resizeEvent(QResizeEvent*) override;

private:
    double layoutChips(double width, std::vector<QRectF>* out) const; ///< returns the height used
    QStringList m_tokens;
    WorkbenchData m_data;
    QPointer<Selection> m_selection;
    Scalar m_scalar = Scalar::Surprisal;
    std::vector<float> m_custom; ///< setCustomColouring
    QString m_customName;
    ColormapId m_map = ColormapId::Viridis;
    std::vector<QRectF> m_chips;
    std::vector<float> m_overlay;
    QString m_overlayLabel;
    bool m_overlaySigned = false;
    QAction* m_clearAction = nullptr; ///< setSignedOverlay: bars of |value| coloured by sign
};

} // namespace gwb::views
