#pragma once
// The window's one runner: every kind of run (trace, lens, saliency, patching, paths,
// features, corpus, model probes) goes to one process-wide pool of worker threads. Each asker
// holds a WorkLane: its jobs run one at a time in the order given (so its runs never share the
// engine with each other, and a newer request can drop the queued older ones), while different
// lanes run at once (a sweep does not hold up saliency). `run` hands a job's result back on the
// asker's thread through its event loop, and drops it when the asker is gone. Qt Core only.

#include <QMetaObject>
#include <QObject>
#include <QPointer>

#include <functional>
#include <memory>

class QThreadPool;

namespace gwb::app {

class WorkLane {
public:
    WorkLane();
    /// Drops the queued jobs and waits for the running one.
    ~WorkLane();
    WorkLane(const WorkLane&) = delete;
    WorkLane& operator=(const WorkLane&) = delete;

    /// Queues `job` after this lane's earlier jobs.
    void start(std::function<void()> job);
    /// Runs `work` on the pool (after this lane's earlier jobs) and calls done(result) on `owner`'s
    /// thread, queued, unless `owner` is gone by then.
    template <class Owner, class Result>
    void run(Owner* owner, std::function<Result()> work, std::function<void(Owner*, const Result&)> done) {
        QPointer<Owner> self(owner);
        start([self, work = std::move(work), done = std::move(done)] {
            Result result = work();
            if (!self) return;
            QMetaObject::invokeMethod(
                self.data(),
                [self, result = std::move(result), done] {
                    if (self) done(self.data(), result);
                },
                Qt::QueuedConnection);
        });
    }
    /// Drops the jobs not yet started (they are stale).
    void clear();
    /// Blocks until this lane has no job running or queued (tests, shutdown; not from a job).
    void waitForDone();
    /// Whether a job of this lane runs or waits.
    bool busy() const;

    /// The process's pool every lane runs on (at least 8 threads, kept alive: the engine keeps
    /// per-thread state).
    static QThreadPool& pool();

    struct State; ///< the lane's queue (shared with the pool thread draining it)

private:
    std::shared_ptr<State> m_state;
};

} // namespace gwb::app
