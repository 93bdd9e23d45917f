#include "runs/saliency_adapter.h"

#include "gwb/engine/tracer.h"

namespace gwb::app {

namespace {
/// One model's saliency; returns the error text or "" (filling values and targetText).
std::string oneModel(ModelCache& cache, const QString& path, const QString& device, const gwb::engine::TracePtr& trace,
                     int token, const QString& target, std::vector<float>& values, std::string& targetText) {
    if (!trace) return {};
    if (path.isEmpty()) return "no model file";
    try {
        const gwb::engine::Model model = cache.get(path, device);
        values = gwb::engine::saliencyAt(model, *trace, token, target.toStdString(), &targetText);
    } catch (const std::exception& e) {
        values.clear();
        return e.what();
    }
    return {};
}
} // namespace

gwb::engine::SaliencyResult computeSaliency(ModelCache& cache, const SaliencyRequest& r) {
    gwb::engine::SaliencyResult out;
    out.token = r.token;
    out.target = r.target.toStdString();
    out.grassmannError = oneModel(cache, r.grassmannPath, r.device, r.data.grassmann, r.token, r.target, out.grassmann,
                                  out.grassmannTarget);
    out.baselineError =
        oneModel(cache, r.baselinePath, r.device, r.data.baseline, r.token, r.target, out.baseline, out.baselineTarget);
    return out;
}

} // namespace gwb::app
