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
    QStringList ids;
    for (const QLatin1String id : view_id::kAll)
        ids << id;
    return ids;
}

std::unique_ptr<Figure> createFigure(const QString& id) {
    if (id == view_id::kGate) return std::make_unique<GateFigure>();
    if (id == view_id::kPlucker) return std::make_unique<PluckerFigure>();
    if (id == view_id::kAngles) return std::make_unique<AnglesFigure>();
    if (id == view_id::kSubspace) return std::make_unique<SubspaceFigure>();
    if (id == view_id::kAttention) return std::make_unique<AttentionFigure>();
    if (id == view_id::kCompare) return std::make_unique<CompareFigure>();
    if (id == view_id::kReadout) return std::make_unique<ReadoutFigure>();
    if (id == view_id::kLens) return std::make_unique<LensFigure>();
    if (id == view_id::kSaliency) return std::make_unique<SaliencyFigure>();
    if (id == view_id::kPatching) return std::make_unique<PatchingFigure>();
    if (id == view_id::kPaths) return std::make_unique<PathsFigure>();
    if (id == view_id::kFeatures) return std::make_unique<FeaturesFigure>();
    if (id == view_id::kGraph) return std::make_unique<GraphFigure>();
    if (id == view_id::kCorpus) return std::make_unique<CorpusFigure>();
    return nullptr;
}

} // namespace gwb::views
