#include "figure_common.h"

#include "plot_util.h"

#include "gwb/engine/analysis.h"

namespace gwb::views::detail {

QString engineDefinition(const char* key) {
    const auto& defs = gwb::engine::definitions();
    const auto it = defs.find(key);
    return it == defs.end() ? QString() : QString::fromStdString(it->second);
}

DataTable tableFromMatrix(const QString& name, const QString& quantity, const QString& definitionKey,
                          const QString& units, int64_t rows, int64_t cols, std::vector<float> values,
                          const QString& rowAxis, const QString& colAxis, const QStringList& rowLabels,
                          const QStringList& colLabels) {
    DataTable t;
    t.name = name;
    t.quantity = quantity;
    t.definitionKey = definitionKey;
    t.units = units;
    t.values = gwb::engine::FloatArray({rows, cols}, std::move(values));
    t.rowAxis = rowAxis;
    t.colAxis = colAxis;
    t.rowLabels = rowLabels;
    t.colLabels = colLabels;
    return t;
}

QString modelPhrase(const gwb::engine::TracePtr& trace) {
    if (!trace) return {};
    return QStringLiteral(" Model: %1.")
        .arg(QString::fromStdString(trace->modelName.empty() ? trace->modelPath : trace->modelName));
}

const gwb::engine::GrassmannLayerTrace* grassmannLayer(const WorkbenchData& d, int l) {
    if (!d.grassmann || l < 0 || l >= static_cast<int>(d.grassmann->layers.size())) return nullptr;
    const auto& g = d.grassmann->layers[static_cast<size_t>(l)].grassmann;
    return g ? &*g : nullptr;
}

const gwb::engine::GrassmannLayerAnalysis* grassmannAnalysis(const WorkbenchData& d, int l) {
    if (!d.grassmannAnalysis || l < 0 || l >= static_cast<int>(d.grassmannAnalysis->grassmann.size())) return nullptr;
    return &d.grassmannAnalysis->grassmann[static_cast<size_t>(l)];
}

QString noModelMessage(const QString& which) {
    if (which.isEmpty()) return QStringLiteral("No trace yet: load a model and run a prompt.");
    return QStringLiteral("No %1 trace yet: load a model and run a prompt.").arg(which);
}

bool planesThroughMlp(const WorkbenchData& d) {
    return d.grassmann && d.grassmann->config.aggregation == gwb::engine::Aggregation::PerOffsetMlp;
}

QString grassmannMissingMessage(const WorkbenchData& d) {
    return d.grassmann ? QStringLiteral("Analysing the Grassmann trace\u2026")
                       : noModelMessage(QStringLiteral("Grassmann"));
}

QString pendingAnalysisMessage(const WorkbenchData& d, unsigned parts) {
    const QString names = pendingAnalysisParts(d, parts);
    if (names.isEmpty()) return {};
    return QStringLiteral("Computing the %1… (shown here when done; a model's weight-only results are "
                          "computed once and kept on disk)")
        .arg(names);
}

HeatmapAxes axesFromTable(const DataTable& t, const QString& valueName) {
    HeatmapAxes axes;
    axes.rowTitle = t.rowAxis;
    axes.colTitle = t.colAxis;
    axes.rowLabels = t.rowLabels;
    axes.colLabels = t.colLabels;
    axes.valueName = valueName;
    return axes;
}

std::pair<QRectF, QRectF> splitPanels(const QRectF& rect, double firstShare, bool sideBySide, double gap) {
    if (sideBySide) {
        const double w = (rect.width() - gap) * firstShare;
        return {QRectF(rect.left(), rect.top(), w, rect.height()),
                QRectF(rect.left() + w + gap, rect.top(), rect.width() - w - gap, rect.height())};
    }
    const double h = (rect.height() - gap) * firstShare;
    return {QRectF(rect.left(), rect.top(), rect.width(), h),
            QRectF(rect.left(), rect.top() + h + gap, rect.width(), rect.height() - h - gap)};
}

QString labelTextForTitle(const std::string& text) {
    return labelText(QString::fromStdString(text), 16);
}

} // namespace gwb::views::detail
