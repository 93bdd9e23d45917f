#pragma once
// Every view's id, spelled once: the figures' id(), the views' viewId(), both factories
// (figureIds, createFigure, createView), the window and `gwb figure --view` use these names.

#include <QString>

namespace gwb::views::view_id {

inline constexpr QLatin1String kGate{"gate"};
inline constexpr QLatin1String kPlucker{"plucker"};
inline constexpr QLatin1String kAngles{"angles"};
inline constexpr QLatin1String kSubspace{"subspace"};
inline constexpr QLatin1String kAttention{"attention"};
inline constexpr QLatin1String kCompare{"compare"};
inline constexpr QLatin1String kReadout{"readout"};
inline constexpr QLatin1String kLens{"lens"};
inline constexpr QLatin1String kSaliency{"saliency"};
inline constexpr QLatin1String kPatching{"patching"};
inline constexpr QLatin1String kPaths{"paths"};
inline constexpr QLatin1String kFeatures{"features"};
inline constexpr QLatin1String kGraph{"graph"};
inline constexpr QLatin1String kCorpus{"corpus"};

/// Every view, in the window's order (figureIds(), viewIds()).
inline constexpr QLatin1String kAll[] = {kGate, kPlucker,  kAngles,   kSubspace, kAttention, kCompare, kReadout,
                                         kLens, kSaliency, kPatching, kPaths,    kFeatures,  kGraph,   kCorpus};

} // namespace gwb::views::view_id
