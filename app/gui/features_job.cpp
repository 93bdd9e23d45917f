#include "gui/features_job.h"

#include "gwb/engine/tokenizer.h"
#include "gwb/views/token_strip.h"

#include <QDir>
#include <QFileInfo>
#include <QPointer>

#include <algorithm>

namespace gwb::app {
namespace {

std::vector<int32_t> idsOf(const gwb::engine::TracePtr& t) {
    std::vector<int32_t> ids;
    for (const auto& tok : t->tokens)
        ids.push_back(tok.id);
    return ids;
}

/// The model (and for a crosscoder the second) that a dictionary was trained on, among the window's
/// two; throws std::invalid_argument saying which it wants.
struct Fitted {
    gwb::engine::Model first;
    std::optional<gwb::engine::Model> second;
    gwb::engine::TracePtr trace;
};

/// "'name' (weights 1a2b3c4d5e6f)": a model as a mismatch message names it.
std::string modelWithHash(const std::string& name, const std::string& hash) {
    return "'" + name + "' (weights " + hash.substr(0, 12) + ")";
}

Fitted fit(ModelCache& cache, const gwb::engine::Dictionary& d, const FeaturesContext& c) {
    struct Candidate {
        QString path;
        gwb::engine::TracePtr trace;
    };
    std::vector<Candidate> all;
    if (!c.grassmannPath.isEmpty()) all.push_back({c.grassmannPath, c.data.grassmann});
    if (!c.baselinePath.isEmpty()) all.push_back({c.baselinePath, c.data.baseline});
    std::vector<std::pair<gwb::engine::Model, gwb::engine::TracePtr>> models;
    for (const Candidate& cand : all)
        models.push_back({cache.get(cand.path, c.device), cand.trace});
    auto hashOf = [](const gwb::engine::Model& m) { return gwb::engine::modelWeightsHash(m); };
    // Which models are open, by name and weight hash: the two names may be the same (a `gwb init`
    // model named like the bundled one), the hashes say what differs.
    auto open = [&] {
        std::string list;
        for (size_t i = 0; i < models.size(); ++i)
            list += (i ? (i + 1 == models.size() ? " and " : ", ") : "") +
                    modelWithHash(models[i].first.displayName(), hashOf(models[i].first));
        return models.empty() ? std::string("no model is open") : "the models open are " + list;
    };
    Fitted out;
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
                gwb::engine::checkDictionaryFits(d, m);
            } catch (const std::invalid_argument& e) {
                if (why.empty()) why = e.what();
                continue;
            }
            out.first = m;
            out.trace = t;
            found = true;
            break;
        }
        if (!found) throw std::invalid_argument(why.empty() ? "no model is open" : why + " (" + open() + ")");
    }
    if (!found)
        throw std::invalid_argument("the dictionary was trained on " +
                                    modelWithHash(d.config.modelName, d.config.modelHash) + ", and " + open() +
                                    ": none has its weights");
    if (d.config.crosscoder()) {
        for (auto& [m, t] : models)
            if (hashOf(m) == d.config.secondModelHash) out.second = m;
        if (!out.second)
            throw std::invalid_argument("the crosscoder also reads " +
                                        modelWithHash(d.config.secondModelName, d.config.secondModelHash) + ", and " +
                                        open() + ": none has its weights");
    }
    return out;
}

} // namespace

gwb::views::FeatureDataPtr computeFeatureData(ModelCache& cache, const QString& path,
                                              const std::shared_ptr<const gwb::engine::Dictionary>& dictionary,
                                              const FeaturesContext& context) {
    auto out = std::make_shared<gwb::views::FeatureData>();
    const gwb::engine::DictionaryConfig& c = dictionary->config;
    out->path = path;
    out->site = QString::fromStdString(c.site);
    out->secondSite = QString::fromStdString(c.secondSite);
    out->architecture = QString::fromStdString(c.architecture);
    out->modelName = QString::fromStdString(c.modelName);
    out->secondModelName = QString::fromStdString(c.secondModelName);
    out->dSae = c.dSae;
    out->crosscoder = c.crosscoder();
    if (out->crosscoder) out->relativeNorms = gwb::engine::relativeDecoderNorms(*dictionary);
    const gwb::engine::TracePtr primary = context.data.primary();
    if (!primary) {
        out->error = QStringLiteral("run a prompt to see its features");
        return out;
    }
    try {
        const Fitted f = fit(cache, *dictionary, context);
        if (!f.trace) throw std::invalid_argument("the dictionary's model has no trace of this prompt");
        const gwb::engine::FloatArray z =
            gwb::engine::featureActivations(f.first, *dictionary, idsOf(f.trace), f.second ? &*f.second : nullptr);
        out->perToken.resize(static_cast<size_t>(z.dim(0)));
        for (int64_t t = 0; t < z.dim(0); ++t) {
            auto& row = out->perToken[static_cast<size_t>(t)];
            for (int64_t j = 0; j < z.dim(1); ++j)
                if (z.at2(t, j) > 0) row.push_back({j, z.at2(t, j)});
            std::sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
            if (row.size() > 64) row.resize(64);
        }
    } catch (const std::exception& e) {
        out->error = QString::fromUtf8(e.what());
    }
    return out;
}

gwb::views::FeatureDashboard computeDashboard(ModelCache& cache,
                                              const std::shared_ptr<const gwb::engine::Dictionary>& dictionary,
                                              int64_t feature, const FeaturesContext& context, int64_t maxWindows) {
    gwb::views::FeatureDashboard d;
    d.feature = feature;
    d.name = dictionary->featureName(feature);
    try {
        std::vector<std::string> files;
        QStringList names;
        for (const QString& f : context.dashboardCorpus) {
            if (!QFileInfo(f).isFile())
                throw std::invalid_argument("the dashboard corpus file '" + f.toStdString() + "' does not exist");
            files.push_back(f.toStdString());
            names << QFileInfo(f).fileName();
        }
        for (const std::string& f :
             context.dashboardCorpus.isEmpty() ? dictionary->config.corpus : std::vector<std::string>{})
            if (QFileInfo::exists(QString::fromStdString(f))) {
                files.push_back(f);
                names << QFileInfo(QString::fromStdString(f)).fileName();
            }
        if (files.empty())
            throw std::invalid_argument("the dictionary's training files are not on this machine, so there is no "
                                        "corpus to draw contexts from (gwb features top --corpus FILE reads others)");
        d.corpus = names.join(QStringLiteral(", ")) + QStringLiteral(" (first %1 windows)").arg(maxWindows);
        const Fitted f = fit(cache, *dictionary, context);
        const auto sums = gwb::engine::summarizeFeatures(f.first, *dictionary, files, {feature}, 10, 8, 4,
                                                         dictionary->config.contextSize, maxWindows, nullptr,
                                                         f.second ? &*f.second : nullptr);
        static_cast<gwb::engine::FeatureDashboard&>(d) =
            gwb::engine::featureDashboards(f.first, *dictionary, sums).front();
    } catch (const std::exception& e) {
        d.error = QString::fromUtf8(e.what());
    }
    return d;
}

FeatureRunner::FeatureRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::views::FeatureDataPtr>();
    qRegisterMetaType<gwb::views::FeatureDashboard>();
}

FeatureRunner::~FeatureRunner() = default; // the lane drops queued jobs and waits for the running one

void FeatureRunner::open(const QString& path, const FeaturesContext& context) {
    QPointer<FeatureRunner> self(this);
    if (context.grassmannChoice) m_cache.setImportChoice(context.grassmannPath, *context.grassmannChoice);
    if (context.baselineChoice) m_cache.setImportChoice(context.baselinePath, *context.baselineChoice);
    m_lane.start([self, path, context, cache = &m_cache] {
        std::shared_ptr<const gwb::engine::Dictionary> d;
        QString error;
        try {
            d = std::make_shared<const gwb::engine::Dictionary>(gwb::engine::loadDictionary(path.toStdString()));
        } catch (const std::exception& e) {
            error = QStringLiteral("Cannot open dictionary: %1").arg(QString::fromUtf8(e.what()));
        }
        // A dictionary of another model is refused here, before it replaces the one open (it used to
        // load, drop the previous one and show "no feature fires" under a one-line error).
        if (d && (!context.grassmannPath.isEmpty() || !context.baselinePath.isEmpty())) {
            try {
                fit(*cache, *d, context);
            } catch (const std::exception& e) {
                error = QStringLiteral("Dictionary %1 not opened: %2. The dictionary open before stays.")
                            .arg(QDir::toNativeSeparators(path), QString::fromUtf8(e.what()));
                d.reset();
            }
        }
        if (!self) return;
        QMetaObject::invokeMethod(
            self,
            [self, d, path, error] {
                if (!self) return;
                if (!d) {
                    Q_EMIT self->failed(error);
                    return;
                }
                self->m_dictionary = d;
                self->m_path = path;
                Q_EMIT self->opened(path);
            },
            Qt::QueuedConnection);
    });
}

void FeatureRunner::activations(const FeaturesContext& context) {
    if (!m_dictionary) return;
    const quint64 id = ++m_latestActivations;
    if (context.grassmannChoice) m_cache.setImportChoice(context.grassmannPath, *context.grassmannChoice);
    if (context.baselineChoice) m_cache.setImportChoice(context.baselinePath, *context.baselineChoice);
    QPointer<FeatureRunner> self(this);
    auto dict = m_dictionary;
    const QString path = m_path;
    m_lane.run<FeatureRunner, gwb::views::FeatureDataPtr>(
        this,
        [self, id, dict, path, context, cache = m_cache]() mutable {
            if (!self || id != self->m_latestActivations) return gwb::views::FeatureDataPtr(); // stale
            return computeFeatureData(cache, path, dict, context);
        },
        [id](FeatureRunner* self, const gwb::views::FeatureDataPtr& data) {
            if (id == self->m_latestActivations) Q_EMIT self->activationsReady(data);
        });
}

void FeatureRunner::dashboard(int64_t feature, const FeaturesContext& context) {
    if (!m_dictionary) return;
    const quint64 id = ++m_latestDashboard;
    QPointer<FeatureRunner> self(this);
    auto dict = m_dictionary;
    FeaturesContext withCorpus = context;
    if (withCorpus.dashboardCorpus.isEmpty()) withCorpus.dashboardCorpus = m_corpus;
    m_lane.run<FeatureRunner, gwb::views::FeatureDashboard>(
        this,
        [self, id, dict, feature, context = std::move(withCorpus), cache = m_cache]() mutable {
            if (!self || id != self->m_latestDashboard) return gwb::views::FeatureDashboard(); // stale
            return computeDashboard(cache, dict, feature, context);
        },
        [id](FeatureRunner* self, const gwb::views::FeatureDashboard& d) {
            if (id == self->m_latestDashboard) Q_EMIT self->dashboardReady(d);
        });
}

FeatureRunner* wireFeatures(gwb::views::FeaturesView* view, std::function<FeaturesContext()> context,
                            gwb::views::TokenStrip* strip, std::function<QString()> chooseFolder,
                            std::function<void(const QString&)> error, std::function<QStringList()> chooseFiles) {
    auto* runner = new FeatureRunner(view);
    QObject::connect(view, &gwb::views::FeaturesView::corpusRequested, runner, [runner, view, chooseFiles] {
        if (!chooseFiles) return;
        const QStringList files = chooseFiles();
        if (files.isEmpty()) return;
        runner->setDashboardCorpus(files);
        view->refreshDashboard();
    });
    QObject::connect(view, &gwb::views::FeaturesView::openDictionaryRequested, runner, [runner, chooseFolder, context] {
        const QString path = chooseFolder();
        if (!path.isEmpty()) runner->open(path, context());
    });
    QObject::connect(runner, &FeatureRunner::opened, view, [runner, context] { runner->activations(context()); });
    QObject::connect(runner, &FeatureRunner::failed, view, [error](const QString& m) { error(m); });
    QObject::connect(runner, &FeatureRunner::activationsReady, view, &gwb::views::FeaturesView::setFeatures);
    QObject::connect(view, &gwb::views::FeaturesView::dashboardRequested, runner,
                     [runner, context](qint64 f) { runner->dashboard(f, context()); });
    QObject::connect(runner, &FeatureRunner::dashboardReady, view, &gwb::views::FeaturesView::setDashboard);
    if (strip)
        QObject::connect(view, &gwb::views::FeaturesView::featureChosen, strip, [view, strip](qint64 f) {
            const gwb::views::FeatureData* d = view->features();
            if (f < 0 || !d || d->perToken.empty()) {
                if (strip->customColouring().startsWith(QLatin1String("feature."))) strip->setCustomColouring({}, {});
                return;
            }
            // The chips coloured by the feature's activation (0 where it is silent).
            std::vector<float> values(d->perToken.size(), 0.0f);
            for (size_t t = 0; t < d->perToken.size(); ++t)
                for (const auto& [j, v] : d->perToken[t])
                    if (j == f) values[t] = v;
            strip->setCustomColouring(values, d->featureName(f) + QStringLiteral(" activation"));
        });
    return runner;
}

} // namespace gwb::app
