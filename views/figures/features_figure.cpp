#include "gwb/views/features_figure.h"

#include "dashboard_html.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

namespace gwb::views {

namespace {

/// The engine's text (UTF-8) as the figure shows it.
QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString kindOf(double r) {
    if (!std::isfinite(r)) return QStringLiteral("undefined");
    return r < 0.3 ? QStringLiteral("first") : r > 0.7 ? QStringLiteral("second") : QStringLiteral("shared");
}

QString fmt(double v) {
    return QString::number(v, 'g', 3);
}

} // namespace

QStringList FeaturesFigure::kindFilters() {
    return {QStringLiteral("all"), QStringLiteral("first"), QStringLiteral("shared"), QStringLiteral("second")};
}

void FeaturesFigure::setKindFilter(const QString& kind) {
    if (kindFilters().contains(kind)) m_kind = kind;
}

QJsonObject FeaturesFigure::settings() const {
    QJsonObject o = Figure::settings();
    o.insert(QStringLiteral("kind"), m_kind);
    return o;
}

void FeaturesFigure::setSettings(const QJsonObject& s) {
    Figure::setSettings(s);
    if (s.contains(QStringLiteral("kind"))) setKindFilter(s.value(QStringLiteral("kind")).toString());
}

QString FeaturesFigure::missingDataMessage() const {
    return QStringLiteral("No dictionary: Open Dictionary\u2026 (a folder written by gwb features train), then Run.");
}

bool FeaturesFigure::hasContent() const {
    return m_features && !m_features->perToken.empty();
}

bool FeaturesFigure::setFeatures(FeatureDataPtr features) {
    const bool same = m_features && features && m_features->path == features->path;
    m_features = std::move(features);
    if (!same) {
        m_chosen = -1;
        m_dashboard = FeatureDashboard{};
    }
    return !same;
}

bool FeaturesFigure::setDashboard(const FeatureDashboard& dashboard) {
    if (dashboard.feature != m_chosen) return false; // for a feature no longer chosen
    m_dashboard = dashboard;
    return true;
}

bool FeaturesFigure::chooseFeature(int64_t feature) {
    if (!m_features || feature < 0 || feature >= m_features->dSae) feature = -1;
    if (feature == m_chosen) return false;
    m_chosen = feature;
    m_dashboard = FeatureDashboard{};
    return true;
}

std::vector<std::pair<int64_t, float>> FeaturesFigure::listedFeatures() const {
    std::vector<std::pair<int64_t, float>> out;
    if (!m_features) return out;
    const int t = selToken();
    if (t < 0 || t >= static_cast<int>(m_features->perToken.size())) return out;
    for (const auto& [f, v] : m_features->perToken[static_cast<size_t>(t)]) {
        if (m_features->crosscoder && m_kind != QLatin1String("all") &&
            static_cast<size_t>(f) < m_features->relativeNorms.size() &&
            kindOf(m_features->relativeNorms[static_cast<size_t>(f)]) != m_kind)
            continue;
        out.push_back({f, v});
    }
    return out;
}

ChartData FeaturesFigure::relativeNormChart(bool modelNamesInLegend) const {
    ChartData c;
    c.kind = ChartData::Kind::Bar;
    if (!m_features || !m_features->crosscoder) return c;
    // Ten bins of r = ||d_2|| / (||d_1|| + ||d_2||), one stacked series per kind so that each bar
    // takes its kind's colour and the legend names the models; ticks on the bin edges.
    c.title = QStringLiteral("Relative decoder norm");
    c.xTitle = QStringLiteral("||d_2|| / (||d_1|| + ||d_2||)");
    c.yTitle = QStringLiteral("features");
    c.stacked = true;
    std::vector<double> counts(10, 0);
    for (double r : m_features->relativeNorms)
        if (std::isfinite(r)) counts[static_cast<size_t>(std::clamp(static_cast<int>(r * 10), 0, 9))] += 1;
    const QString first = qs(m_features->modelName), second = qs(m_features->secondModelName);
    // The figure's legend wraps and names the models; on screen the header names them (first,
    // second) and a legend of two long model names would be cut.
    const QString names[] = {modelNamesInLegend ? QStringLiteral("%1 only").arg(first) : QStringLiteral("first only"),
                             QStringLiteral("shared"),
                             modelNamesInLegend ? QStringLiteral("%1 only").arg(second)
                                                : QStringLiteral("second only")};
    const QString meaning[] = {QStringLiteral("%1's only (r < 0.3)").arg(first),
                               QStringLiteral("shared by both models (0.3 to 0.7)"),
                               QStringLiteral("%1's only (r > 0.7)").arg(second)};
    for (int k = 0; k < 3; ++k) {
        ChartSeries s;
        s.name = names[k];
        c.series.push_back(s);
    }
    for (int b = 0; b < 10; ++b) {
        const int k = b < 3 ? 0 : b < 7 ? 1 : 2;
        for (int j = 0; j < 3; ++j)
            c.series[static_cast<size_t>(j)].y.push_back(j == k ? counts[static_cast<size_t>(b)] : 0.0);
        c.categories << QStringLiteral("%1–%2").arg(b / 10.0, 0, 'f', 1).arg((b + 1) / 10.0, 0, 'f', 1);
        const auto n = static_cast<int>(counts[static_cast<size_t>(b)]);
        c.barTips << QStringLiteral("r %1: %2 feature%3, %4")
                         .arg(c.categories.back())
                         .arg(n)
                         .arg(n == 1 ? QString() : QStringLiteral("s"), meaning[k]);
    }
    c.edgeTicks = {{0, QStringLiteral("0")},
                   {3, QStringLiteral("0.3")},
                   {5, QStringLiteral("0.5")},
                   {7, QStringLiteral("0.7")},
                   {10, QStringLiteral("1")}};
    return c;
}

ChartData FeaturesFigure::activationChart() const {
    ChartData c;
    c.kind = ChartData::Kind::Bar;
    const FeatureDashboard& d = m_dashboard;
    if (d.feature < 0 || d.histogramCounts.empty()) return c;
    c.title = QStringLiteral("%1: activations where it fires (%2 of %3 rows)")
                  .arg(QString::fromStdString(d.name))
                  .arg(d.fired)
                  .arg(d.rows);
    c.xTitle = QStringLiteral("activation");
    c.yTitle = QStringLiteral("rows");
    ChartSeries s;
    // Ten bins (the engine's 40, summed in fours) keep the labels readable.
    const size_t per = std::max<size_t>(1, d.histogramCounts.size() / 10);
    for (size_t b = 0; b + per <= d.histogramCounts.size(); b += per) {
        double n = 0;
        for (size_t i = b; i < b + per; ++i)
            n += static_cast<double>(d.histogramCounts[i]);
        const double mid = (d.histogramEdges[b] + d.histogramEdges[b + per]) / 2;
        c.categories << fmt(mid);
        s.y.push_back(n);
    }
    c.series.push_back(s);
    return c;
}

QString FeaturesFigure::headerText() const {
    if (!m_features) return missingDataMessage();
    const FeatureData& f = *m_features;
    return f.crosscoder ? QStringLiteral("Crosscoder of %1 (%2) and %3 (%4): %5 features, %6")
                              .arg(qs(f.modelName), qs(f.site), qs(f.secondModelName), qs(f.secondSite))
                              .arg(f.dSae)
                              .arg(qs(f.architecture))
                        : QStringLiteral("Dictionary of %1 at %2: %3 features, %4")
                              .arg(qs(f.modelName), qs(f.site))
                              .arg(f.dSae)
                              .arg(qs(f.architecture));
}

QStringList FeaturesFigure::listHeader() const {
    QStringList h{QStringLiteral("feature"), QStringLiteral("activation at token %1").arg(selToken())};
    if (m_features && m_features->crosscoder) h << QStringLiteral("relative norm");
    return h;
}

std::vector<QStringList> FeaturesFigure::listCells() const {
    std::vector<QStringList> out;
    if (!m_features) return out;
    const FeatureData& f = *m_features;
    for (const auto& [feature, value] : listedFeatures()) {
        QStringList row{qs(f.featureName(feature)), fmt(value)};
        if (f.crosscoder) {
            // A feature past the norms (none known) leaves its cell empty.
            QString norm;
            if (static_cast<size_t>(feature) < f.relativeNorms.size()) {
                const double r = f.relativeNorms[static_cast<size_t>(feature)];
                norm = QStringLiteral("%1 (%2)").arg(fmt(r), kindOf(r));
            }
            row << norm;
        }
        out.push_back(row);
    }
    return out;
}

QString FeaturesFigure::dashboardHtml() const {
    const FeatureDashboard& d = m_dashboard;
    if (m_chosen < 0) return QStringLiteral("<p style='color:gray'>Click a feature to see its dashboard.</p>");
    if (d.feature != m_chosen)
        return QStringLiteral("<p style='color:gray'>Computing the dashboard of %1\u2026</p>")
            .arg(m_features ? qs(m_features->featureName(m_chosen)) : QString());
    return detail::dashboardHtml(d);
}

QString FeaturesFigure::dashboardPaneHtml() const {
    if (!m_features) return {};
    const FeatureData& f = *m_features;
    if (f.perToken.empty() && !f.error.empty())
        // Nothing computed (no run yet, or the run failed): say that, not "no feature fires at token 0".
        return QStringLiteral("<p style='color:gray'>%1</p>").arg(qs(f.error).toHtmlEscaped());
    if (listedFeatures().empty())
        return QStringLiteral("<p style='color:gray'>No feature of this dictionary fires at token %1"
                              "%2.</p>")
                   .arg(selToken())
                   .arg(f.crosscoder && m_kind != QLatin1String("all") ? QStringLiteral(" among those shown")
                                                                       : QString()) +
               (m_chosen >= 0 ? dashboardHtml() : QString());
    return dashboardHtml();
}

QString FeaturesFigure::histogramPlaceholder() const {
    if (!m_features) return missingDataMessage();
    return m_chosen < 0 ? QStringLiteral("Click a feature: its activation histogram.")
           : m_dashboard.feature == m_chosen && !m_dashboard.error.empty()
               ? QStringLiteral("No histogram: the dashboard could not be computed (above)")
               : QStringLiteral("Computing\u2026");
}

QString FeaturesFigure::caption() const {
    if (!m_features) return missingDataMessage();
    const FeatureData& f = *m_features;
    QString s = f.crosscoder
                    ? QStringLiteral("Features of a %1 crosscoder (%2 features) of %3 at %4 and %5 at %6, token %7: "
                                     "the active ones by activation z_f = the encoder on both sites' values.")
                          .arg(qs(f.architecture))
                          .arg(f.dSae)
                          .arg(qs(f.modelName), qs(f.site), qs(f.secondModelName), qs(f.secondSite))
                          .arg(selToken())
                    : QStringLiteral("Features of a %1 dictionary (%2 features) of %3 at %4, token %5: the active "
                                     "ones by activation z_f = the dictionary's encoder on the site's value.")
                          .arg(qs(f.architecture))
                          .arg(f.dSae)
                          .arg(qs(f.modelName), qs(f.site))
                          .arg(selToken());
    // The figure's panels by letter (they stand in a row or a column, as the figure's shape allows).
    QChar letter = u'b';
    if (m_dashboard.feature >= 0 && activationChart().hasData()) {
        s += QStringLiteral(" (%1) %2's activations where it fires over %3.")
                 .arg(letter)
                 .arg(QString::fromStdString(m_dashboard.name), qs(m_dashboard.corpus));
        letter = u'c';
    }
    if (f.crosscoder)
        s += QStringLiteral(" (%1) The features by relative decoder norm r = ||d_2|| / (||d_1|| + ||d_2||): below 0.3 "
                            "%2's only, above 0.7 %3's only, shared between.")
                 .arg(letter)
                 .arg(qs(f.modelName), qs(f.secondModelName));
    return s;
}

std::vector<DataTable> FeaturesFigure::dataTables() const {
    std::vector<DataTable> out;
    if (!m_features) return out;
    const auto rows = listedFeatures();
    DataTable t;
    t.name = QStringLiteral("active_features");
    t.quantity = QStringLiteral("feature activations at token %1").arg(selToken());
    t.rowAxis = QStringLiteral("feature");
    t.values = gwb::engine::FloatArray::zeros({static_cast<int64_t>(rows.size())});
    for (size_t i = 0; i < rows.size(); ++i) {
        t.values.data[i] = rows[i].second;
        t.rowLabels << qs(m_features->featureName(rows[i].first));
    }
    out.push_back(t);
    if (m_features->crosscoder) {
        DataTable r;
        r.name = QStringLiteral("relative_decoder_norms");
        r.quantity = QStringLiteral("||d_2|| / (||d_1|| + ||d_2||) per feature");
        r.rowAxis = QStringLiteral("feature");
        r.values = gwb::engine::FloatArray::zeros({static_cast<int64_t>(m_features->relativeNorms.size())});
        for (size_t i = 0; i < m_features->relativeNorms.size(); ++i)
            r.values.data[i] = static_cast<float>(m_features->relativeNorms[i]);
        out.push_back(r);
    }
    if (m_dashboard.feature >= 0 && !m_dashboard.histogramCounts.empty()) {
        DataTable h;
        h.name = QStringLiteral("activation_histogram");
        h.quantity = QString::fromStdString(m_dashboard.name) + QStringLiteral(" activation histogram (rows per bin)");
        h.rowAxis = QStringLiteral("bin");
        h.values = gwb::engine::FloatArray::zeros({static_cast<int64_t>(m_dashboard.histogramCounts.size())});
        for (size_t i = 0; i < m_dashboard.histogramCounts.size(); ++i) {
            h.values.data[i] = static_cast<float>(m_dashboard.histogramCounts[i]);
            h.rowLabels << fmt(m_dashboard.histogramEdges[i]) + QStringLiteral("..") +
                               fmt(m_dashboard.histogramEdges[i + 1]);
        }
        out.push_back(h);
    }
    return out;
}

std::vector<ChartData> FeaturesFigure::figurePanels() const {
    // (a) the features most active at the token; (b) the chosen feature's histogram; (c) a
    // crosscoder's relative norms. Lettered, as the caption names them (one row, or one column).
    std::vector<ChartData> out;
    ChartData active;
    active.kind = ChartData::Kind::Bar;
    active.title = QStringLiteral("Most active features at token %1").arg(selToken());
    active.xTitle = QStringLiteral("feature");
    active.yTitle = QStringLiteral("activation");
    ChartSeries s;
    const auto rows = listedFeatures();
    for (size_t i = 0; i < rows.size() && i < 8; ++i) {
        active.categories << QString::number(rows[i].first);
        s.y.push_back(rows[i].second);
    }
    active.series.push_back(s);
    out.push_back(active);
    if (m_dashboard.feature >= 0 && activationChart().hasData()) out.push_back(activationChart());
    if (m_features && m_features->crosscoder) out.push_back(relativeNormChart(true));
    for (size_t i = 0; i < out.size(); ++i)
        out[i].title = QStringLiteral("(%1) %2").arg(QChar(u'a' + static_cast<char16_t>(i))).arg(out[i].title);
    return out;
}

double FeaturesFigure::aspect(double widthInches) const {
    const auto n = static_cast<double>(figurePanels().size());
    return widthInches < 5 ? std::max(1.2, 0.25 + 0.55 * n) : 0.6;
}

void FeaturesFigure::draw(QPainter& p, const QRectF& rect, const FigureStyle& style, ColormapId) const {
    const std::vector<ChartData> panels = figurePanels();
    const bool narrow = rect.width() < rect.height() * 1.3;
    const auto n = static_cast<double>(panels.size());
    const double gap = 10;
    for (size_t i = 0; i < panels.size(); ++i) {
        const double k = static_cast<double>(i);
        const QRectF r = narrow ? QRectF(rect.left(), rect.top() + k * (rect.height() + gap) / n, rect.width(),
                                         (rect.height() + gap) / n - gap)
                                : QRectF(rect.left() + k * (rect.width() + gap) / n, rect.top(),
                                         (rect.width() + gap) / n - gap, rect.height());
        if (i > 0 || panels[i].hasData()) {
            paintChart(p, r, panels[i], style);
            continue;
        }
        p.save();
        p.setFont(style.body);
        p.setPen(Qt::darkGray);
        p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap,
                   QStringLiteral("No feature fires at token %1").arg(selToken()));
        p.restore();
    }
}

} // namespace gwb::views
