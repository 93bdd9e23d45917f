#pragma once
// A view's figure without its widgets (gwb_figures: Qt Gui only, a plain QPainter): the data of a
// Run, a selection and the view's settings in; the caption, the numbers behind the figure and the
// picture out. The window's views draw their panels from their figure and export it; `gwb figure`
// and Python's gwb.figure make the figure alone (figure_export.h), with no window class.
//
// One figure per view id ("gate", "plucker", ...). A figure keeps what its view's settings say
// (colormap, quantity, drill-down, ...) and, for the views that run something of their own
// (saliency, patching, paths, features, graph), that run's result; the view sets both.

#include "gwb/views/colormap.h"
#include "gwb/views/data_table.h"
#include "gwb/views/figure_options.h"
#include "gwb/views/selection.h"
#include "gwb/views/view_data.h"
#include "gwb/views/view_ids.h"

#include <QHash>
#include <QJsonObject>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

namespace gwb::views {

class Figure {
public:
    virtual ~Figure() = default;
    Figure() = default;
    Figure(const Figure&) = delete;
    Figure& operator=(const Figure&) = delete;

    /// Stable id: "gate", "plucker", "angles", ... (the view's id).
    virtual QString id() const = 0;
    /// Human title, e.g. "Gates".
    virtual QString title() const = 0;

    void setData(const WorkbenchData& data);
    const WorkbenchData& data() const { return m_data; }
    /// The selection drawn (clamped by the caller, as Selection does).
    void setSelection(const SelectionState& selection);
    const SelectionState& selection() const { return m_selection; }
    /// No selection: token, layer, head and offset 0, and the data export names none.
    void clearSelection();
    /// Whether a selection was given (the data export names it only then).
    bool hasSelection() const { return m_hasSelection; }

    /// Settings as session files and `gwb figure --settings` keep them: "colormap" and the
    /// figure's own keys; unknown keys are ignored.
    virtual QJsonObject settings() const;
    virtual void setSettings(const QJsonObject& settings);
    ColormapId colormapId() const { return m_colormap; }
    void setColormapId(ColormapId map) { m_colormap = map; }

    /// Height / width at this width when FigureOptions gives no height or aspect.
    virtual double aspect(double widthInches) const { return widthInches < 5 ? 0.8 : 0.62; }
    /// One sentence naming the quantity shown and its definition (the figure caption).
    virtual QString caption() const = 0;
    /// The caption of the figure drawn `widthPoints` wide (1/72 in): caption(), plus what a figure
    /// leaves out at that width (the one-column graph draws its strongest paths only).
    virtual QString captionAt(double widthPoints) const {
        (void)widthPoints;
        return caption();
    }
    /// The numbers behind the figure (same selection).
    virtual std::vector<DataTable> dataTables() const = 0;
    /// True when there is something to draw (else the figure shows missingDataMessage()).
    virtual bool hasContent() const = 0;
    /// Message drawn instead of the figure when its data is missing.
    virtual QString missingDataMessage() const = 0;
    /// The parts of the Grassmann analysis this figure draws (gwb::engine::AnalysisPart bits).
    virtual unsigned analysisParts() const { return gwb::engine::kAnalysisCore; }
    /// Figure body (without caption) into rect (1 unit = 1 pt); `map` for sequential data.
    virtual void draw(QPainter& painter, const QRectF& rect, const FigureStyle& style, ColormapId map) const = 0;

    /// The whole figure: white background, body and, when options.caption, the caption below.
    void render(QPainter& painter, const QRectF& rect, const FigureOptions& options) const;

    /// The part of a heatmap panel's matrix drawn (x = column, y = row, in cells): the window's
    /// zoom, so an export shows what the screen shows. Unset or empty: the whole matrix.
    void setPanelWindow(const QString& panel, const QRectF& window);
    QRectF panelWindow(const QString& panel) const { return m_windows.value(panel); }

protected:
    /// New data arrived (drop caches keyed on the old data).
    virtual void dataChanged() {}
    int selToken() const { return m_selection.token; }
    int selLayer() const { return m_selection.layer; }
    int selHead() const { return m_selection.head; }
    int selOffsetIndex() const { return m_selection.offsetIndex; }

    WorkbenchData m_data;

private:
    SelectionState m_selection;
    bool m_hasSelection = false;
    ColormapId m_colormap = ColormapId::Viridis;
    QHash<QString, QRectF> m_windows;
};

/// The view ids that have a figure, in display order.
QStringList figureIds();
/// A new figure for a view id, or nullptr for an unknown id.
std::unique_ptr<Figure> createFigure(const QString& id);

} // namespace gwb::views
