#include "gwb/views/view.h"

#include "gwb/views/figure_export.h"

#include "plot_util.h"

#include <QPainter>

namespace gwb::views {

namespace {
int g_batchDepth = 0;
std::vector<QPointer<View>>& pendingRefreshes() {
    static std::vector<QPointer<View>> views;
    return views;
}
} // namespace

View::RefreshBatch::RefreshBatch() {
    ++g_batchDepth;
}

View::RefreshBatch::~RefreshBatch() {
    if (--g_batchDepth > 0) return;
    const std::vector<QPointer<View>> views = std::move(pendingRefreshes());
    pendingRefreshes().clear();
    for (const QPointer<View>& v : views)
        if (v && v->m_refreshPending) {
            v->m_refreshPending = false;
            v->refresh();
        }
}

View::View(std::unique_ptr<Figure> figure, QWidget* parent)
    : QWidget(parent), m_figure(std::move(figure)), m_data(m_figure->data()) {}

View::~View() = default;

const Figure& View::figure() const {
    if (m_selection)
        m_figure->setSelection(m_selection->state());
    else
        m_figure->clearSelection();
    m_figure->setColormapId(m_colormap);
    syncFigure(*m_figure);
    return *m_figure;
}

double View::figureAspect(double widthInches) const {
    return figure().aspect(widthInches);
}

QString View::caption() const {
    return figure().caption();
}

std::vector<DataTable> View::dataTables() const {
    return figure().dataTables();
}

bool View::hasContent() const {
    return figure().hasContent();
}

unsigned View::analysisParts() const {
    return m_figure->analysisParts();
}

QString View::missingDataMessage() const {
    return figure().missingDataMessage();
}

void View::requestRefresh() {
    if (g_batchDepth == 0) {
        refresh();
        return;
    }
    if (m_refreshPending) return;
    m_refreshPending = true;
    pendingRefreshes().push_back(this);
}

void View::setData(const WorkbenchData& data) {
    m_figure->setData(data);
    requestRefresh();
}

void View::setSelection(Selection* selection) {
    if (m_selection) disconnect(m_selection, nullptr, this, nullptr);
    m_selection = selection;
    if (m_selection) {
        auto r = [this] { requestRefresh(); };
        connect(m_selection, &Selection::tokenChanged, this, r);
        connect(m_selection, &Selection::layerChanged, this, r);
        connect(m_selection, &Selection::headChanged, this, r);
        connect(m_selection, &Selection::offsetIndexChanged, this, r);
        connect(m_selection, &Selection::extentsChanged, this, r);
    }
    requestRefresh();
}

QJsonObject View::settings() const {
    return figure().settings();
}

void View::setSettings(const QJsonObject& settings) {
    QJsonObject own = settings;
    own.remove(QStringLiteral("colormap")); // the view's (below): its combo and a refresh follow
    m_figure->setSettings(own);
    if (settings.contains(QStringLiteral("colormap")))
        setColormapId(colormapFromName(settings.value(QStringLiteral("colormap")).toString(), m_colormap));
}

void View::setColormapId(ColormapId map) {
    if (map == m_colormap) return;
    m_colormap = map;
    m_figure->setColormapId(map);
    refresh();
    Q_EMIT settingsChanged();
}

void View::renderFigure(QPainter& painter, const QRectF& rect, const FigureOptions& options) const {
    figure().render(painter, rect, options);
}

QSizeF figureSizePoints(const View& view, const FigureOptions& options) {
    return figureSizePoints(view.figure(), options);
}

QImage renderFigureImage(const View& view, const FigureOptions& options) {
    return renderFigureImage(view.figure(), options);
}

ExportResult exportFigure(const View& view, const FigureOptions& options, const QString& path) {
    return exportFigure(view.figure(), options, path);
}

ExportResult exportData(const View& view, const QString& basePath) {
    return exportData(view.figure(), basePath);
}

} // namespace gwb::views
