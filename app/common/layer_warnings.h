#pragma once
// Analysis warnings said once (gwb::engine::collapseLayerWarnings, prompt_run.h): "layer 0: X",
// ..., "layer 5: X" become "layers 0–5: X" (the window's notice, gwb figure and gwb trace print
// the same lines).

#include <QStringList>

#include <string>
#include <vector>

namespace gwb::app {

/// Per-layer warnings with the same text merged into one line naming the layers (a run "0–5",
/// else a list); other warnings once each, in first-appearance order.
QStringList collapseLayerWarnings(const std::vector<std::string>& warnings);

} // namespace gwb::app
