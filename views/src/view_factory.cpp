#include "gwb/views/view.h"

#include "gwb/views/angles_view.h"
#include "gwb/views/attention_view.h"
#include "gwb/views/compare_view.h"
#include "gwb/views/corpus_view.h"
#include "gwb/views/features_view.h"
#include "gwb/views/gate_view.h"
#include "gwb/views/graph_view.h"
#include "gwb/views/plucker_view.h"
#include "gwb/views/lens_view.h"
#include "gwb/views/patching_view.h"
#include "gwb/views/paths_view.h"
#include "gwb/views/readout_view.h"
#include "gwb/views/saliency_view.h"
#include "gwb/views/subspace_view.h"

namespace gwb::views {

QStringList viewIds() {
    return figureIds(); // one view per figure, in the same order
}

std::unique_ptr<View> createView(const QString& id, QWidget* parent) {
    if (id == view_id::kGate) return std::make_unique<GateView>(parent);
    if (id == view_id::kPlucker) return std::make_unique<PluckerView>(parent);
    if (id == view_id::kAngles) return std::make_unique<AnglesView>(parent);
    if (id == view_id::kSubspace) return std::make_unique<SubspaceView>(parent);
    if (id == view_id::kAttention) return std::make_unique<AttentionView>(parent);
    if (id == view_id::kCompare) return std::make_unique<CompareView>(parent);
    if (id == view_id::kReadout) return std::make_unique<ReadoutView>(parent);
    if (id == view_id::kLens) return std::make_unique<LensView>(parent);
    if (id == view_id::kSaliency) return std::make_unique<SaliencyView>(parent);
    if (id == view_id::kPatching) return std::make_unique<PatchingView>(parent);
    if (id == view_id::kPaths) return std::make_unique<PathsView>(parent);
    if (id == view_id::kFeatures) return std::make_unique<FeaturesView>(parent);
    if (id == view_id::kGraph) return std::make_unique<GraphView>(parent);
    if (id == view_id::kCorpus) return std::make_unique<CorpusView>(parent);
    return nullptr;
}

} // namespace gwb::views
