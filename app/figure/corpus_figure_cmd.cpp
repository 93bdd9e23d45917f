#include "figure/corpus_figure_cmd.h"

#include "gwb/views/corpus_figure.h"
#include "gwb/views/figure_export.h"

#include <QFileInfo>

#include <stdexcept>

namespace gwb::app {

gwb::views::ExportResult writeCorpusFigure(const CorpusFigureRequest& r) {
    gwb::views::WorkbenchData data;
    try {
        data.corpus =
            std::make_shared<gwb::engine::CorpusStats>(gwb::engine::CorpusStats::read(r.statsPath.toStdString()));
    } catch (const std::exception& e) {
        throw std::runtime_error("cannot open statistics '" + r.statsPath.toStdString() + "': " + e.what());
    }
    data.corpusPath = QFileInfo(r.statsPath).absoluteFilePath().toStdString();
    QJsonObject settings;
    if (!r.quantity.isEmpty()) {
        const QString key = gwb::views::CorpusFigure::keyFor(*data.corpus, r.quantity);
        if (key.isEmpty())
            throw std::invalid_argument(
                "--quantity '" + r.quantity.toStdString() + "' is not in '" + r.statsPath.toStdString() +
                "'; it has: " +
                gwb::views::CorpusFigure::quantityKeys(*data.corpus).join(QStringLiteral(", ")).toStdString());
        settings.insert(QStringLiteral("quantity"), key);
    }
    if (!r.shape.isEmpty()) {
        if (r.shape != QLatin1String("box") && r.shape != QLatin1String("violin"))
            throw std::invalid_argument("--shape must be box or violin, got '" + r.shape.toStdString() + "'");
        settings.insert(QStringLiteral("shape"), r.shape);
    }
    gwb::views::ExportResult res = gwb::views::exportViewFigure(gwb::views::view_id::kCorpus, data, {}, settings,
                                                                figureOptions(r.settings), r.outPath, r.dataBase);
    if (!res.ok) throw std::runtime_error(res.message.toStdString());
    return res;
}

} // namespace gwb::app
