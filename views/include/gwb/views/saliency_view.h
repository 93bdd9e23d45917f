#pragma once
// Saliency view, both models (workbench-spec.md section 1, "Model-agnostic attribution"):
// gradient x input saliency of log p(target | x_0..x_t) over the past tokens of the selected token,
// for a target that is the actual next token (default) or a vocabulary piece the user types. Drawn
// as token chips coloured by the share |s_j| / sum |s| and as bars, next to the Grassmann influence
// row and the attention rows of the selected layer, with the Compare view's JS / top-1 metrics.
// The view never runs a model: it asks for saliency (saliencyRequested) and the application
// computes it off the GUI thread and hands it back (setSaliency). The picture is SaliencyFigure's
// (saliency_figure.h).

#include "gwb/views/saliency_figure.h"
#include "gwb/views/view.h"

class QLabel;
class QLineEdit;
class QTableWidget;

namespace gwb::views {

class ChartWidget;

class SaliencyView : public View {
    Q_OBJECT
public:
    using Comparison = SaliencyFigure::Comparison;

    explicit SaliencyView(QWidget* parent = nullptr);
    QString viewId() const override { return view_id::kSaliency; }
    QString title() const override { return QStringLiteral("Saliency"); }
    void setSettings(const QJsonObject& settings) override;

    /// The typed target piece ("" = actual next token).
    QString target() const { return fig().target(); }
    void setTarget(const QString& piece);
    /// Clears a typed target that belonged to the previous run's tokens (a new prompt or a
    /// Continue): the view's status says which target was cleared and why until one is typed.
    void releaseTarget(const QString& reason);
    /// The note releaseTarget left ("" when none).
    QString targetNote() const { return m_targetNote; }
    /// Hands in a computed result; ignored unless it is for the current token and target.
    void setSaliency(const SaliencyResult& result);
    const SaliencyResult& saliency() const { return fig().saliency(); }
    /// Rows compared with the saliency: names and JS / top-1 (NaN JS = undefined).
    std::vector<Comparison> comparisons() const { return fig().comparisons(); }
    ChartData barChart() const { return fig().barChart(); }
    QTableWidget* table() const { return m_table; }

Q_SIGNALS:
    /// The view needs saliency for token t and target ("" = actual next token).
    void saliencyRequested(int token, const QString& target);

protected:
    void refresh() override;

private:
    /// The figure with the view's selection (its target follows the Target field).
    SaliencyFigure& fig() const;
    void requestIfNeeded();

    QLineEdit* m_target;
    QString m_targetNote;
    QLabel* m_status;
    QWidget* m_chips;
    ChartWidget* m_chart;
    QTableWidget* m_table;
    int m_requestedToken = -1;
    QString m_requestedTarget;
    const void* m_requestedData = nullptr;
};

} // namespace gwb::views
