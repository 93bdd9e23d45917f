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

/// figure() of a view that draws itself (no figure of its own): the view's answers as a Figure.
class ViewFigure final : public Figure {
public:
    explicit ViewFigure(const View& view) : m_view(view) {}
    QString id() const override { return m_view.viewId(); }
    QString title() const override { return m_view.title(); }
    QJsonObject settings() const override { return m_view.settings(); }
    double aspect(double widthInches) const override { return m_view.figureAspect(widthInches); }
    QString caption() const override { return m_view.caption(); }
    std::vector<DataTable> dataTables() const override { return m_view.dataTables(); }
    bool hasContent() const override { return m_view.hasContent(); }
    QString missingDataMessage() const override { return m_view.missingDataMessage(); }
    unsigned analysisParts() const override { return m_view.analysisParts(); }
    void draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId map) const override {
        m_view.drawFigure(p, rect, style, map);
    }

private:
    const View& m_view;
};

View::View(QWidget* parent) : QWidget(parent) {}

View::View(std::unique_ptr<Figure> figure, QWidget* parent) : QWidget(parent), m_figure(std::move(figure)) {}

View::~View() = default;

const Figure& View::figure() const {
    Figure* f = m_figure.get();
    if (!f) {
        if (!m_adapter) m_adapter = std::make_unique<ViewFigure>(*this);
        f = m_adapter.get();
        f->setData(m_data);
    }
    if (m_selection)
        f->setSelection(m_selection->state());
    else
        f->clearSelection();
    f->setColormapId(m_colormap);
    if (m_figure) syncFigure(*f);
    return *f;
}

double View::figureAspect(double widthInches) const {
    return m_figure ? figure().aspect(widthInches) : (widthInches < 5 ? 0.8 : 0.62);
}

QString View::caption() const {
    return m_figure ? figure().caption() : QString();
}

std::vector<DataTable> View::dataTables() const {
    return m_figure ? figure().dataTables() : std::vector<DataTable>{};
}

bool View::hasContent() const {
    return m_figure && figure().hasContent();
}

unsigned View::analysisParts() const {
    return m_figure ? m_figure->analysisParts() : gwb::engine::kAnalysisCore;
}

void View::drawFigure(QPainter& painter, const QRectF& rect, const FigureStyle& style, ColormapId map) const {
    if (m_figure) figure().draw(painter, rect, style, map);
}

QString View::missingDataMessage() const {
    return m_figure ? figure().missingDataMessage() : QString();
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
    m_data = data;
    if (m_figure) m_figure->setData(data);
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
    if (m_figure) return figure().settings();
    QJsonObject o;
    o.insert(QStringLiteral("colormap"), gwb::views::colormapName(m_colormap));
    return o;
}

void View::setSettings(const QJsonObject& settings) {
    if (m_figure) {
        QJsonObject own = settings;
        own.remove(QStringLiteral("colormap")); // the view's (below): its combo and a refresh follow
        m_figure->setSettings(own);
    }
    if (settings.contains(QStringLiteral("colormap")))
        setColormapId(colormapFromName(settings.value(QStringLiteral("colormap")).toString(), m_colormap));
}

void View::setColormapId(ColormapId map) {
    if (map == m_colormap) return;
    m_colormap = map;
    if (m_figure) m_figure->setColormapId(map);
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
