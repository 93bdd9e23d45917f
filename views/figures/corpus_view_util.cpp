#include "corpus_view_util.h"

#include "gwb/views/chart_data.h"

#include <QFileInfo>
#include <QStringList>

namespace gwb::views::corpus {

bool isRole(const std::string& r) {
    return r == "model" || r == "baseline";
}

QString roleLabel(const gwb::engine::CorpusStats& s, const QString& role) {
    if (role.isEmpty()) return QStringLiteral("Grassmann vs Transformer");
    const std::string r = role.toStdString();
    if (s.quantities.count(r + ".gate_mean")) return QStringLiteral("Grassmann");
    if (s.quantities.count(r + ".attn_entropy")) return QStringLiteral("Transformer");
    return role;
}

QColor roleColor(const QString& label) {
    if (label == QLatin1String("Grassmann")) return seriesColor(0);
    if (label == QLatin1String("Transformer")) return seriesColor(1);
    return seriesColor(2);
}

int64_t trailingGroups(const gwb::engine::StatQuantity& q) {
    int64_t r = 1;
    for (size_t i = 1; i < q.groupShape.size(); ++i)
        r *= q.groupShape[i];
    return r;
}

int64_t leadingExtent(const gwb::engine::StatQuantity& q) {
    return q.groupShape.empty() ? 1 : q.groupShape[0];
}

QString categoryLabel(const gwb::engine::StatQuantity& q, int64_t i, int64_t extent) {
    if (q.axes.empty()) return QStringLiteral("all");
    const std::string& a = q.axes[0];
    if (a == "transition") return QStringLiteral("L%1→%2").arg(i).arg(i + 1);
    // As the Logit lens view names its rows: a layer's input state, then the final state.
    if (a == "lens_layer") return i == extent - 1 ? QStringLiteral("final") : QStringLiteral("L%1 in").arg(i);
    if (a == "layer") return QStringLiteral("L%1").arg(i);
    return QStringLiteral("%1 %2").arg(QString::fromStdString(a)).arg(i);
}

QString trailingLabel(const gwb::engine::StatQuantity& q, int64_t r) {
    QStringList parts;
    for (size_t i = q.groupShape.size(); i-- > 1;) {
        const int64_t e = std::max<int64_t>(1, q.groupShape[i]);
        QString axis = QString::fromStdString(q.axes.size() > i ? q.axes[i] : std::string("group"));
        if (i == 1 && !q.axes.empty() && q.axes[0] == q.axes[i]) axis = QStringLiteral("vs ") + axis;
        parts.prepend(QStringLiteral("%1 %2").arg(axis).arg(r % e));
        r /= e;
    }
    return parts.join(QStringLiteral(", "));
}

std::vector<int64_t> groupsOf(const gwb::engine::StatQuantity& q, int64_t leading, int group) {
    const int64_t R = trailingGroups(q);
    std::vector<int64_t> g;
    if (leading < 0 || leading >= leadingExtent(q)) return g;
    if (group >= 0) {
        if (group < R) g.push_back(leading * R + group);
        return g;
    }
    for (int64_t r = 0; r < R; ++r)
        g.push_back(leading * R + r);
    return g;
}

QString shortFile(const std::string& path) {
    return QFileInfo(QString::fromStdString(path)).fileName();
}

} // namespace gwb::views::corpus
