#include "gui/features_job.h"

#include "gwb/engine/tokenizer.h"
#include "gwb/views/token_strip.h"

#include <QDir>
#include <QFileInfo>
#include <QPointer>

#include <algorithm>

namespace gwb::app {
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
                gwb::engine::fitDictionary(cache->opener(), *d, featureModels(context));
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
            strip->setCustomColouring(values,
                                      QString::fromStdString(d->featureName(f)) + QStringLiteral(" activation"));
        });
    return runner;
}

} // namespace gwb::app
