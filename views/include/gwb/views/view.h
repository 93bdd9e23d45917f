#pragma once
// Base of every workbench view: data in, shared selection, settings for session files, and its
// figure (figure.h: painter-only, gwb_figures) with the numbers behind it. A view shows its
// figure's panels in widgets (zoom, hover, clicks); exports draw the figure itself.

#include "gwb/views/colormap.h"
#include "gwb/views/data_table.h"
#include "gwb/views/figure.h"
#include "gwb/views/figure_options.h"
#include "gwb/views/selection.h"
#include "gwb/views/workbench_data.h"

#include <QImage>
#include <QJsonObject>
#include <QPointer>
#include <QWidget>
#include <memory>
#include <vector>

namespace gwb::views {

class View : public QWidget {
    Q_OBJECT
public:
    explicit View(QWidget* parent = nullptr);
    /// A view drawn from its figure: caption, numbers, content and picture are the figure's.
    View(std::unique_ptr<Figure> figure, QWidget* parent);
    ~View() override;

    /// The figure with the view's data, selection, colormap and zoom: what an export draws.
    const Figure& figure() const;

    /// Stable id: "gate", "plucker", "angles", "subspace", "attention", "compare".
    virtual QString viewId() const = 0;
    /// Human title, e.g. "Gates".
    virtual QString title() const = 0;

    void setData(const WorkbenchData& data);
    const WorkbenchData& data() const { return m_data; }
    /// Shared selection (not owned). Views follow it and write clicks into it.
    void setSelection(Selection* selection);
    Selection* selection() const { return m_selection; }

    /// View settings (colormap, sub-mode, ...) for session files; unknown keys are ignored.
    virtual QJsonObject settings() const;
    virtual void setSettings(const QJsonObject& settings);

    /// Height / width the figure has at this width when FigureOptions gives no height or aspect
    /// (narrow figures usually need relatively more height for labels and the caption).
    virtual double figureAspect(double widthInches) const;
    /// Draws the figure into rect (logical unit = 1 point) with caption when options.caption.
    void renderFigure(QPainter& painter, const QRectF& rect, const FigureOptions& options) const;
    /// One sentence naming the quantity shown and its definition (the figure caption).
    virtual QString caption() const;
    /// The numbers behind the current figure (same selection).
    virtual std::vector<DataTable> dataTables() const;
    /// True when there is something to draw (else the figure shows the "no data" message).
    virtual bool hasContent() const;
    /// The parts of the Grassmann analysis this view draws (gwb::engine::AnalysisPart bits): the
    /// window computes those of the visible views first and the others after (the core part alone
    /// unless a view says more).
    virtual unsigned analysisParts() const;

    /// While one exists (GUI thread only), new data and selection changes only mark views for a
    /// refresh, and each marked view refreshes once when the outermost batch ends. A new run's
    /// data, token extents and token then cost one refresh per view instead of three (and the
    /// Saliency view asks for one saliency, not one per intermediate token).
    class RefreshBatch {
    public:
        RefreshBatch();
        ~RefreshBatch();
        RefreshBatch(const RefreshBatch&) = delete;
        RefreshBatch& operator=(const RefreshBatch&) = delete;
    };

Q_SIGNALS:
    void settingsChanged();

protected:
    /// Redraw from m_data and the selection.
    virtual void refresh() = 0;
    /// refresh() now, or once at the end of the current RefreshBatch.
    void requestRefresh();
    /// Figure body (without caption). `map` is the colormap to use for sequential data.
    virtual void drawFigure(QPainter& painter, const QRectF& rect, const FigureStyle& style, ColormapId map) const;
    /// Message to show when the view's model is missing.
    virtual QString missingDataMessage() const;
    /// Gives the figure what only the widgets know (zoom windows, a rotation) before it is used.
    virtual void syncFigure(Figure& figure) const { (void)figure; }
    /// The view's own figure (views made with one), typed: F must be its class.
    template <class F> F& figureAs() const { return static_cast<F&>(*m_figure); }

    void setColormapId(ColormapId map);
    ColormapId colormapId() const { return m_colormap; }
    int selToken() const { return m_selection ? m_selection->token() : 0; }
    int selLayer() const { return m_selection ? m_selection->layer() : 0; }
    int selHead() const { return m_selection ? m_selection->head() : 0; }
    int selOffsetIndex() const { return m_selection ? m_selection->offsetIndex() : 0; }

    WorkbenchData m_data;

private:
    friend class ViewFigure;
    std::unique_ptr<Figure> m_figure;          ///< the view's figure (null: the view draws itself)
    mutable std::unique_ptr<Figure> m_adapter; ///< figure() of a view without one
    QPointer<Selection> m_selection;
    ColormapId m_colormap = ColormapId::Viridis;
    bool m_refreshPending = false; ///< marked in a RefreshBatch
};

/// The view ids in display order.
QStringList viewIds();
/// A new view for an id, or nullptr for an unknown id.
std::unique_ptr<View> createView(const QString& id, QWidget* parent = nullptr);

/// The figure exports of figure_export.h for a view's figure as it is now (selection, zoom).
QSizeF figureSizePoints(const View& view, const FigureOptions& options);
QImage renderFigureImage(const View& view, const FigureOptions& options);
ExportResult exportFigure(const View& view, const FigureOptions& options, const QString& path);
ExportResult exportData(const View& view, const QString& basePath);

} // namespace gwb::views
