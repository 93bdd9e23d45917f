#include "gwb/views/figure.h"

#include "gwb/views/angles_figure.h"
#include "gwb/views/attention_figure.h"
#include "gwb/views/compare_figure.h"
#include "gwb/views/corpus_figure.h"
#include "gwb/views/features_figure.h"
#include "gwb/views/gate_figure.h"
#include "gwb/views/graph_figure.h"
#include "gwb/views/lens_figure.h"
#include "gwb/views/patching_figure.h"
#include "gwb/views/paths_figure.h"
#include "gwb/views/plucker_figure.h"
#include "gwb/views/readout_figure.h"
#include "gwb/views/saliency_figure.h"
#include "gwb/views/subspace_figure.h"

namespace gwb::views {

QStringList figureIds() {
    return {QStringLiteral("gate"),     QStringLiteral("plucker"),   QStringLiteral("angles"),
            QStringLiteral("subspace"), QStringLiteral("attention"), QStringLiteral("compare"),
            QStringLiteral("readout"),  QStringLiteral("lens"),      QStringLiteral("saliency"),
            QStringLiteral("patching"), QStringLiteral("paths"),     QStringLiteral("features"),
            QStringLiteral("graph"),    QStringLiteral("corpus")};
}

std::unique_ptr<Figure> createFigure(const QString& id) {
    if (id == QLatin1String("gate")) return std::make_unique<GateFigure>();
    if (id == QLatin1String("plucker")) return std::make_unique<PluckerFigure>();
    if (id == QLatin1String("angles")) return std::make_unique<AnglesFigure>();
    if (id == QLatin1String("subspace")) return std::make_unique<SubspaceFigure>();
    if (id == QLatin1String("attention")) return std::make_unique<AttentionFigure>();
    if (id == QLatin1String("compare")) return std::make_unique<CompareFigure>();
    if (id == QLatin1String("readout")) return std::make_unique<ReadoutFigure>();
    if (id == QLatin1String("lens")) return std::make_unique<LensFigure>();
    if (id == QLatin1String("saliency")) return std::make_unique<SaliencyFigure>();
    if (id == QLatin1String("patching")) return std::make_unique<PatchingFigure>();
    if (id == QLatin1String("paths")) return std::make_unique<PathsFigure>();
    if (id == QLatin1String("features")) return std::make_unique<FeaturesFigure>();
    if (id == QLatin1String("graph")) return std::make_unique<GraphFigure>();
    if (id == QLatin1String("corpus")) return std::make_unique<CorpusFigure>();
    return nullptr;
}

} // namespace gwb::views
