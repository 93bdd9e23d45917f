#include "common/layer_warnings.h"

#include "gwb/engine/prompt_run.h"

namespace gwb::app {

QStringList collapseLayerWarnings(const std::vector<std::string>& warnings) {
    QStringList out;
    for (const std::string& w : gwb::engine::collapseLayerWarnings(warnings))
        out << QString::fromStdString(w);
    return out;
}

} // namespace gwb::app
