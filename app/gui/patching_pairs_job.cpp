#include "gui/patching_pairs_job.h"

#include "gwb/engine/patch_pairs.h"
#include "gwb/engine/patch_pairs_run.h"

#include <atomic>
#include <cmath>

namespace gwb::app {

using gwb::engine::computePairs;
using gwb::engine::PairsResult;
using gwb::engine::PairsRunOptions;
using gwb::views::PairsData;
using gwb::views::PairsGrid;

namespace {

QStringList labels(const std::vector<std::string>& a) {
    QStringList out;
    for (const std::string& x : a)
        out << QString::fromStdString(x);
    return out;
}

/// The view's grid of one model's run.
void fillGrid(const PairsResult& r, int bootstrap, uint64_t seed, PairsGrid& g) {
    const int64_t P = r.pairs(), cells = r.rows * r.cols;
    const std::string& site = r.site;
    g.site = QString::fromStdString(site);
    g.modelName = QString::fromStdString(r.modelName);
    g.rows = r.rows;
    g.cols = r.cols;
    g.rowLabels = labels(r.rowLabels);
    g.colLabels = labels(r.colLabels);
    g.rowTitle = site == "resid" ? QStringLiteral("block input") : QStringLiteral("layer");
    g.colTitle = site == "offset" ? QStringLiteral("offset")
                 : site == "head" ? QStringLiteral("head")
                                  : QStringLiteral("position");
    g.estimated = r.estimated;
    g.lines = r.lines;
    g.values = r.primary;
    g.flagged = r.flagged;
    const gwb::engine::CellSummary s = gwb::engine::summarizeOverPairs(r.primary, P, cells, bootstrap, seed);
    g.mean = s.mean;
    g.low = s.low;
    g.high = s.high;
    g.n = s.n;
    if (!r.estimate.empty()) { // exact run: every pair x cell's estimate against its exact change
        for (int64_t p = 0; p < P; ++p)
            for (int64_t i = 0; i < cells; ++i) {
                const size_t k = static_cast<size_t>(p * cells + i);
                const double exact = r.metric[k] - r.baseline(p);
                if (std::isfinite(r.estimate[k]) && std::isfinite(exact)) {
                    g.scatterEstimate.push_back(r.estimate[k]);
                    g.scatterExact.push_back(exact);
                }
            }
    } else if (r.checkWidth > 0) { // attribution: the checked cells
        for (size_t k = 0; k < r.checkCells.size(); ++k)
            if (r.checkCells[k] >= 0 && std::isfinite(r.checkEstimate[k]) && std::isfinite(r.checkExact[k])) {
                g.scatterEstimate.push_back(r.checkEstimate[k]);
                g.scatterExact.push_back(r.checkExact[k]);
            }
    }
    g.spearman = gwb::engine::spearmanCorrelation(g.scatterEstimate, g.scatterExact);
    g.pearson = gwb::engine::pearsonCorrelation(g.scatterEstimate, g.scatterExact);
    for (const gwb::engine::SkippedLine& sk : r.skipped)
        g.skipped << QStringLiteral("line %1: %2").arg(sk.line).arg(QString::fromStdString(sk.reason));
    g.usable = r.usable;
    g.complete = r.complete;
}

} // namespace

PairsData computePatchingPairs(ModelCache& cache, const PatchingJobRequest& request,
                               const gwb::views::PairsInputs& inputs, const std::function<bool(double)>& progress,
                               int bootstrap, uint64_t seed) {
    PairsData out;
    out.inputs = inputs;
    out.bootstrap = bootstrap;
    out.seed = seed;
    gwb::engine::PairsFile file;
    try {
        file = gwb::engine::readPairsFile(inputs.file.toStdString());
    } catch (const std::exception& e) {
        out.error = QString::fromUtf8(e.what());
        return out;
    }
    out.format = QString::fromStdString(file.format);
    out.lines = file.lines;
    const QString paths[2] = {request.grassmannPath, request.baselinePath};
    gwb::engine::Model models[2];
    PairsGrid* const grids[2] = {&out.grassmann, &out.transformer};
    loadCausalModels(cache, paths, request.device, models, grids);
    int toRun = 0;
    for (int m = 0; m < 2; ++m)
        toRun += grids[m]->error.isEmpty();
    int ran = 0;
    std::atomic<bool> cancelled{false};
    for (int m = 0; m < 2; ++m) {
        PairsGrid& g = *grids[m];
        if (!g.error.isEmpty()) continue;
        if (cancelled) {
            g.error = QStringLiteral("cancelled before this model ran");
            continue;
        }
        const QString site = siteFor(inputs.site, models[m].config().kind);
        if (site.isEmpty()) {
            g.error = QStringLiteral("a %1 model has no site %2").arg(causalModelWord(m).toLower(), inputs.site);
            continue;
        }
        PairsRunOptions o;
        o.modelFile = paths[m].toStdString();
        o.pairsPath = inputs.file.toStdString();
        o.site = site.toStdString();
        o.mode = inputs.mode.toStdString();
        o.attribution = inputs.method == QLatin1String("attribution");
        o.check = o.attribution ? inputs.check : 0;
        o.alsoEstimate = !o.attribution;
        o.bootstrap = bootstrap;
        o.seed = seed;
        try {
            const PairsResult r = computePairs(models[m], file, o, [&](double f) {
                const bool go = !progress || progress((ran + f) / std::max(1, toRun));
                if (!go) cancelled = true;
                return go;
            });
            fillGrid(r, bootstrap, seed, g);
            if (!r.complete) cancelled = true;
        } catch (const std::exception& e) {
            g.error = cancelled ? QStringLiteral("cancelled before the first pair") : QString::fromUtf8(e.what());
        }
        ++ran;
    }
    return out;
}

} // namespace gwb::app
