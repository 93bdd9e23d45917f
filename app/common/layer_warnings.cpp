#include "common/layer_warnings.h"

#include <QRegularExpression>

#include <map>

namespace gwb::app {

QStringList collapseLayerWarnings(const std::vector<std::string>& warnings) {
    static const QRegularExpression perLayer(QStringLiteral("^layer (\\d+): (.*)$"));
    QStringList rests;                    // first appearance order
    std::map<QString, QList<int>> layers; // rest -> layers
    QStringList out;
    for (const std::string& raw : warnings) {
        const QString w = QString::fromStdString(raw);
        const QRegularExpressionMatch m = perLayer.match(w);
        if (!m.hasMatch()) {
            if (!out.contains(w)) out << w;
            continue;
        }
        const QString rest = m.captured(2);
        if (!layers.count(rest)) rests << rest;
        layers[rest] << m.captured(1).toInt();
    }
    for (const QString& rest : rests) {
        const QList<int>& ls = layers[rest];
        QString which;
        const bool run = ls.size() > 2 && ls.back() - ls.front() == ls.size() - 1;
        if (ls.size() == 1) {
            which = QStringLiteral("layer %1").arg(ls.front());
        } else if (run) {
            which = QStringLiteral("layers %1\u2013%2").arg(ls.front()).arg(ls.back());
        } else {
            QStringList n;
            for (int l : ls)
                n << QString::number(l);
            which = QStringLiteral("layers ") + n.join(QStringLiteral(", "));
        }
        out << which + QStringLiteral(": ") + rest;
    }
    return out;
}

} // namespace gwb::app
