#pragma once
// The Features view's work, off the GUI thread: opening a dictionary folder, its activations on
// the current traces (after each run), and a feature's dashboard over the dictionary's corpus.
// One lane of the process pool (work_lane.h), models from the process store; a result no longer
// wanted is dropped.

#include "runs/features_adapter.h"
#include "gui/work_lane.h"

#include "gwb/engine/features.h"
#include "gwb/views/features_view.h"
#include "gwb/views/view_data.h"

#include <QObject>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace gwb::views {
class TokenStrip;
}

namespace gwb::app {

class FeatureRunner : public QObject {
    Q_OBJECT
public:
    explicit FeatureRunner(QObject* parent = nullptr);
    ~FeatureRunner() override;
    /// Opens a dictionary folder; `opened` or `failed` follows.
    /// Loads the dictionary folder; refuses one whose model (or crosscoder's second model) is not
    /// among the context's models, keeping the dictionary open before (failed() says why).
    void open(const QString& path, const FeaturesContext& context);
    void activations(const FeaturesContext& context);
    void dashboard(int64_t feature, const FeaturesContext& context);
    /// The files later dashboards draw from (empty: the dictionary's training files).
    void setDashboardCorpus(const QStringList& files) { m_corpus = files; }
    const QStringList& dashboardCorpus() const { return m_corpus; }
    std::shared_ptr<const gwb::engine::Dictionary> dictionary() const { return m_dictionary; }
    QString path() const { return m_path; }

Q_SIGNALS:
    void opened(const QString& path);
    void failed(const QString& message);
    void activationsReady(const gwb::views::FeatureDataPtr& data);
    void dashboardReady(const gwb::views::FeatureDashboard& dashboard);

private:
    ModelCache m_cache = ModelCache::process(); ///< the process's model store, shared with every runner
    std::shared_ptr<const gwb::engine::Dictionary> m_dictionary;
    QString m_path;
    QStringList m_corpus;
    std::atomic<quint64> m_latestActivations{0}, m_latestDashboard{0};
    WorkLane m_lane; ///< last member: destroyed first, it waits for the running job
};

/// Connects the Features view to a runner: its Open button asks `chooseFolder` for a folder, new
/// traces recompute the activations, a clicked feature gets its dashboard, and the chosen feature's
/// activations are drawn over the token strip. Returns the runner (owned by the view).
/// Its "Dashboard Corpus…" button asks `chooseFiles` for text files and redraws the dashboard over them.
FeatureRunner* wireFeatures(gwb::views::FeaturesView* view, std::function<FeaturesContext()> context,
                            gwb::views::TokenStrip* strip, std::function<QString()> chooseFolder,
                            std::function<void(const QString&)> error, std::function<QStringList()> chooseFiles = {});

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::views::FeatureDataPtr)
Q_DECLARE_METATYPE(gwb::views::FeatureDashboard)
