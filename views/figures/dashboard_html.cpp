#include "dashboard_html.h"

#include "gwb/views/view_data.h"

#include <algorithm>
#include <cmath>

namespace gwb::views::detail {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString fmt(double v) {
    return QString::number(v, 'g', 3);
}

QString kindOf(double r) {
    if (!std::isfinite(r)) return QStringLiteral("undefined");
    return r < 0.3 ? QStringLiteral("first") : r > 0.7 ? QStringLiteral("second") : QStringLiteral("shared");
}

QString reads(const std::vector<gwb::engine::FeatureDashboard::Read>& v) {
    QStringList out;
    for (const auto& r : v)
        out << QStringLiteral("%1 (%2)").arg(displayPiece(qs(r.piece)).toHtmlEscaped(), fmt(r.logit));
    return out.join(QStringLiteral(", "));
}

} // namespace

QString dashboardHtml(const gwb::engine::FeatureDashboardRun& d, int maxContexts) {
    if (!d.error.empty()) return QStringLiteral("<p style='color:#a01010'>%1</p>").arg(qs(d.error).toHtmlEscaped());
    QString h = QStringLiteral("<p><b>%1</b>: fired on %2 of %3 rows of %4, max %5")
                    .arg(qs(d.name))
                    .arg(d.fired)
                    .arg(d.rows)
                    .arg(qs(d.corpus).toHtmlEscaped(), fmt(d.maxActivation));
    if (std::isfinite(d.readingShare))
        h += QStringLiteral("; %1% of its decoder direction lies in row(W_red) of layer %2 (what the mixer reads)")
                 .arg(QString::number(100 * d.readingShare, 'f', 1))
                 .arg(d.readingLayer);
    if (std::isfinite(d.relativeNorm))
        h += QStringLiteral("; relative decoder norm %1 (%2)").arg(fmt(d.relativeNorm), kindOf(d.relativeNorm));
    h += QStringLiteral("</p><p><b>Top-activating contexts</b> (shade: the feature's activation on each token)</p>");
    const size_t shown = maxContexts < 0 ? d.top.size() : std::min(d.top.size(), static_cast<size_t>(maxContexts));
    for (size_t k = 0; k < shown; ++k) {
        const auto& c = d.top[k];
        h += QStringLiteral("<p style='margin:2px'>%1&nbsp;&nbsp;").arg(fmt(c.activation));
        for (int i = 0; i < static_cast<int>(c.pieces.size()); ++i) {
            const float a = i < static_cast<int>(c.activations.size()) ? c.activations[static_cast<size_t>(i)] : 0;
            const int alpha = d.maxActivation > 0 ? std::clamp(static_cast<int>(220 * a / d.maxActivation), 0, 220) : 0;
            const QString piece = displayPiece(qs(c.pieces[static_cast<size_t>(i)])).toHtmlEscaped();
            h += QStringLiteral("<span style='background-color:rgba(230,120,20,%1)'>%2%3%4</span>")
                     .arg(alpha)
                     .arg(i == c.focus() ? QStringLiteral("<b><u>") : QString(), piece,
                          i == c.focus() ? QStringLiteral("</u></b>") : QString());
        }
        h += QStringLiteral("</p>");
    }
    if (shown < d.top.size())
        h += QStringLiteral("<p style='margin:2px;color:gray'>\u2026 %1 more</p>").arg(d.top.size() - shown);
    if (!d.promoted.empty())
        h += QStringLiteral("<p><b>Promotes</b> (decoder direction through the unembedding): %1<br><b>Suppresses</b>: "
                            "%2</p>")
                 .arg(reads(d.promoted), reads(d.suppressed));
    return h;
}

} // namespace gwb::views::detail
