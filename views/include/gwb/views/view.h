#pragma once
// Base of every workbench view: data in, shared selection, settings for session files, and its
// figure (figure.h: painter-only, gwb_figures) with the numbers behind it. A view shows its
// figure's panels in widgets (zoom, hover, clicks); exports draw the figure itself.

#include "gwb/views/colormap.h"
#include "gwb/views/data_table.h"
#include "gwb/views/figure.h"
#include "gwb/views/figure_options.h"
#include "gwb/views/selection.h"
#include "gwb/views/view_data.h"

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
    /// A view shows its figure (never null): caption, numbers, content and picture are the figure's.
    View(std::unique_ptr<Figure> figure, QWidget* parent);
    ~View() override;

    /// The figure with the view's data, selection, colormap and zoom: what an export draws.
    const Figure& figure() const;

    /// Stable id: "gate", "plucker", "angles", ... (its figure's id).
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

    /// The figure's answers (figure.h), with the view's selection and zoom:
    /// height / width at this width when FigureOptions gives no height or aspect;
    double figureAspect(double widthInches) const;
    /// the whole figure into rect (logical unit = 1 point), with caption when options.caption;
    void renderFigure(QPainter& painter, const QRectF& rect, const FigureOptions& options) const;
    /// one sentence naming the quantity shown and its definition (the figure caption);
    QString caption() const;
    /// the numbers behind the current figure (same selection);
    std::vector<DataTable> dataTables() const;
    /// whether there is something to draw (else the figure shows missingDataMessage());
    bool hasContent() const;
    /// the parts of the Grassmann analysis this view draws (gwb::engine::AnalysisPart bits): the
    /// window computes those of the visible views first and the others after.
    unsigned analysisParts() const;

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
    /// Message to show when the view's data is missing (the figure's).
    QString missingDataMessage() const;
    /// Gives the figure what only the widgets know (zoom windows, a rotation) before it is used.
    virtual void syncFigure(Figure& figure) const { (void)figure; }
    /// The view's figure, typed (F must be its class), without syncing: for setters.
    template <class F> F& figureAs() const { return static_cast<F&>(*m_figure); }

    void setColormapId(ColormapId map);
    ColormapId colormapId() const { return m_colormap; }
    int selToken() const { return m_selection ? m_selection->token() : 0; }
    int selLayer() const { return m_selection ? m_selection->layer() : 0; }
    int selHead() const { return m_selection ? m_selection->head() : 0; }
    int selOffsetIndex() const { return m_selection ? m_selection->offsetIndex() : 0; }

private:
    std::unique_ptr<Figure> m_figure; ///< the view's figure (declared first: m_data refers into it)

protected:
    /// The data the view shows: its figure's (one copy, set by setData).
    const WorkbenchData& m_data;

private:
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
