// A feature's dashboard (features.h: FeatureDashboard) and the dashboards file: the one reading of
// a summary's tokens as pieces and the one writer of "gwb-feature-dashboards", for the command
// line, Python and the window.

#include "gwb/engine/features.h"
#include "gwb/engine/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace gwb::engine {

using ojson = nlohmann::ordered_json;

namespace {

ojson finiteOrNull(double v) {
    return std::isfinite(v) ? ojson(v) : ojson(nullptr);
}

ojson readsJson(const std::vector<FeatureDashboard::Read>& reads) {
    ojson a = ojson::array();
    for (const FeatureDashboard::Read& r : reads)
        a.push_back({{"piece", r.piece}, {"id", r.id}, {"logit", r.logit}});
    return a;
}

ojson dashboardJson(const FeatureDashboard& s) {
    ojson top = ojson::array();
    for (const FeatureDashboard::Context& c : s.top)
        top.push_back({{"activation", c.activation},
                       {"window", c.window},
                       {"position", c.position},
                       {"begin", c.begin},
                       {"ids", c.ids},
                       {"pieces", c.pieces},
                       {"activations", c.activations}});
    return {{"name", s.name},
            {"feature", s.feature},
            {"rows", s.rows},
            {"fired", s.fired},
            {"max_activation", s.maxActivation},
            {"top", top},
            {"histogram", {{"edges", s.histogramEdges}, {"counts", s.histogramCounts}}},
            {"promoted", readsJson(s.promoted)},
            {"suppressed", readsJson(s.suppressed)},
            {"relative_norm", finiteOrNull(s.relativeNorm)},
            {"relative_norm_kind", s.relativeNormKind},
            {"reading_layer", s.readingLayer},
            {"reading_share", finiteOrNull(s.readingShare)}};
}

} // namespace

std::vector<FeatureDashboard> featureDashboards(const Model& model, const Dictionary& dictionary,
                                                const std::vector<FeatureSummary>& summaries) {
    const auto tok = model.tokenizer();
    auto piece = [&](int32_t id) { return tok ? tok->pieceText(id) : std::to_string(id); };
    std::vector<FeatureDashboard> out;
    out.reserve(summaries.size());
    for (const FeatureSummary& s : summaries) {
        FeatureDashboard d;
        d.name = dictionary.featureName(s.feature);
        d.feature = s.feature;
        d.rows = s.rows;
        d.fired = s.fired;
        d.maxActivation = s.maxActivation;
        for (const FeatureContext& c : s.top) {
            FeatureDashboard::Context x;
            x.activation = c.activation;
            x.window = c.window;
            x.position = c.position;
            x.begin = c.begin;
            x.ids = c.ids;
            for (int32_t id : c.ids)
                x.pieces.push_back(piece(id));
            x.activations = c.activations;
            d.top.push_back(std::move(x));
        }
        d.histogramEdges = s.histogramEdges;
        d.histogramCounts = s.histogramCounts;
        for (const auto& [id, v] : s.promoted)
            d.promoted.push_back({piece(id), id, v});
        for (const auto& [id, v] : s.suppressed)
            d.suppressed.push_back({piece(id), id, v});
        d.readingShare = s.readingShare;
        d.readingLayer = s.readingLayer;
        d.relativeNorm = s.relativeNorm;
        d.relativeNormKind = std::isfinite(s.relativeNorm) ? relativeNormKind(s.relativeNorm) : std::string();
        out.push_back(std::move(d));
    }
    return out;
}

std::string relativeNormsJson(const Dictionary& d) {
    const std::vector<double> r = relativeDecoderNorms(d);
    std::vector<int64_t> bins(20, 0);
    std::map<std::string, int64_t> kinds;
    ojson values = ojson::array();
    for (double v : r) {
        ++kinds[relativeNormKind(v)];
        if (v == v) ++bins[static_cast<size_t>(std::min(19.0, std::floor(v * 20)))];
        values.push_back(finiteOrNull(v));
    }
    std::vector<double> edges;
    for (int b = 0; b <= 20; ++b)
        edges.push_back(b / 20.0);
    const ojson doc = {{"definition",
                        "||W_dec,2[f]|| / (||W_dec,1[f]|| + ||W_dec,2[f]||) in training units (each model's part at "
                        "mean norm sqrt(d_m)); 0: the first model's alone, 1: the second's alone"},
                       {"first_model", d.config.modelName},
                       {"second_model", d.config.secondModelName},
                       {"histogram_edges", edges},
                       {"histogram_counts", bins},
                       {"kinds", {{"first", kinds["first"]}, {"shared", kinds["shared"]}, {"second", kinds["second"]}}},
                       {"values", values}};
    return doc.dump();
}

std::string featureDashboardsJson(const std::vector<FeatureDashboard>& dashboards, const Dictionary& d,
                                  const std::string& modelName, const std::string& dictionaryPath,
                                  const std::string& secondModelName) {
    ojson all = ojson::array();
    for (const FeatureDashboard& s : dashboards)
        all.push_back(dashboardJson(s));
    ojson doc = {{"format", "gwb-feature-dashboards"}, {"version", 1},   {"site", d.config.site}, {"model", modelName},
                 {"dictionary", dictionaryPath},       {"features", all}};
    if (d.config.crosscoder()) {
        doc["second_site"] = d.config.secondSite;
        doc["second_model"] = secondModelName;
        doc["relative_norms"] = ojson::parse(relativeNormsJson(d));
    }
    return doc.dump(1) + "\n";
}

} // namespace gwb::engine
