#include "runs/lens_adapter.h"

#include "gwb/engine/features.h"
#include "gwb/engine/lens.h"

#include <optional>

namespace gwb::app {

namespace {
struct Side {
    gwb::engine::TracePtr trace;
    QString path;
    std::optional<gwb::engine::Model> model;
    std::string hash;
    std::vector<gwb::engine::LensReadout>* out = nullptr;
};

std::vector<int32_t> traceIds(const gwb::engine::Trace& t) {
    std::vector<int32_t> ids;
    ids.reserve(t.tokens.size());
    for (const auto& tok : t.tokens)
        ids.push_back(tok.id);
    return ids;
}
} // namespace

gwb::engine::LensComparison computeLensComparison(ModelCache& cache, const LensRunRequest& r,
                                                  const std::atomic<bool>* cancel) {
    gwb::engine::LensComparison out;
    std::vector<gwb::engine::Lens> lenses;
    for (const QString& f : r.lensFolders)
        lenses.push_back(gwb::engine::readLens(f.toStdString()));
    Side sides[2] = {{r.data.grassmann, r.grassmannPath, {}, {}, &out.grassmann},
                     {r.data.baseline, r.baselinePath, {}, {}, &out.baseline}};
    for (Side& s : sides) {
        if (!s.trace || s.trace->tokens.empty()) continue;
        const std::string name = s.trace->isGrassmann() ? "Grassmann" : "Transformer";
        if (s.path.isEmpty()) {
            out.notes.push_back(name + ": no model file to read the lenses out with");
            continue;
        }
        try {
            s.model = cache.get(s.path, r.device);
            s.hash = gwb::engine::modelWeightsHash(*s.model);
        } catch (const std::exception& e) {
            out.notes.push_back(name + ": " + e.what());
        }
    }
    const auto check = [&] {
        if (cancel && cancel->load()) throw LensRunCancelled();
    };
    for (Side& s : sides) {
        if (!s.model) continue;
        check();
        const std::vector<int32_t> ids = traceIds(*s.trace);
        s.out->push_back(gwb::engine::lensReadout(*s.model, ids, nullptr));
        for (size_t i = 0; i < lenses.size(); ++i) {
            const gwb::engine::Lens& lens = lenses[i];
            const std::string folder = r.lensFolders[static_cast<qsizetype>(i)].toStdString();
            bool fittedHere = lens.modelHash == s.hash, fittedOnOther = false;
            for (const Side& o : sides)
                if (&o != &s && o.model && lens.modelHash == o.hash) fittedOnOther = true;
            if (!fittedHere && fittedOnOther) continue; // drawn on the model it was fitted on
            const auto& c = s.model->config();
            if (lens.dModel != c.dModel || lens.nLayers != c.nLayers) {
                if (!fittedOnOther)
                    out.notes.push_back("the " + gwb::engine::lensKindName(lens.kind) + " lens in '" + folder +
                                        "' (fitted on " + lens.modelName + ", d_model " + std::to_string(lens.dModel) +
                                        ", " + std::to_string(lens.nLayers) + " layers) does not fit " +
                                        s.model->displayName());
                continue;
            }
            check();
            s.out->push_back(gwb::engine::lensReadout(*s.model, ids, &lens, folder));
        }
    }
    return out;
}

} // namespace gwb::app
