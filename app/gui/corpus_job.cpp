#include "gui/corpus_job.h"

#include "runs/figure_request.h"

#include "gwb/engine/device.h"

#include <QFileInfo>
#include <QLocale>
#include <QMetaObject>
#include <QPointer>

#include <chrono>
#include <cmath>

namespace gwb::app {

namespace {
QString clockText(double s) {
    if (!std::isfinite(s) || s < 0) return QStringLiteral("?");
    const long t = std::lround(s);
    return QStringLiteral("%1m%2s").arg(t / 60).arg(t % 60, 2, 10, QLatin1Char('0'));
}
} // namespace

QString validateCorpusRequest(const CorpusRequest& r) {
    if (r.grassmannPath.isEmpty() && r.baselinePath.isEmpty())
        return QStringLiteral("No model: open a Grassmann model or a baseline first (File ▸ Open Model…).");
    if (r.files.isEmpty()) return QStringLiteral("Add at least one text file.");
    if (r.window < 2) return QStringLiteral("The window must hold at least 2 tokens.");
    if (r.stride < 1) return QStringLiteral("The stride must be at least 1 token.");
    if (r.maxWindows < 0) return QStringLiteral("The maximum number of windows must be 0 (all) or more.");
    if (!r.outPath.endsWith(QLatin1String(".npz"), Qt::CaseInsensitive))
        return QStringLiteral("The statistics file must end in .npz.");
    if (const QString e = checkWritableTarget(r.outPath); !e.isEmpty())
        return QStringLiteral("Cannot write '%1': %2").arg(r.outPath, e);
    return {};
}

QString corpusProgressText(const gwb::engine::CorpusProgress& p) {
    const double rate = p.seconds > 0 ? static_cast<double>(p.tokensDone) / p.seconds : 0;
    const double eta = p.windowsDone > 0 ? p.seconds / static_cast<double>(p.windowsDone) *
                                               static_cast<double>(p.windowsTotal - p.windowsDone)
                                         : NAN;
    return QStringLiteral("windows %1/%2 · %3 tokens/s · ETA %4")
        .arg(p.windowsDone)
        .arg(p.windowsTotal)
        .arg(QLocale::c().toString(std::round(rate), 'f', 0), clockText(eta));
}

CorpusOutcome runCorpusJob(const CorpusRequest& r, ModelCache& cache, const std::atomic<bool>& cancel,
                           const std::function<void(const gwb::engine::CorpusProgress&)>& progress) {
    CorpusOutcome out;
    try {
        if (const QString problem = validateCorpusRequest(r); !problem.isEmpty()) {
            out.message = problem;
            return out;
        }
        gwb::engine::setThreads(r.threads);
        // Without a Grassmann model the baseline is the one model ("model.*" quantities).
        const QString first = r.grassmannPath.isEmpty() ? r.baselinePath : r.grassmannPath;
        const QString second = r.grassmannPath.isEmpty() ? QString() : r.baselinePath;
        const gwb::engine::Model model = cache.get(first, r.device);
        gwb::engine::Model baseline;
        if (!second.isEmpty()) baseline = cache.get(second, r.device);
        gwb::engine::CorpusOptions o;
        for (const QString& f : r.files)
            o.files.push_back(f.toStdString());
        o.window = r.window;
        o.stride = r.stride;
        o.maxWindows = r.maxWindows;
        auto stats = std::make_shared<gwb::engine::CorpusStats>(gwb::engine::runCorpus(
            model, baseline.valid() ? &baseline : nullptr, o,
            [&](const gwb::engine::CorpusProgress& p) {
                if (progress) progress(p);
                return !cancel.load();
            },
            &cancel, [&out](const std::string& w) { out.warnings << QString::fromStdString(w); }));
        stats->write(r.outPath.toStdString());
        out.path = r.outPath;
        out.status = stats->complete ? CorpusOutcome::Status::Ok : CorpusOutcome::Status::Cancelled;
        out.message = QStringLiteral("%1 of %2 windows%3 written to %4")
                          .arg(stats->windows.size())
                          .arg(stats->windowsPlanned)
                          .arg(stats->complete ? QString() : QStringLiteral(" (cancelled: a partial file)"),
                               QFileInfo(r.outPath).fileName());
        out.stats = std::move(stats);
    } catch (const std::exception& e) {
        out = CorpusOutcome{};
        out.message = QString::fromUtf8(e.what());
    }
    return out;
}

CorpusRunner::CorpusRunner(QObject* parent) : QObject(parent) {
    qRegisterMetaType<gwb::app::CorpusOutcome>();
}

CorpusRunner::~CorpusRunner() {
    if (m_cancel) m_cancel->store(true);
    m_lane.waitForDone();
}

bool CorpusRunner::start(const CorpusRequest& request) {
    if (m_running) return false;
    m_running = true;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    QPointer<CorpusRunner> self(this);
    ModelCache cache = m_cache;
    auto cancelFlag = m_cancel;
    m_lane.run<CorpusRunner, CorpusOutcome>(
        this,
        [self, cache, request, cancelFlag]() mutable {
            using Clock = std::chrono::steady_clock;
            Clock::time_point last;
            return runCorpusJob(request, cache, *cancelFlag, [&](const gwb::engine::CorpusProgress& p) {
                // At most a few updates a second, and always the last window.
                const auto now = Clock::now();
                if (p.windowsDone < p.windowsTotal && now - last < std::chrono::milliseconds(200)) return;
                last = now;
                const QString text = corpusProgressText(p);
                const qint64 done = p.windowsDone, total = p.windowsTotal;
                QMetaObject::invokeMethod(
                    self.data(),
                    [self, done, total, text] {
                        if (self) Q_EMIT self->progress(done, total, text);
                    },
                    Qt::QueuedConnection);
            });
        },
        [](CorpusRunner* self, const CorpusOutcome& outcome) {
            self->m_running = false;
            Q_EMIT self->finished(outcome);
        });
    return true;
}

void CorpusRunner::cancel() {
    if (m_cancel) m_cancel->store(true);
}

} // namespace gwb::app
