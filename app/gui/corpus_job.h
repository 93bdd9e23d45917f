#pragma once
// Run > Corpus: the engine's corpus runner (gwb::engine::runCorpus, the one `gwb stats` uses)
// over text files on a worker thread, with progress (windows, tokens/s, ETA) and Cancel. The
// statistics are written atomically; a cancelled run writes the windows done (a valid partial file).

#include "runs/trace_job.h"
#include "gui/work_lane.h"

#include "gwb/engine/corpus_run.h"

#include <QObject>
#include <QStringList>

#include <atomic>
#include <memory>

namespace gwb::app {

struct CorpusRequest {
    QString grassmannPath;                   ///< model whose quantities are "model.*" ("" = none)
    QString baselinePath;                    ///< Transformer baseline, "baseline.*" ("" = none)
    QStringList files;                       ///< UTF-8 text files
    qint64 window = 256;                     ///< tokens per window
    qint64 stride = 256;                     ///< tokens between window starts
    qint64 maxWindows = 0;                   ///< 0 = all windows
    QString outPath;                         ///< statistics file (.npz)
    QString device = QStringLiteral("auto"); ///< "auto", "cpu", "cuda"
    int threads = 0;                         ///< CPU threads (0 = all cores)
};

/// Returns "" or what is wrong with the request (no model, no files, bad numbers, bad output path).
QString validateCorpusRequest(const CorpusRequest& request);

/// "windows 12/360 · 2,310 tokens/s · ETA 1m05s" for a progress report.
QString corpusProgressText(const gwb::engine::CorpusProgress& progress);

struct CorpusOutcome {
    enum class Status { Ok, Cancelled, Failed } status = Status::Failed;
    QString message;                                       ///< the error (Failed) or a summary of what was written
    QString path;                                          ///< the statistics file written (Ok, Cancelled)
    QStringList warnings;                                  ///< skipped files and why
    std::shared_ptr<const gwb::engine::CorpusStats> stats; ///< what was written
};

/// Loads the models (cached), runs the corpus and writes request.outPath. Cancelling (flag or
/// progress returning false) keeps the windows done and writes them (complete = false).
/// Never throws: failures come back as Status::Failed with the message.
CorpusOutcome runCorpusJob(const CorpusRequest& request, ModelCache& cache, const std::atomic<bool>& cancel,
                           const std::function<void(const gwb::engine::CorpusProgress&)>& progress = {});

/// One corpus run at a time in its own lane of the process pool (work_lane.h); results come back queued.
class CorpusRunner : public QObject {
    Q_OBJECT
public:
    explicit CorpusRunner(QObject* parent = nullptr);
    ~CorpusRunner() override; ///< cancels and waits for a running job
    /// Starts a run; returns false (nothing started) while another one runs.
    bool start(const CorpusRequest& request);
    void cancel();
    bool isRunning() const { return m_running; }

Q_SIGNALS:
    /// windowsDone / windowsTotal and a line such as corpusProgressText().
    void progress(qint64 windowsDone, qint64 windowsTotal, const QString& text);
    void finished(const gwb::app::CorpusOutcome& outcome);

private:
    ModelCache m_cache = ModelCache::process(); ///< the process's model store, shared with every runner
    std::shared_ptr<std::atomic<bool>> m_cancel;
    bool m_running = false;
    WorkLane m_lane; ///< last member: destroyed first, it waits for the running job
};

} // namespace gwb::app

Q_DECLARE_METATYPE(gwb::app::CorpusOutcome)
