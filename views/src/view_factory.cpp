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
    if (id == QLatin1String("gate")) return std::make_unique<GateView>(parent);
    if (id == QLatin1String("plucker")) return std::make_unique<PluckerView>(parent);
    if (id == QLatin1String("angles")) return std::make_unique<AnglesView>(parent);
    if (id == QLatin1String("subspace")) return std::make_unique<SubspaceView>(parent);
    if (id == QLatin1String("attention")) return std::make_unique<AttentionView>(parent);
    if (id == QLatin1String("compare")) return std::make_unique<CompareView>(parent);
    if (id == QLatin1String("readout")) return std::make_unique<ReadoutView>(parent);
    if (id == QLatin1String("lens")) return std::make_unique<LensView>(parent);
    if (id == QLatin1String("saliency")) return std::make_unique<SaliencyView>(parent);
    if (id == QLatin1String("patching")) return std::make_unique<PatchingView>(parent);
    if (id == QLatin1String("paths")) return std::make_unique<PathsView>(parent);
    if (id == QLatin1String("features")) return std::make_unique<FeaturesView>(parent);
    if (id == QLatin1String("graph")) return std::make_unique<GraphView>(parent);
    if (id == QLatin1String("corpus")) return std::make_unique<CorpusView>(parent);
    return nullptr;
}

} // namespace gwb::views
