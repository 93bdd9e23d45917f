#include "gwb/engine/feature_runs.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

namespace gwb::engine {

namespace {

std::vector<int32_t> idsOf(const TracePtr& t) {
    std::vector<int32_t> ids;
    for (const auto& tok : t->tokens)
        ids.push_back(tok.id);
    return ids;
}

/// "'name' (weights 1a2b3c4d5e6f)": a model as a mismatch message names it.
std::string modelWithHash(const std::string& name, const std::string& hash) {
    return "'" + name + "' (weights " + hash.substr(0, 12) + ")";
}

} // namespace

FittedDictionary fitDictionary(const ModelOpener& open, const Dictionary& d, const FeatureModels& c) {
    std::vector<std::pair<Model, TracePtr>> models;
    for (int m = 0; m < 2; ++m)
        if (!c.paths[m].empty()) models.push_back({open(c.paths[m], c.device), c.traces[m]});
    auto hashOf = [](const Model& m) { return modelWeightsHash(m); };
    // Which models are open, by name and weight hash: the two names may be the same (a `gwb init`
    // model named like the bundled one), the hashes say what differs.
    auto openList = [&] {
        std::string list;
        for (size_t i = 0; i < models.size(); ++i)
            list += (i ? (i + 1 == models.size() ? " and " : ", ") : "") +
                    modelWithHash(models[i].first.displayName(), hashOf(models[i].first));
        return models.empty() ? std::string("no model is open") : "the models open are " + list;
    };
    FittedDictionary out;
    bool found = false;
    for (auto& [m, t] : models)
        if (!found && hashOf(m) == d.config.modelHash) {
            out.first = m;
            out.trace = t;
            found = true;
        }
    // A dictionary from elsewhere (SAELens's trainer) names no weights: the open model it fits,
    // the one of its model_name first.
    if (!found && d.config.modelHash.empty() && !d.config.crosscoder()) {
        auto byName = models;
        std::stable_partition(byName.begin(), byName.end(),
                              [&](const auto& mt) { return mt.first.displayName() == d.config.modelName; });
        std::string why;
        for (auto& [m, t] : byName) {
            try {
                checkDictionaryFits(d, m);
            } catch (const std::invalid_argument& e) {
                if (why.empty()) why = e.what();
                continue;
            }
            out.first = m;
            out.trace = t;
            found = true;
            break;
        }
        if (!found) throw std::invalid_argument(why.empty() ? "no model is open" : why + " (" + openList() + ")");
    }
    if (!found)
        throw std::invalid_argument("the dictionary was trained on " +
                                    modelWithHash(d.config.modelName, d.config.modelHash) + ", and " + openList() +
                                    ": none has its weights");
    if (d.config.crosscoder()) {
        for (auto& [m, t] : models)
            if (hashOf(m) == d.config.secondModelHash) out.second = m;
        if (!out.second)
            throw std::invalid_argument("the crosscoder also reads " +
                                        modelWithHash(d.config.secondModelName, d.config.secondModelHash) + ", and " +
                                        openList() + ": none has its weights");
    }
    return out;
}

FeatureDataPtr runFeatureActivations(const ModelOpener& open, const std::string& path,
                                     const std::shared_ptr<const Dictionary>& dictionary, const FeatureModels& models) {
    auto out = std::make_shared<FeatureData>();
    const DictionaryConfig& c = dictionary->config;
    out->path = path;
    out->site = c.site;
    out->secondSite = c.secondSite;
    out->architecture = c.architecture;
    out->modelName = c.modelName;
    out->secondModelName = c.secondModelName;
    out->dSae = c.dSae;
    out->crosscoder = c.crosscoder();
    if (out->crosscoder) out->relativeNorms = relativeDecoderNorms(*dictionary);
    const TracePtr primary = models.traces[0] ? models.traces[0] : models.traces[1];
    if (!primary) {
        out->error = "run a prompt to see its features";
        return out;
    }
    try {
        const FittedDictionary f = fitDictionary(open, *dictionary, models);
        if (!f.trace) throw std::invalid_argument("the dictionary's model has no trace of this prompt");
        const FloatArray z = featureActivations(f.first, *dictionary, idsOf(f.trace), f.second ? &*f.second : nullptr);
        out->perToken.resize(static_cast<size_t>(z.dim(0)));
        for (int64_t t = 0; t < z.dim(0); ++t) {
            auto& row = out->perToken[static_cast<size_t>(t)];
            for (int64_t j = 0; j < z.dim(1); ++j)
                if (z.at2(t, j) > 0) row.push_back({j, z.at2(t, j)});
            std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
            if (row.size() > 64) row.resize(64);
        }
    } catch (const std::exception& e) {
        out->error = e.what();
    }
    return out;
}

FeatureDashboardRun runFeatureDashboard(const ModelOpener& open, const std::shared_ptr<const Dictionary>& dictionary,
                                        int64_t feature, const FeatureModels& models,
                                        const std::vector<std::string>& corpusFiles, int64_t maxWindows) {
    namespace fs = std::filesystem;
    FeatureDashboardRun d;
    d.feature = feature;
    d.name = dictionary->featureName(feature);
    try {
        std::vector<std::string> files;
        std::string names;
        auto add = [&](const std::string& f) {
            files.push_back(f);
            names += (names.empty() ? "" : ", ") + fs::path(f).filename().string();
        };
        std::error_code ec;
        for (const std::string& f : corpusFiles) {
            if (!fs::is_regular_file(f, ec))
                throw std::invalid_argument("the dashboard corpus file '" + f + "' does not exist");
            add(f);
        }
        if (corpusFiles.empty())
            for (const std::string& f : dictionary->config.corpus)
                if (fs::exists(f, ec)) add(f);
        if (files.empty())
            throw std::invalid_argument("the dictionary's training files are not on this machine, so there is no "
                                        "corpus to draw contexts from (gwb features top --corpus FILE reads others)");
        d.corpus = names + " (first " + std::to_string(maxWindows) + " windows)";
        const FittedDictionary f = fitDictionary(open, *dictionary, models);
        const auto sums =
            summarizeFeatures(f.first, *dictionary, files, {feature}, 10, 8, 4, dictionary->config.contextSize,
                              maxWindows, nullptr, f.second ? &*f.second : nullptr);
        static_cast<FeatureDashboard&>(d) = featureDashboards(f.first, *dictionary, sums).front();
    } catch (const std::exception& e) {
        d.error = e.what();
    }
    return d;
}

} // namespace gwb::engine
