#pragma once
// A feature's dashboard as rich text (what it fired on, its top-activating contexts shaded by
// activation, what its decoder direction promotes and suppresses): the Features view's dashboard
// pane and the Graph view's hover over a transcoder feature draw the same text.

#include "gwb/engine/feature_results.h"

#include <QString>

namespace gwb::views::detail {

/// The dashboard's text; its error in red when it has one. maxContexts < 0: every top context.
QString dashboardHtml(const gwb::engine::FeatureDashboardRun& dashboard, int maxContexts = -1);

} // namespace gwb::views::detail
